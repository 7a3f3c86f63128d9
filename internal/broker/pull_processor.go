package broker

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spoolmq/spool/internal/clients"
	"github.com/spoolmq/spool/internal/longpoll"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/processor"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// Pull sysFlag bits (RocketMQ PullSysFlag).
const (
	pullFlagCommitOffset = 1 << 0
	pullFlagSuspend      = 1 << 1
	pullFlagSubscription = 1 << 2
	pullFlagClassFilter  = 1 << 3
	pullFlagLitePull     = 1 << 4
)

// masterID is the broker id of a master; pulls are always told to come back
// to it (no slaves are built).
const masterID = 0

// pullHeader is a decoded PULL_MESSAGE / LITE_PULL_MESSAGE header.
type pullHeader struct {
	consumerGroup        string
	topic                string
	queueID              int32
	queueOffset          int64
	maxMsgNums           int32
	sysFlag              int32
	commitOffset         int64
	suspendTimeoutMillis int64
	subscription         string
	subVersion           int64
	expressionType       string
	maxMsgBytes          int32
}

func parsePullHeader(req *remoting.Command) (*pullHeader, error) {
	r := processor.NewHeader(req)
	h := &pullHeader{
		consumerGroup:        r.Str("consumerGroup", true),
		topic:                r.Str("topic", true),
		queueID:              r.I32("queueId", true, 0),
		queueOffset:          r.I64("queueOffset", true, 0),
		maxMsgNums:           r.I32("maxMsgNums", true, 0),
		sysFlag:              r.I32("sysFlag", true, 0),
		commitOffset:         r.I64("commitOffset", true, 0),
		suspendTimeoutMillis: r.I64("suspendTimeoutMillis", true, 0),
		subscription:         r.Str("subscription", false),
		subVersion:           r.I64("subVersion", true, 0),
		expressionType:       r.Str("expressionType", false),
		maxMsgBytes:          r.I32("maxMsgBytes", false, math.MaxInt32),
	}
	if r.Err() != nil {
		return nil, r.Err()
	}
	if h.expressionType == "" {
		h.expressionType = clients.ExprTag
	}
	return h, nil
}

// handlePull serves PULL_MESSAGE and LITE_PULL_MESSAGE. A pull that finds
// nothing and carries the suspend flag is held by the long-poll service (a
// pull over the cold-read budget by a timer) and answered later through
// its responder; no worker waits for it, and its re-run goes through the
// pull executor it came from.
func (b *Broker) handlePull(c *transport.Conn, req *remoting.Command) transport.Reply {
	h, err := parsePullHeader(req)
	if err != nil {
		return transport.Respond(badHeader(req, err))
	}
	resp, res, held := b.runPull(c, req, h, true)
	switch {
	case held != nil:
		return transport.Later(held)
	case res != nil:
		// The records go out as the store's buffers, not joined into a
		// new body; the transport releases them once written.
		return transport.RespondPieces(resp, res.Buffers, res.Release)
	}
	return transport.Respond(b.withPullExt(h, resp))
}

// pullExecutor is the executor that admitted a pull request: re-runs of a
// held pull go through it, within its bounds.
func (b *Broker) pullExecutor(req *remoting.Command) *transport.Executor {
	if req.Code == remoting.LitePullMessage {
		return b.litePullEx
	}
	return b.pullEx
}

// resumePull runs a held pull again on its executor's workers.
func (b *Broker) resumePull(r *transport.Responder, h *pullHeader) {
	b.pullExecutor(r.Request()).Resume(r, func(r *transport.Responder) { b.answerRerun(r, h) })
}

// withPullExt gives error answers the four offset fields too, so a client
// that reads them whatever the code stays where it was (nextBeginOffset =
// the requested offset).
func (b *Broker) withPullExt(h *pullHeader, resp *remoting.Command) *remoting.Command {
	if resp == nil || resp.Ext("nextBeginOffset") != "" {
		return resp
	}
	resp.SetExt("suggestWhichBrokerId", strconv.Itoa(masterID))
	resp.SetExt("nextBeginOffset", strconv.FormatInt(h.queueOffset, 10))
	resp.SetExt("minOffset", strconv.FormatInt(b.store.MinOffsetInQueue(h.topic, h.queueID), 10))
	resp.SetExt("maxOffset", strconv.FormatInt(b.store.MaxOffsetInQueue(h.topic, h.queueID), 10))
	return resp
}

// answerRerun runs a held pull again (it may then neither suspend nor
// commit the offset) and answers it: found records go out as the store's
// buffers, as on the first run, never joined into a new body.
func (b *Broker) answerRerun(r *transport.Responder, h *pullHeader) {
	resp, res, _ := b.runPull(r.Conn(), r.Request(), h, false)
	if res != nil {
		r.ReplyPieces(resp, res.Buffers, res.Release)
		return
	}
	b.replyLater(r, b.withPullExt(h, resp))
}

// runPull runs one pull, leaving a found body in the store's buffers: when
// res is not nil, resp (code SUCCESS, offset fields set) is to be answered
// with res.Buffers as its body, and res released after they were written.
// A first run may hold the pull instead: held is then its responder,
// completed by the long-poll service or the cold-read hold.
func (b *Broker) runPull(c *transport.Conn, req *remoting.Command, h *pullHeader, firstRun bool) (resp *remoting.Command, res *store.GetResult, held *transport.Responder) {
	cfg := b.config()
	if !metadata.IsReadable(cfg.BrokerPermission) {
		return response(req, remoting.NoPermission, fmt.Sprintf("the broker[%s] pulling message is forbidden", b.addr)), nil, nil
	}
	sg := b.groups.FindOrCreate(h.consumerGroup, cfg.AutoCreateSubscriptionGroup)
	if sg == nil {
		return response(req, remoting.SubscriptionGroupNotExist,
			fmt.Sprintf("subscription group [%s] does not exist, %s", h.consumerGroup, faqURL)), nil, nil
	}
	if !sg.ConsumeEnable {
		return response(req, remoting.NoPermission, "subscription group no permission, "+h.consumerGroup), nil, nil
	}
	tc := b.topics.Find(h.topic)
	if tc == nil {
		return response(req, remoting.TopicNotExist,
			fmt.Sprintf("topic[%s] not exist, apply first please! %s", h.topic, faqURL)), nil, nil
	}
	if !metadata.IsReadable(tc.Perm) {
		return response(req, remoting.NoPermission, fmt.Sprintf("the topic[%s] pulling message is forbidden", h.topic)), nil, nil
	}
	if h.queueID < 0 || int(h.queueID) >= tc.ReadQueueNums {
		return response(req, remoting.InvalidParameter, fmt.Sprintf(
			"queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			h.queueID, h.topic, tc.ReadQueueNums, remoteString(c))), nil, nil
	}

	var filter store.MessageFilter
	if h.sysFlag&pullFlagSubscription != 0 {
		if !strings.EqualFold(h.expressionType, clients.ExprTag) && !cfg.EnablePropertyFilter {
			return response(req, remoting.SystemError,
				"The broker does not support consumer to filter message by "+h.expressionType+" (enablePropertyFilter=false)"), nil, nil
		}
		f, err := clients.CompileFilter(h.expressionType, h.subscription)
		if err != nil {
			return response(req, remoting.SubscriptionParseFailed, fmt.Sprintf(
				"parse the consumer's subscription[%s] failed, group: %s: %v", h.subscription, h.consumerGroup, err)), nil, nil
		}
		filter = f
	} else {
		gv, found := b.consumers.FindSubscription(h.consumerGroup, h.topic)
		if !found {
			return response(req, remoting.SubscriptionNotExist, fmt.Sprintf(
				"the consumer's group info not exist, group: %s (the consumer has not sent a heartbeat to this broker yet) %s",
				h.consumerGroup, faqURL)), nil, nil
		}
		if !sg.ConsumeBroadcastEnable && gv.MessageModel == clients.ModelBroadcasting {
			return response(req, remoting.NoPermission, fmt.Sprintf(
				"the consumer group[%s] can not consume by broadcast way", h.consumerGroup)), nil, nil
		}
		if gv.Sub == nil {
			return response(req, remoting.SubscriptionNotExist, fmt.Sprintf(
				"the consumer's subscription not exist, group: %s topic: %s %s", h.consumerGroup, h.topic, faqURL)), nil, nil
		}
		if gv.Sub.Data.SubVersion < h.subVersion {
			return response(req, remoting.SubscriptionNotLatest, fmt.Sprintf(
				"the consumer's subscription not latest, group: %s topic: %s", h.consumerGroup, h.topic)), nil, nil
		}
		if !strings.EqualFold(gv.Sub.Data.ExpressionType, clients.ExprTag) && !cfg.EnablePropertyFilter {
			return response(req, remoting.SystemError,
				"The broker does not support consumer to filter message by "+gv.Sub.Data.ExpressionType+" (enablePropertyFilter=false)"), nil, nil
		}
		if gv.Sub.CompileErr != nil {
			return response(req, remoting.SubscriptionParseFailed, fmt.Sprintf(
				"parse the consumer's subscription[%s] failed, group: %s: %v", gv.Sub.Data.SubString, h.consumerGroup, gv.Sub.CompileErr)), nil, nil
		}
		filter = gv.Sub.Filter
	}

	maxNums := h.maxMsgNums
	if maxNums <= 0 {
		maxNums = 1
	}
	cold := b.flow.coldRead(h)
	if cold.wait > 0 {
		// Over the cold-read budget: hold the pull until the budget has
		// room (a timer, not a worker), or answer an empty retry.
		if firstRun && !b.stopping() {
			held = c.Defer(req)
			b.holdColdPull(held, h, cold.wait)
			b.commitPullOffset(h, firstRun)
			return nil, nil, held
		}
		return b.coldRetryResponse(req, h), nil, nil
	}
	res = b.store.GetMessage(h.consumerGroup, h.topic, h.queueID, h.queueOffset, maxNums, cold.maxBytes, filter)
	if res == nil {
		return response(req, remoting.SystemError, "store getMessage result is null"), nil, nil
	}
	b.flow.afterColdRead(cold, res)
	resp = response(req, remoting.SystemError, res.Status.String())
	resp.SetExt("suggestWhichBrokerId", strconv.Itoa(masterID))
	resp.SetExt("nextBeginOffset", strconv.FormatInt(res.NextBeginOffset, 10))
	resp.SetExt("minOffset", strconv.FormatInt(res.MinOffset, 10))
	resp.SetExt("maxOffset", strconv.FormatInt(res.MaxOffset, 10))
	next := res.NextBeginOffset
	switch res.Status {
	case store.Found:
		resp.Code = remoting.Success
		b.stats.countGet(h.topic, len(res.Buffers), res.BufferTotalSize)
	case store.MessageWasRemoving, store.NoMatchedMessage:
		resp.Code = remoting.PullRetryImmediately
	case store.NoMatchedLogicQueue, store.NoMessageInQueue:
		if h.queueOffset != 0 {
			resp.Code = remoting.PullOffsetMoved
		} else {
			resp.Code = remoting.PullNotFound
		}
	case store.OffsetFoundNull, store.OffsetOverflowOne:
		resp.Code = remoting.PullNotFound
	case store.OffsetOverflowBadly, store.OffsetTooSmall:
		resp.Code = remoting.PullOffsetMoved
	}
	if resp.Code != remoting.Success {
		res.Release()
		res = nil
	}
	if resp.Code == remoting.PullOffsetMoved && firstRun {
		b.recordOffsetMoved(h, next)
	}

	if resp.Code == remoting.PullNotFound && firstRun && h.sysFlag&pullFlagSuspend != 0 && !b.stopping() {
		timeout := h.suspendTimeoutMillis
		if !cfg.LongPollingEnable {
			timeout = cfg.ShortPollingTimeMills
		}
		if timeout > 0 {
			held = c.Defer(req)
			b.longPoll.Suspend(&longpoll.Pull{Responder: held, Topic: h.topic, QueueID: h.queueID, Offset: h.queueOffset, Header: h}, millis(timeout))
			b.commitPullOffset(h, firstRun)
			return nil, nil, held
		}
	}
	b.commitPullOffset(h, firstRun)
	return resp, res, nil
}

// commitPullOffset stores the pull's commitOffset as the group's offset on
// the request's first execution when the commit flag is set.
func (b *Broker) commitPullOffset(h *pullHeader, firstRun bool) {
	if firstRun && h.sysFlag&pullFlagCommitOffset != 0 {
		b.offsets.Commit(h.consumerGroup, h.topic, h.queueID, h.commitOffset)
	}
}
