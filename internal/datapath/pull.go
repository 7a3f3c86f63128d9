package datapath

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

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
	PullFlagCommitOffset = 1 << 0
	PullFlagSuspend      = 1 << 1
	PullFlagSubscription = 1 << 2
	PullFlagClassFilter  = 1 << 3
	PullFlagLitePull     = 1 << 4
)

// masterID is the broker id of a master (RocketMQ's MixAll.MASTER_ID).
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
	h := &pullHeader{}
	if err := parsePullHeaderInto(req, h); err != nil {
		return nil, err
	}
	return h, nil
}

// parsePullHeaderInto is parsePullHeader into h: a pull that is not held
// keeps its header on the handler's stack.
func parsePullHeaderInto(req *remoting.Command, h *pullHeader) error {
	r := processor.NewHeader(req)
	*h = pullHeader{
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
		return r.Err()
	}
	if h.expressionType == "" {
		h.expressionType = clients.ExprTag
	}
	return nil
}

// heldHeader is the copy of a pull's header that a held pull keeps.
func heldHeader(h *pullHeader) *pullHeader {
	c := *h
	return &c
}

// HandlePull serves PULL_MESSAGE and LITE_PULL_MESSAGE. A pull that finds
// nothing and carries the suspend flag is held by the long-poll service (a
// pull over the cold-read budget by a timer) and answered later through
// its responder; no worker waits for it, and its re-run goes through the
// pull executor it came from.
func (d *Path) HandlePull(c *transport.Conn, req *remoting.Command) transport.Reply {
	var hv pullHeader
	h := &hv
	if err := parsePullHeaderInto(req, h); err != nil {
		return transport.Respond(badHeader(req, err))
	}
	if resp := d.slavePullRefusal(req, h); resp != nil {
		return transport.Respond(resp)
	}
	// On an event loop the pull reads only what is in memory; one that
	// would wait for the disk is handed to the pull workers.
	resp, found, held := d.runPullOn(c, req, h, pullRun{firstRun: true, onLoop: c.OnLoop(req)})
	switch {
	case held != nil:
		return transport.Later(held)
	case found != nil:
		// The records go out as the store's buffers, not joined into a
		// new body; the transport releases them once written.
		return transport.RespondPiecesOf(resp, found.res.Buffers, found)
	}
	return transport.Respond(d.withPullExt(h, resp))
}

// pullExecutor is the executor that admitted a pull request: re-runs of a
// held pull go through it, within its bounds.
func (d *Path) pullExecutor(req *remoting.Command) *transport.Executor {
	if req.Code == remoting.LitePullMessage {
		return d.litePullEx
	}
	return d.pullEx
}

// resumePull runs a held pull again on its executor's workers.
func (d *Path) resumePull(r *transport.Responder, h *pullHeader) {
	d.pullExecutor(r.Request()).Resume(r, func(r *transport.Responder) { d.answerRerun(r, h) })
}

// withPullExt gives error answers the four offset fields too, so a client
// that reads them whatever the code stays where it was (nextBeginOffset =
// the requested offset).
func (d *Path) withPullExt(h *pullHeader, resp *remoting.Command) *remoting.Command {
	if resp == nil || resp.Ext("nextBeginOffset") != "" {
		return resp
	}
	resp.SetExt("suggestWhichBrokerId", strconv.FormatInt(d.suggestion(h, d.groups.Find(h.consumerGroup), nil), 10))
	resp.SetExt("nextBeginOffset", strconv.FormatInt(h.queueOffset, 10))
	resp.SetExt("minOffset", strconv.FormatInt(d.store.MinOffsetInQueue(h.topic, h.queueID), 10))
	resp.SetExt("maxOffset", strconv.FormatInt(d.store.MaxOffsetInQueue(h.topic, h.queueID), 10))
	return resp
}

// pullAnswer is a pull's answer with its four offset fields, written
// through an ExtWriter into room (nil: an allocation of its own): no map.
func pullAnswer(room *remoting.ResponseRoom, req *remoting.Command, code int32, remark string, suggest, next, minOff, maxOff int64) *remoting.Command {
	resp, w := remoting.NewResponseExtIn(room, req, code, remark, 0)
	w.Int("suggestWhichBrokerId", suggest)
	w.Int("nextBeginOffset", next)
	w.Int("minOffset", minOff)
	w.Int("maxOffset", maxOff)
	w.Close()
	return resp
}

// suggestion is a pull answer's suggestWhichBrokerId (suggestBroker): sg
// is the pull's subscription group (nil: RocketMQ's defaults), res the
// store's answer (nil when the pull did not read the store).
func (d *Path) suggestion(h *pullHeader, sg *metadata.SubscriptionGroupConfig, res *store.GetResult) int64 {
	cfg := d.config()
	in := suggestInput{
		slaveReadEnable: cfg.SlaveReadEnable,
		slave:           cfg.BrokerRole == roleSlave,
		selfID:          cfg.BrokerID,
		whenSlow:        1,
	}
	if in.slave && d.masterUp != nil {
		in.masterUp = d.masterUp()
	}
	if sg != nil {
		in.groupBrokerID, in.whenSlow = sg.BrokerID, sg.WhichBrokerWhenConsumeSlowly
	}
	if res != nil {
		in.read, in.slow = true, res.SuggestPullingFromSlave
	}
	return suggestBroker(in)
}

// answerRerun runs a held pull again (it may then neither suspend nor
// commit the offset) and answers it: found records go out as the store's
// buffers, as on the first run, never joined into a new body.
func (d *Path) answerRerun(r *transport.Responder, h *pullHeader) {
	resp, found, _ := d.runPull(r.Conn(), r.Request(), h, false)
	if found != nil {
		r.ReplyPiecesOf(resp, found.res.Buffers, found)
		return
	}
	d.replyLater(r, d.withPullExt(h, resp))
}

// pullRun is how a run of runPullOn may proceed.
type pullRun struct {
	firstRun bool // the request's first execution: it may be held, and commits its offset
	// onLoop: the run is on an event loop and must not wait; a read that
	// would is handed, with the whole pull, to the pull executor's workers.
	onLoop bool
	// own is the responder of a pull handed off from a loop, which a hold
	// takes instead of deferring the request again.
	own *transport.Responder
}

// handOff gives a pull that would wait on an event loop to its
// executor's workers, where it runs again from the start as a first run
// (nothing it did on the loop is kept but the subscription group, created
// either way). The loop's handler returns Later with the responder.
func (d *Path) handOff(c *transport.Conn, req *remoting.Command, h *pullHeader) *transport.Responder {
	d.flow.PullsHandedOff.Add(1)
	r := c.Defer(req)
	hh := heldHeader(h)
	d.pullExecutor(req).Resume(r, func(r *transport.Responder) {
		resp, found, held := d.runPullOn(r.Conn(), r.Request(), hh, pullRun{firstRun: true, own: r})
		switch {
		case held != nil: // held by long polling or the cold-read hold, which answer r
		case found != nil:
			r.ReplyPiecesOf(resp, found.res.Buffers, found)
		default:
			d.replyLater(r, d.withPullExt(hh, resp))
		}
	})
	return r
}

// pullReply is a found pull's answer and the store's result whose buffers
// are its body. It comes from pullReplies and goes back there, with the
// result (GetResult.Recycle), when the transport has written or dropped
// the answer: a pull that finds records allocates neither.
type pullReply struct {
	answer remoting.ResponseRoom
	res    *store.GetResult
}

var pullReplies = sync.Pool{New: func() any { return new(pullReply) }}

// Release is the transport's call once the answer is written or dropped;
// it is the last use of p and of its result.
func (p *pullReply) Release() {
	p.res.Recycle()
	*p = pullReply{}
	pullReplies.Put(p)
}

// runPull runs one pull, leaving a found body in the store's buffers: when
// found is not nil, resp (code SUCCESS, offset fields set, made in found)
// is to be answered with found.res.Buffers as its body and found released
// after they were written. A first run may hold the pull instead: held is
// then its responder, completed by the long-poll service or the cold-read
// hold.
func (d *Path) runPull(c *transport.Conn, req *remoting.Command, h *pullHeader, firstRun bool) (resp *remoting.Command, found *pullReply, held *transport.Responder) {
	return d.runPullOn(c, req, h, pullRun{firstRun: firstRun})
}

// runPullOn is runPull run as run says: on an event loop a pull that
// would wait for the disk (or that the cold-read budget governs) is handed
// off, and held is then the responder the workers answer.
func (d *Path) runPullOn(c *transport.Conn, req *remoting.Command, h *pullHeader, run pullRun) (resp *remoting.Command, found *pullReply, held *transport.Responder) {
	firstRun := run.firstRun
	cfg := d.config()
	if !metadata.IsReadable(cfg.BrokerPermission) {
		return remoting.NewResponse(req, remoting.NoPermission, fmt.Sprintf("the broker[%s] pulling message is forbidden", d.addr())), nil, nil
	}
	sg := d.groups.FindOrCreate(h.consumerGroup, cfg.AutoCreateSubscriptionGroup)
	if sg == nil {
		return remoting.NewResponse(req, remoting.SubscriptionGroupNotExist,
			fmt.Sprintf("subscription group [%s] does not exist, %s", h.consumerGroup, faqURL)), nil, nil
	}
	if !sg.ConsumeEnable {
		return remoting.NewResponse(req, remoting.NoPermission, "subscription group no permission, "+h.consumerGroup), nil, nil
	}
	tc := d.topics.Find(h.topic)
	if tc == nil {
		return remoting.NewResponse(req, remoting.TopicNotExist,
			fmt.Sprintf("topic[%s] not exist, apply first please! %s", h.topic, faqURL)), nil, nil
	}
	if !metadata.IsReadable(tc.Perm) {
		return remoting.NewResponse(req, remoting.NoPermission, fmt.Sprintf("the topic[%s] pulling message is forbidden", h.topic)), nil, nil
	}
	if h.queueID < 0 || int(h.queueID) >= tc.ReadQueueNums {
		return remoting.NewResponse(req, remoting.InvalidParameter, fmt.Sprintf(
			"queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			h.queueID, h.topic, tc.ReadQueueNums, remoteString(c))), nil, nil
	}

	var filter store.MessageFilter
	if h.sysFlag&PullFlagSubscription != 0 {
		if !strings.EqualFold(h.expressionType, clients.ExprTag) && !cfg.EnablePropertyFilter {
			return remoting.NewResponse(req, remoting.SystemError,
				"The broker does not support consumer to filter message by "+h.expressionType+" (enablePropertyFilter=false)"), nil, nil
		}
		f, err := clients.CompileFilter(h.expressionType, h.subscription)
		if err != nil {
			return remoting.NewResponse(req, remoting.SubscriptionParseFailed, fmt.Sprintf(
				"parse the consumer's subscription[%s] failed, group: %s: %v", h.subscription, h.consumerGroup, err)), nil, nil
		}
		filter = f
	} else {
		gv, found := d.consumers.FindSubscription(h.consumerGroup, h.topic)
		if !found {
			return remoting.NewResponse(req, remoting.SubscriptionNotExist, fmt.Sprintf(
				"the consumer's group info not exist, group: %s (the consumer has not sent a heartbeat to this broker yet) %s",
				h.consumerGroup, faqURL)), nil, nil
		}
		if !sg.ConsumeBroadcastEnable && gv.MessageModel == clients.ModelBroadcasting {
			return remoting.NewResponse(req, remoting.NoPermission, fmt.Sprintf(
				"the consumer group[%s] can not consume by broadcast way", h.consumerGroup)), nil, nil
		}
		if gv.Sub == nil {
			return remoting.NewResponse(req, remoting.SubscriptionNotExist, fmt.Sprintf(
				"the consumer's subscription not exist, group: %s topic: %s %s", h.consumerGroup, h.topic, faqURL)), nil, nil
		}
		if gv.Sub.Data.SubVersion < h.subVersion {
			return remoting.NewResponse(req, remoting.SubscriptionNotLatest, fmt.Sprintf(
				"the consumer's subscription not latest, group: %s topic: %s", h.consumerGroup, h.topic)), nil, nil
		}
		if !strings.EqualFold(gv.Sub.Data.ExpressionType, clients.ExprTag) && !cfg.EnablePropertyFilter {
			return remoting.NewResponse(req, remoting.SystemError,
				"The broker does not support consumer to filter message by "+gv.Sub.Data.ExpressionType+" (enablePropertyFilter=false)"), nil, nil
		}
		if gv.Sub.CompileErr != nil {
			return remoting.NewResponse(req, remoting.SubscriptionParseFailed, fmt.Sprintf(
				"parse the consumer's subscription[%s] failed, group: %s: %v", gv.Sub.Data.SubString, h.consumerGroup, gv.Sub.CompileErr)), nil, nil
		}
		filter = gv.Sub.Filter
	}

	maxNums := h.maxMsgNums
	if maxNums <= 0 {
		maxNums = 1
	}
	cold := d.flow.coldRead(h, run.onLoop)
	if cold.handOff {
		return nil, nil, d.handOff(c, req, h)
	}
	if cold.wait > 0 {
		// Over the cold-read budget: hold the pull until the budget has
		// room (a timer, not a worker), or answer an empty retry.
		if firstRun && !d.stopping() {
			if held = run.own; held == nil {
				held = c.Defer(req)
			}
			d.holdColdPull(held, heldHeader(h), cold.wait)
			d.commitPullOffset(h, firstRun)
			return nil, nil, held
		}
		return d.coldRetryResponse(req, h), nil, nil
	}
	var res *store.GetResult
	if run.onLoop {
		var ok bool
		if res, ok = d.store.GetMessageNoWait(h.consumerGroup, h.topic, h.queueID, h.queueOffset, maxNums, cold.maxBytes, filter); !ok {
			return nil, nil, d.handOff(c, req, h)
		}
	} else {
		res = d.store.GetMessage(h.consumerGroup, h.topic, h.queueID, h.queueOffset, maxNums, cold.maxBytes, filter)
	}
	if res == nil {
		return remoting.NewResponse(req, remoting.SystemError, "store getMessage result is null"), nil, nil
	}
	d.flow.afterColdRead(cold, res)
	next := res.NextBeginOffset
	var code int32
	switch res.Status {
	case store.Found:
		code = remoting.Success
	case store.MessageWasRemoving, store.NoMatchedMessage:
		code = remoting.PullRetryImmediately
	case store.NoMatchedLogicQueue, store.NoMessageInQueue:
		if h.queueOffset != 0 {
			code = remoting.PullOffsetMoved
		} else {
			code = remoting.PullNotFound
		}
	case store.OffsetFoundNull, store.OffsetOverflowOne:
		code = remoting.PullNotFound
	case store.OffsetOverflowBadly, store.OffsetTooSmall:
		code = remoting.PullOffsetMoved
	default:
		code = remoting.SystemError
	}
	var room *remoting.ResponseRoom // where a found pull's answer is built
	if code == remoting.Success {
		d.countGet(h.topic, len(res.Buffers), res.BufferTotalSize)
		d.countGroupGet(h.consumerGroup, h.topic, h.queueID, res)
		found = pullReplies.Get().(*pullReply)
		found.res, room = res, &found.answer
	}
	if code == remoting.PullOffsetMoved && firstRun {
		d.recordOffsetMoved(h, next)
	}
	if code == remoting.PullNotFound && firstRun && h.sysFlag&PullFlagSuspend != 0 && !d.stopping() {
		timeout := h.suspendTimeoutMillis
		if !cfg.LongPollingEnable {
			timeout = cfg.ShortPollingTimeMills
		}
		if timeout > 0 {
			res.Recycle()
			if held = run.own; held == nil {
				held = c.Defer(req)
			}
			d.longPoll.Suspend(&longpoll.Pull{Responder: held, Topic: h.topic, QueueID: h.queueID, Offset: h.queueOffset, Header: heldHeader(h)}, millis(timeout))
			d.commitPullOffset(h, firstRun)
			return nil, nil, held
		}
	}
	resp = pullAnswer(room, req, code, res.Status.String(), d.suggestion(h, sg, res), next, res.MinOffset, res.MaxOffset)
	if found == nil {
		res.Recycle() // the answer carries no record: nothing else holds res
	}
	d.commitPullOffset(h, firstRun)
	return resp, found, nil
}

// commitPullOffset stores the pull's commitOffset as the group's offset on
// the request's first execution when the commit flag is set.
func (d *Path) commitPullOffset(h *pullHeader, firstRun bool) {
	if firstRun && h.sysFlag&PullFlagCommitOffset != 0 {
		d.offsets.Commit(h.consumerGroup, h.topic, h.queueID, h.commitOffset)
	}
}

// ResumeHeld runs a pull held by long polling again on its executor's
// workers (longpoll.Deps.Resume).
func (d *Path) ResumeHeld(p *longpoll.Pull) { d.resumePull(p.Responder, p.Header.(*pullHeader)) }
