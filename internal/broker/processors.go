package broker

import (
	"context"
	"errors"
	"time"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// handlerFunc handles one request. It returns the response, nil when it
// answers later through replyLater, or noResponse when it never answers.
type handlerFunc func(c *transport.Conn, req *remoting.Command) *remoting.Command

// noResponse is returned by handlers that deliberately send no answer
// (END_TRANSACTION with state "unknown").
var noResponse = &remoting.Command{}

// registerProcessors maps request codes to handlers and executors, sized
// from the thread-pool keys of the configuration.
func (b *Broker) registerProcessors() {
	cfg := b.config()
	ex := func(name string, workers, capacity int, waitMs int64) *transport.Executor {
		ec := transport.ExecutorConfig{
			Name: name, Workers: max(workers, 1), QueueCapacity: max(capacity, 1), MaxQueueWait: millis(waitMs),
		}
		if !cfg.BrokerFastFailureEnable {
			ec.MaxQueueWait = 0
		}
		if name == "send" {
			ec.Reject = b.flow.rejectSend
		}
		e := b.server.NewExecutor(ec)
		b.executors[name] = e
		return e
	}
	b.sendEx = ex("send", cfg.SendMessageThreadPoolNums, cfg.SendThreadPoolQueueCapacity, cfg.WaitTimeMillsInSendQueue)
	b.pullEx = ex("pull", cfg.PullMessageThreadPoolNums, cfg.PullThreadPoolQueueCapacity, cfg.WaitTimeMillsInPullQueue)
	litePull := ex("litePull", cfg.LitePullMessageThreadPoolNums, cfg.LitePullThreadPoolQueueCapacity, cfg.WaitTimeMillsInLitePullQueue)
	query := ex("query", cfg.QueryMessageThreadPoolNums, cfg.QueryThreadPoolQueueCapacity, 0)
	heartbeat := ex("heartbeat", cfg.HeartbeatThreadPoolNums, cfg.HeartbeatThreadPoolQueueCapacity, cfg.WaitTimeMillsInHeartbeatQueue)
	client := ex("clientManage", cfg.ClientManageThreadPoolNums, cfg.ClientManagerThreadPoolQueueCapacity, 0)
	consumer := ex("consumerManage", cfg.ConsumerManageThreadPoolNums, cfg.ConsumerManagerThreadPoolQueueCapacity, 0)
	admin := ex("admin", cfg.AdminBrokerThreadPoolNums, cfg.AdminBrokerThreadPoolQueueCapacity, 0)
	endTx := ex("endTransaction", cfg.EndTransactionThreadPoolNums, cfg.EndTransactionPoolQueueCapacity, cfg.WaitTimeMillsInTransactionQueue)

	reg := func(code int32, h handlerFunc, e *transport.Executor) { b.server.Register(code, b.wrap(h), e) }

	reg(remoting.SendMessage, b.handleSend, b.sendEx)
	reg(remoting.SendMessageV2, b.handleSend, b.sendEx)
	reg(remoting.SendBatchMessage, b.handleSend, b.sendEx)
	reg(remoting.ConsumerSendMsgBack, b.handleConsumerSendMsgBack, b.sendEx)
	reg(remoting.SendReplyMessage, b.handleSendReply, b.sendEx)
	reg(remoting.SendReplyMessageV2, b.handleSendReply, b.sendEx)

	reg(remoting.PullMessage, b.handlePull, b.pullEx)
	reg(remoting.LitePullMessage, b.handlePull, litePull)

	reg(remoting.QueryMessage, b.handleQueryMessage, query)
	reg(remoting.ViewMessageByID, b.handleViewMessageByID, query)

	reg(remoting.HeartBeat, b.handleHeartbeat, heartbeat)
	reg(remoting.UnregisterClient, b.handleUnregisterClient, client)
	reg(remoting.CheckClientConfig, b.handleCheckClientConfig, client)

	reg(remoting.GetConsumerListByGroup, b.handleGetConsumerList, consumer)
	reg(remoting.QueryConsumerOffset, b.handleQueryConsumerOffset, consumer)
	reg(remoting.UpdateConsumerOffset, b.handleUpdateConsumerOffset, consumer)

	reg(remoting.EndTransaction, b.handleEndTransaction, endTx)

	reg(remoting.GetMaxOffset, b.handleGetMaxOffset, admin)
	reg(remoting.GetMinOffset, b.handleGetMinOffset, admin)
	reg(remoting.SearchOffsetByTimestamp, b.handleSearchOffsetByTimestamp, admin)
	reg(remoting.GetEarliestMsgStoretime, b.handleGetEarliestMsgStoretime, admin)
	reg(remoting.LockBatchMQ, b.handleLockBatchMQ, admin)
	reg(remoting.UnlockBatchMQ, b.handleUnlockBatchMQ, admin)
	reg(remoting.UpdateAndCreateTopic, b.handleUpdateAndCreateTopic, admin)
	reg(remoting.DeleteTopicInBroker, b.handleDeleteTopic, admin)
	reg(remoting.GetAllTopicConfig, b.handleGetAllTopicConfig, admin)
	reg(remoting.UpdateAndCreateSubscriptionGroup, b.handleUpdateAndCreateSubscriptionGroup, admin)
	reg(remoting.DeleteSubscriptionGroup, b.handleDeleteSubscriptionGroup, admin)
	reg(remoting.GetAllSubscriptionGroupConfig, b.handleGetAllSubscriptionGroupConfig, admin)
	reg(remoting.GetBrokerRuntimeInfo, b.handleGetBrokerRuntimeInfo, admin)
	reg(remoting.GetBrokerConfig, b.handleGetBrokerConfig, admin)
	reg(remoting.UpdateBrokerConfig, b.handleUpdateBrokerConfig, admin)
	reg(remoting.EvictPageCache, b.handleEvictPageCache, admin)

	b.server.OnConnClose(b.onConnClose)
}

// wrap counts the request as in flight until it is answered.
func (b *Broker) wrap(h handlerFunc) transport.Handler {
	return func(c *transport.Conn, req *remoting.Command) *remoting.Command {
		// A request can arrive between Listen and the moment the bound
		// address is known; the handlers need that address.
		<-b.ready
		if _, ok := b.conns.Load(c.ID()); !ok {
			b.conns.Store(c.ID(), c)
		}
		b.inflight.add()
		resp := h(c, req)
		switch resp {
		case nil: // answered later by replyLater
			return nil
		case noResponse:
			b.registrar.changes.takeHold(req)
			c.Forget(req)
			b.inflight.done()
			return nil
		}
		if b.answerWhenRouted(c, req, resp) {
			return nil // answered once the topic it created is registered
		}
		b.inflight.done()
		return resp
	}
}

// replyLater answers a request whose handler returned nil.
func (b *Broker) replyLater(c *transport.Conn, req, resp *remoting.Command) {
	if b.answerWhenRouted(c, req, resp) {
		return
	}
	c.Reply(req, resp)
	b.inflight.done()
}

func (b *Broker) onConnClose(c *transport.Conn) {
	b.conns.Delete(c.ID())
	b.consumers.RemoveConn(c, b.config().NotifyConsumerIdsChangedEnable)
	b.producers.RemoveConn(c)
}

// response builds an answer to req.
func response(req *remoting.Command, code int32, remark string) *remoting.Command {
	return remoting.NewResponse(req, code, remark)
}

// badHeader answers a request whose ext fields do not parse.
func badHeader(req *remoting.Command, err error) *remoting.Command {
	return response(req, remoting.InvalidParameter, err.Error())
}

func isBadHeader(err error) bool { return errors.Is(err, ErrBadHeader) }

// nowMillis is the broker clock in milliseconds.
func nowMillis() int64 { return time.Now().UnixMilli() }

// drainConns waits, at most until ctx ends or 2 s pass, until every
// connection has written its queued answers, so closing the listeners
// does not drop answers already given.
func (b *Broker) drainConns(ctx context.Context) {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		pending := false
		b.conns.Range(func(_, v any) bool {
			if v.(*transport.Conn).InFlight() > 0 {
				pending = true
				return false
			}
			return true
		})
		if !pending {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
