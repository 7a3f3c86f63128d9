package broker

import (
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// handlerFunc handles one request and returns its response.
type handlerFunc func(c *transport.Conn, req *remoting.Command) *remoting.Command

// replyFunc handles one request that may be answered later: it returns a
// response value, transport.Later with the request's responder (completed
// through the data path's replyLater), or transport.NoReply (END_TRANSACTION with state
// "unknown"). In-flight accounting, admission and draining are the
// transport's.
type replyFunc func(c *transport.Conn, req *remoting.Command) transport.Reply

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
			ec.Reject = b.flow.RejectSend
		}
		e := b.server.NewExecutor(ec)
		b.executors[name] = e
		return e
	}
	b.sendEx = ex("send", cfg.SendMessageThreadPoolNums, cfg.SendThreadPoolQueueCapacity, cfg.WaitTimeMillsInSendQueue)
	b.pullEx = ex("pull", cfg.PullMessageThreadPoolNums, cfg.PullThreadPoolQueueCapacity, cfg.WaitTimeMillsInPullQueue)
	b.litePullEx = ex("litePull", cfg.LitePullMessageThreadPoolNums, cfg.LitePullThreadPoolQueueCapacity, cfg.WaitTimeMillsInLitePullQueue)
	b.data.UseExecutors(b.sendEx, b.pullEx, b.litePullEx)
	query := ex("query", cfg.QueryMessageThreadPoolNums, cfg.QueryThreadPoolQueueCapacity, 0)
	heartbeat := ex("heartbeat", cfg.HeartbeatThreadPoolNums, cfg.HeartbeatThreadPoolQueueCapacity, cfg.WaitTimeMillsInHeartbeatQueue)
	client := ex("clientManage", cfg.ClientManageThreadPoolNums, cfg.ClientManagerThreadPoolQueueCapacity, 0)
	consumer := ex("consumerManage", cfg.ConsumerManageThreadPoolNums, cfg.ConsumerManagerThreadPoolQueueCapacity, 0)
	admin := ex("admin", cfg.AdminBrokerThreadPoolNums, cfg.AdminBrokerThreadPoolQueueCapacity, 0)
	endTx := ex("endTransaction", cfg.EndTransactionThreadPoolNums, cfg.EndTransactionPoolQueueCapacity, cfg.WaitTimeMillsInTransactionQueue)

	regLater := func(code int32, h replyFunc, e *transport.Executor) { b.server.RegisterReply(code, b.wrap(h), e) }
	reg := func(code int32, h handlerFunc, e *transport.Executor) { regLater(code, valueFunc(h), e) }

	// These handlers read their headers through Command.LookupExt (the
	// send header, the pull header, the processor's header reader), so
	// their requests arrive without an ext map.
	b.server.ReadsExtInline(remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage,
		remoting.PullMessage, remoting.LitePullMessage, remoting.HeartBeat,
		remoting.QueryConsumerOffset, remoting.UpdateConsumerOffset)
	// A send's handler never waits (the store answers it later), so an
	// event loop runs it inline; so does a pull's (a push consumer's
	// PULL_MESSAGE and a lite pull consumer's LITE_PULL_MESSAGE), which
	// on a loop reads only what is in memory and hands itself to its
	// executor's workers when it would wait for the disk (Conn.OnLoop).
	// Everything else read by a loop goes to its executor's workers.
	b.server.RunsOnLoop(remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage,
		remoting.PullMessage, remoting.LitePullMessage)
	// HandleSend reads the body only until it returns (the store copies
	// the message into its record before PutMessage returns), so a loop
	// lends it the body in its read buffer instead of copying it out.
	b.server.BorrowsBody(remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage)
	regLater(remoting.SendMessage, b.data.HandleSend, b.sendEx)
	regLater(remoting.SendMessageV2, b.data.HandleSend, b.sendEx)
	regLater(remoting.SendBatchMessage, b.data.HandleSend, b.sendEx)
	regLater(remoting.ConsumerSendMsgBack, b.data.HandleConsumerSendMsgBack, b.sendEx)
	regLater(remoting.SendReplyMessage, b.data.HandleSendReply, b.sendEx)
	regLater(remoting.SendReplyMessageV2, b.data.HandleSendReply, b.sendEx)

	regLater(remoting.PullMessage, b.data.HandlePull, b.pullEx)
	regLater(remoting.LitePullMessage, b.data.HandlePull, b.litePullEx)

	reg(remoting.QueryMessage, b.proc.HandleQueryMessage, query)
	reg(remoting.ViewMessageByID, b.proc.HandleViewMessageByID, query)

	reg(remoting.HeartBeat, b.proc.HandleHeartbeat, heartbeat)
	reg(remoting.UnregisterClient, b.proc.HandleUnregisterClient, client)
	reg(remoting.CheckClientConfig, b.proc.HandleCheckClientConfig, client)

	reg(remoting.GetConsumerListByGroup, b.proc.HandleGetConsumerList, consumer)
	reg(remoting.QueryConsumerOffset, b.proc.HandleQueryConsumerOffset, consumer)
	reg(remoting.UpdateConsumerOffset, b.proc.HandleUpdateConsumerOffset, consumer)

	regLater(remoting.EndTransaction, b.data.HandleEndTransaction, endTx)
	regLater(remoting.RecallMessage, b.handleRecallMessage, b.sendEx)

	if b.failover != nil {
		reg(remoting.NotifyBrokerRoleChanged, b.failover.HandleNotify, admin)
	}

	reg(remoting.AuthCreateUser, b.authsrv.HandleCreateUser, admin)
	reg(remoting.AuthUpdateUser, b.authsrv.HandleUpdateUser, admin)
	reg(remoting.AuthDeleteUser, b.authsrv.HandleDeleteUser, admin)
	reg(remoting.AuthGetUser, b.authsrv.HandleGetUser, admin)
	reg(remoting.AuthListUser, b.authsrv.HandleListUser, admin)
	reg(remoting.AuthCreateACL, b.authsrv.HandleCreateACL, admin)
	reg(remoting.AuthUpdateACL, b.authsrv.HandleUpdateACL, admin)
	reg(remoting.AuthDeleteACL, b.authsrv.HandleDeleteACL, admin)
	reg(remoting.AuthGetACL, b.authsrv.HandleGetACL, admin)
	reg(remoting.AuthListACL, b.authsrv.HandleListACL, admin)
	reg(remoting.GetMaxOffset, b.proc.HandleGetMaxOffset, admin)
	reg(remoting.GetMinOffset, b.proc.HandleGetMinOffset, admin)
	reg(remoting.SearchOffsetByTimestamp, b.proc.HandleSearchOffsetByTimestamp, admin)
	reg(remoting.GetEarliestMsgStoretime, b.proc.HandleGetEarliestMsgStoretime, admin)
	reg(remoting.LockBatchMQ, b.proc.HandleLockBatchMQ, admin)
	reg(remoting.UnlockBatchMQ, b.proc.HandleUnlockBatchMQ, admin)
	reg(remoting.UpdateAndCreateTopic, b.proc.HandleUpdateAndCreateTopic, admin)
	reg(remoting.DeleteTopicInBroker, b.proc.HandleDeleteTopic, admin)
	reg(remoting.GetAllTopicConfig, b.proc.HandleGetAllTopicConfig, admin)
	reg(remoting.UpdateAndCreateSubscriptionGroup, b.proc.HandleUpdateAndCreateSubscriptionGroup, admin)
	reg(remoting.DeleteSubscriptionGroup, b.proc.HandleDeleteSubscriptionGroup, admin)
	reg(remoting.GetAllSubscriptionGroupConfig, b.proc.HandleGetAllSubscriptionGroupConfig, admin)
	reg(remoting.GetBrokerRuntimeInfo, b.handleGetBrokerRuntimeInfo, admin)
	reg(remoting.GetBrokerEpochCache, b.admin.HandleGetBrokerEpochCache, admin)
	reg(remoting.ExchangeBrokerHAInfo, b.handleExchangeBrokerHAInfo, admin)
	reg(remoting.GetTimerCheckPoint, b.handleGetTimerCheckPoint, admin)
	reg(remoting.GetBrokerConfig, b.handleGetBrokerConfig, admin)
	reg(remoting.UpdateBrokerConfig, b.handleUpdateBrokerConfig, admin)
	reg(remoting.EvictPageCache, b.proc.HandleEvictPageCache, admin)
	reg(remoting.ViewBrokerStatsData, b.statsProc.HandleViewBrokerStatsData, admin)

	reg(remoting.GetTopicStatsInfo, b.admin.HandleGetTopicStatsInfo, admin)
	reg(remoting.GetConsumeStats, b.admin.HandleGetConsumeStats, admin)
	reg(remoting.GetBrokerConsumeStats, b.admin.HandleGetBrokerConsumeStats, admin)
	reg(remoting.QueryConsumeTimeSpan, b.admin.HandleQueryConsumeTimeSpan, admin)
	reg(remoting.QueryConsumeQueue, b.admin.HandleQueryConsumeQueue, admin)
	reg(remoting.GetConsumerConnectionList, b.admin.HandleGetConsumerConnectionList, admin)
	reg(remoting.GetProducerConnectionList, b.admin.HandleGetProducerConnectionList, admin)
	reg(remoting.GetAllProducerInfo, b.admin.HandleGetAllProducerInfo, admin)
	reg(remoting.GetTopicConfig, b.admin.HandleGetTopicConfig, admin)
	reg(remoting.QueryTopicConsumeByWho, b.admin.HandleQueryTopicConsumeByWho, admin)
	reg(remoting.QueryTopicsByConsumer, b.admin.HandleQueryTopicsByConsumer, admin)
	reg(remoting.GetSystemTopicListFromBroker, b.admin.HandleGetSystemTopicListFromBroker, admin)
	reg(remoting.GetAllConsumerOffset, b.admin.HandleGetAllConsumerOffset, admin)
	reg(remoting.GetAllDelayOffset, b.admin.HandleGetAllDelayOffset, admin)
	reg(remoting.UpdateAndCreateTopicList, b.admin.HandleUpdateAndCreateTopicList, admin)
	reg(remoting.UpdateAndCreateSubscriptionGroupList, b.admin.HandleUpdateAndCreateSubscriptionGroupList, admin)
	reg(remoting.CleanExpiredConsumeQueue, b.admin.HandleCleanExpiredConsumeQueue, admin)
	reg(remoting.CleanUnusedTopic, b.admin.HandleCleanUnusedTopic, admin)
	reg(remoting.InvokeBrokerToResetOffset, b.admin.HandleInvokeBrokerToResetOffset, admin)
	reg(remoting.InvokeBrokerToGetConsumerStatus, b.admin.HandleInvokeBrokerToGetConsumerStatus, admin)
	reg(remoting.GetConsumerRunningInfo, b.admin.HandleGetConsumerRunningInfo, admin)
	reg(remoting.ConsumeMessageDirectly, b.admin.HandleConsumeMessageDirectly, admin)
	reg(remoting.CloneGroupOffset, b.admin.HandleCloneGroupOffset, admin)

	b.server.OnConnClose(b.onConnClose)
}

// valueFunc adapts a handler whose answer is always a value.
func valueFunc(h handlerFunc) replyFunc {
	return func(c *transport.Conn, req *remoting.Command) transport.Reply { return transport.Respond(h(c, req)) }
}

// wrap runs h once the broker's address is known; a value answer that
// must wait for the registration of a topic it created is sent when that
// registration is done (see holdRoute).
func (b *Broker) wrap(h replyFunc) transport.ReplyHandler {
	return func(c *transport.Conn, req *remoting.Command) transport.Reply {
		// A request can arrive between Listen and the moment the bound
		// address is known; the handlers need that address.
		<-b.ready
		rep := h(c, req)
		switch {
		case rep.IsNone():
			b.registrar.changes.takeHold(req)
		case rep.Response() != nil:
			if wait := b.routeWait(req); wait != nil {
				r := c.Defer(req)
				go func() {
					<-wait
					r.Send(rep)
				}()
				return transport.Later(r)
			}
		}
		return rep
	}
}

func (b *Broker) onConnClose(c *transport.Conn) {
	b.consumers.RemoveConn(c, b.config().NotifyConsumerIdsChangedEnable)
	b.producers.RemoveConn(c)
}
