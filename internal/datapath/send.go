package datapath

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/schedule"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/internal/timer"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// versionV3_4_9 is the request version from which the header's
// maxReconsumeTimes is honoured.
const versionV3_4_9 = 121

// sendTarget is the outcome of the checks shared by single and batch sends.
type sendTarget struct {
	h       *sendHeader
	tc      *metadata.TopicConfig
	queueID int32
	// hdr and msg are the header and the message of a send, kept in the
	// target so that one allocation serves all three.
	hdr sendHeader
	msg message.Inner
	// propsBuf holds the header's properties with room for what sendPlain
	// appends (see parseSendHeaderInto); nil when not read that way.
	propsBuf []byte
	// rs is the send's responder, answered from the store's completion
	// (Conn.DeferIn): it comes with the target's allocation.
	rs transport.Responder
	// answer is the room for the send's answer, for the same reason.
	answer remoting.ResponseRoom
	// props is the room for propsBuf of a single send's usual properties
	// (a client's few and the broker's), so they come with the target too.
	props [plainPropsScratch]byte

	// What the store's completion of a single send needs (see onPut).
	d        *Path
	req      *remoting.Command
	rsp      *transport.Responder
	uniq     string
	putStart int64
	owner    transport.Releaser
	// putDone is t.onPut, made once per target and kept when the target
	// is reused, so that a put's completion costs no allocation.
	putDone func(store.PutResult)
}

// targets holds send targets given back by Release. A target is taken for
// every send; only a plain single send's is given back (the answer it
// holds, written by the transport, is the last use of it): a target that
// leaves HandleSend any other way is left to the collector.
var targets = sync.Pool{New: func() any {
	t := new(sendTarget)
	t.putDone = t.onPut
	return t
}}

// Release gives t back for another send once the transport has written or
// dropped the answer that lives in it (ReplyPiecesOf with t as owner). By
// then the store has copied the message and nothing kept a string over
// t's properties: the index keeps hashes, and the topic and the keys of
// statistics come from the request's header, not from t.
func (t *sendTarget) Release() {
	done := t.putDone
	*t = sendTarget{putDone: done}
	targets.Put(t)
}

// plainPropsScratch is the room for a single send's stored properties in
// its target: a client's tags, keys and UNIQ_KEY with the broker's
// additions fit; longer ones get a buffer of their own.
const plainPropsScratch = 320

// HandleSend serves SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE.
// It answers validation failures at once; a message that reaches the store
// is answered from the store's completion, so no worker waits for a flush.
// It reads req.Body only until it returns (transport.Server.BorrowsBody):
// every path stores the message, which copies the body into its record,
// before returning, and nothing it leaves behind (the completion, the
// answer, statistics) refers to the body.
func (d *Path) HandleSend(c *transport.Conn, req *remoting.Command) transport.Reply {
	// The target is taken in a branch, never as a default replaced later:
	// a default &sendTarget{} would be allocated for every send.
	var t *sendTarget
	room := 0
	if req.Code == remoting.SendBatchMessage {
		t = new(sendTarget) // a batch's target is not given back
	} else {
		t, room = targets.Get().(*sendTarget), plainPropertiesRoom(d.config())
	}
	var err error
	var scratch []byte
	if room > 0 {
		scratch = t.props[:0]
	}
	if t.propsBuf, err = parseSendHeaderIn(req, d.nowMillis, &t.hdr, room, scratch); err != nil {
		return transport.Respond(badHeader(req, err))
	}
	t.h = &t.hdr
	if resp := d.checkTarget(c, req, t); resp != nil {
		return transport.Respond(resp)
	}
	if req.Code == remoting.SendBatchMessage {
		return d.sendBatch(c, req, t)
	}
	return d.sendSingle(c, req, t)
}

// checkSend runs the checks of RocketMQ's msgCheck: broker and topic
// permission, topic name, auto-creation, queue id.
func (d *Path) checkSend(c *transport.Conn, req *remoting.Command, h *sendHeader) (*sendTarget, *remoting.Command) {
	t := &sendTarget{h: h}
	if resp := d.checkTarget(c, req, t); resp != nil {
		return nil, resp
	}
	return t, nil
}

// checkTarget is checkSend on a target holding the header; it fills in the
// topic config and the queue id.
func (d *Path) checkTarget(c *transport.Conn, req *remoting.Command, t *sendTarget) *remoting.Command {
	h := t.h
	cfg := d.config()
	if d.stopping() {
		return remoting.NewResponse(req, remoting.ServiceNotAvailable, "the broker is shutting down")
	}
	if resp := d.slaveRefusal(req); resp != nil {
		return resp
	}
	if resp := d.replicaRefusal(req); resp != nil {
		return resp
	}
	if !metadata.IsWriteable(cfg.BrokerPermission) {
		return remoting.NewResponse(req, remoting.NoPermission, fmt.Sprintf("the broker[%s] sending message is forbidden", d.addr()))
	}
	if r := validateTopic(h.topic); r != "" {
		return remoting.NewResponse(req, remoting.InvalidParameter, r)
	}
	if isNotAllowedSendTopic(h.topic) {
		return remoting.NewResponse(req, remoting.NoPermission, fmt.Sprintf("Sending message to topic[%s] is forbidden.", h.topic))
	}
	tc := d.topics.Find(h.topic)
	if tc == nil {
		tc, _ = d.topics.CreateInSendMessage(h.topic, h.defaultTopic, int(h.defaultTopicQueueNums), 0, cfg.AutoCreateTopicEnable)
		if tc == nil && isRetryTopic(h.topic) {
			tc, _ = d.topics.CreateInSendBack(h.topic, 1, metadata.PermRead|metadata.PermWrite, 0)
		}
		if tc == nil {
			return remoting.NewResponse(req, remoting.TopicNotExist,
				fmt.Sprintf("topic[%s] not exist, apply first please! %s", h.topic, faqURL))
		}
	}
	d.holdRoute(req, h.topic) // answered once a new topic is registered
	if !metadata.IsWriteable(tc.Perm) {
		return remoting.NewResponse(req, remoting.NoPermission, fmt.Sprintf("the topic[%s] sending message is forbidden", h.topic))
	}
	if int(h.queueID) >= tc.QueueIDBound() {
		return remoting.NewResponse(req, remoting.InvalidParameter, fmt.Sprintf(
			"request queueId[%d] is illegal, topic:[%s] readQueueNums:[%d] writeQueueNums:[%d] Producer: %s",
			h.queueID, h.topic, tc.ReadQueueNums, tc.WriteQueueNums, remoteString(c)))
	}
	qid := h.queueID
	if qid < 0 {
		qid = rand.Int32N(int32(max(tc.WriteQueueNums, 1)))
	}
	t.tc, t.queueID = tc, qid
	return nil
}

func remoteString(c *transport.Conn) string {
	if a := c.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
}

// sendSingle stores one message (SEND_MESSAGE, SEND_MESSAGE_V2).
func (d *Path) sendSingle(c *transport.Conn, req *remoting.Command, t *sendTarget) transport.Reply {
	h := t.h
	if !isRetryTopic(h.topic) {
		if ps, ok := scanPlainProperties(h.properties); ok {
			return d.sendPlain(c, req, t, ps)
		}
	}
	cfg := d.config()
	props := message.DecodeProperties(h.properties)
	if props == nil {
		props = map[string]string{}
	}
	stripMarkers(props)
	m := d.innerFromSend(c, req, t)
	m.Properties = props
	if isRetryTopic(h.topic) {
		if resp := d.retryToDLQ(req, h, m); resp != nil {
			return transport.Respond(resp)
		}
	}
	if props[message.PropertyUniqClientMessageIDKeyIdx] == "" {
		props[message.PropertyUniqClientMessageIDKeyIdx] = message.NewUniqID()
	}
	setBrokerProperties(props, cfg)
	if t.tc.TopicFilterType == metadata.FilterMultiTag {
		m.SysFlag |= message.SysFlagMultiTags
	}
	m.TagsCode = message.TagsHashCode(props[message.PropertyTags])

	if strings.EqualFold(props[message.PropertyTransactionPrepared], "true") &&
		!(m.ReconsumeTimes > 0 && DelayLevelOf(props) > 0) {
		if cfg.RejectTransactionMessage {
			return transport.Respond(remoting.NewResponse(req, remoting.NoPermission,
				fmt.Sprintf("the broker[%s] sending transaction message is forbidden", d.addr())))
		}
		ToHalfMessage(m)
	} else if !d.ApplyDelay(m) {
		if code, remark, refused := d.timerRefusal(props); refused {
			return transport.Respond(remoting.NewResponse(req, code, remark))
		}
	}
	if resp := d.checkBodySize(req, m.SysFlag, m.Body); resp != nil {
		return transport.Respond(resp)
	}
	m.PropertiesString = message.EncodeProperties(props)
	return d.putSingle(c, req, t, props[message.PropertyUniqClientMessageIDKeyIdx], nil)
}

// putSingle stores t's message (t.msg), whose PropertiesString is final,
// and answers from the store's completion (t.putDone, so t comes from
// targets) through t's responder with the answer in t's room; owner, when
// not nil, is released once the answer is written or dropped.
func (d *Path) putSingle(c *transport.Conn, req *remoting.Command, t *sendTarget, uniq string, owner transport.Releaser) transport.Reply {
	m := &t.msg
	if len(m.PropertiesString) > message.MaxPropertiesLen {
		return transport.Respond(remoting.NewResponse(req, remoting.MessageIllegal, fmt.Sprintf(
			"the message properties are %d bytes, more than the limit of %d", len(m.PropertiesString), message.MaxPropertiesLen)))
	}
	rs := c.DeferIn(&t.rs, req)
	t.d, t.req, t.rsp, t.uniq, t.owner = d, req, rs, uniq, owner
	t.putStart = putStart()
	if err := d.PutMessage(m, t.putDone); err != nil {
		return transport.Respond(remoting.NewResponse(req, timer.ResponseCode(err), err.Error()))
	}
	return transport.Later(rs)
}

// onPut is the store's completion of a single send: it counts the put and
// answers. Answering is its last use of t, whose owner may reuse it.
func (t *sendTarget) onPut(r store.PutResult) {
	d, req, m := t.d, t.req, &t.msg
	d.countPut(m.Topic, r)
	d.countTopicPut(m.Topic, m.QueueID, r, t.putStart)
	resp := d.sendResponse(req, r, t.queueID, t.uniq, []int64{r.WroteOffset}, &t.answer)
	d.attachRecallHandle(req, m, resp)
	d.countRetryToDLQ(m, resp)
	d.replyLaterOf(t.rsp, resp, t.owner)
}

// plainProperties is what sendPlain needs of a property string that
// scanPlainProperties accepted.
type plainProperties struct {
	s    string
	tags string
	uniq string
	// wait and waitFound are the WAIT property (its last value), which
	// the replication wait and the store ask for (SetWaitStoreMsgOK).
	wait      string
	waitFound bool
}

// scanPlainProperties reads a client's property string in one pass and
// reports whether it is plain: every segment a well-formed pair ending in
// 0x02 (so nothing the map path would drop), and none of the properties
// whose rules rewrite the message (DELAY, TRAN_MSG, timer keys), that must
// be stripped (__DELAY_SRC, __TIMER_SRC) or that the broker sets
// (CLUSTER, MSG_REGION, TRACE_ON). A plain string is stored as sent with
// the broker's properties (and UNIQ_KEY when missing) appended.
func scanPlainProperties(s string) (plainProperties, bool) {
	ps := plainProperties{s: s}
	if s != "" && s[len(s)-1] != message.PropertySeparator {
		return ps, false
	}
	plain, kept := true, 0
	message.RangeProperties(s, func(k, v string) bool {
		kept += len(k) + len(v) + 2
		switch k {
		case message.PropertyTags:
			ps.tags = v
		case message.PropertyUniqClientMessageIDKeyIdx:
			ps.uniq = v
		case message.PropertyWaitStoreMsgOK:
			ps.wait, ps.waitFound = v, true
		case message.PropertyDelayTimeLevel, message.PropertyTransactionPrepared,
			message.PropertyCluster, message.PropertyMsgRegion, message.PropertyTraceSwitch,
			message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS,
			schedule.PropertyDelaySource, timer.PropertyTimerSource:
			plain = false
			return false
		}
		return true
	})
	return ps, plain && kept == len(s)
}

// writeProperty writes name 0x01 value 0x02.
func writeProperty(sb *strings.Builder, name, value string) {
	sb.WriteString(name)
	sb.WriteByte(message.NameValueSeparator)
	sb.WriteString(value)
	sb.WriteByte(message.PropertySeparator)
}

// innerFromSend builds the message a single send (or reply) stores, from
// its header, body and connection; the caller adds the properties.
func (d *Path) innerFromSend(c *transport.Conn, req *remoting.Command, t *sendTarget) *message.Inner {
	h := t.h
	m := &t.msg
	*m = message.Inner{
		Topic:          h.topic,
		QueueID:        t.queueID,
		Flag:           h.flag,
		Body:           req.Body,
		SysFlag:        h.sysFlag,
		BornTimestamp:  h.bornTimestamp,
		BornHost:       message.AddrOfConn(c.RemoteAddr()),
		StoreHost:      d.storeHost(),
		ReconsumeTimes: h.reconsumeTimes,
	}
	return m
}

// sendPlain stores a single message whose properties need no rewriting
// (see scanPlainProperties): no map is built.
func (d *Path) sendPlain(c *transport.Conn, req *remoting.Command, t *sendTarget, ps plainProperties) transport.Reply {
	cfg := d.config()
	m := d.innerFromSend(c, req, t)
	m.TagsCode = message.TagsHashCode(ps.tags)
	if t.tc.TopicFilterType == metadata.FilterMultiTag {
		m.SysFlag |= message.SysFlagMultiTags
	}
	if resp := d.checkBodySize(req, m.SysFlag, m.Body); resp != nil {
		return transport.Respond(resp)
	}
	addUniq := ps.uniq == ""
	if addUniq {
		ps.uniq = message.NewUniqID()
	}
	// The header's properties were read with room for what is appended
	// here (plainPropertiesRoom): the stored string is built in place.
	buf := t.propsBuf
	t.propsBuf = nil
	if len(buf) != len(ps.s) {
		buf = append(make([]byte, 0, len(ps.s)+plainPropertiesRoom(cfg)), ps.s...)
	}
	if addUniq {
		buf = message.AppendProperty(buf, message.PropertyUniqClientMessageIDKeyIdx, ps.uniq)
	}
	buf = appendBrokerProperties(buf, cfg)
	// buf is never written again; the bytes before len(ps.s) were never
	// written after ps.s was made from them.
	m.PropertiesString = unsafe.String(unsafe.SliceData(buf), len(buf))
	m.SetWaitStoreMsgOK(ps.wait, ps.waitFound) // what was appended has no WAIT
	return d.putSingle(c, req, t, ps.uniq, t)
}

// plainPropertiesRoom is what sendPlain appends to a client's properties at
// most: a UNIQ_KEY and the broker's properties.
func plainPropertiesRoom(cfg *Config) int {
	return len(message.PropertyUniqClientMessageIDKeyIdx) + 2 + uniqIDRoom + brokerPropertiesLen(cfg)
}

// uniqIDRoom is the length of message.NewUniqID's ids, with margin.
const uniqIDRoom = 40

// retryToDLQ applies the retry-topic rules to a send to %RETRY%<group>:
// the group must exist, and a message past its reconsume limit (or of a
// group holding orderly locks) goes to %DLQ%<group>.
func (d *Path) retryToDLQ(req *remoting.Command, h *sendHeader, m *message.Inner) *remoting.Command {
	cfg := d.config()
	group := strings.TrimPrefix(h.topic, retryGroupTopicPrefix)
	sg := d.groups.FindOrCreate(group, cfg.AutoCreateSubscriptionGroup)
	if sg == nil {
		return remoting.NewResponse(req, remoting.SubscriptionGroupNotExist,
			fmt.Sprintf("subscription group not exist, %s %s", group, faqURL))
	}
	maxTimes := int32(sg.RetryMaxTimes)
	if req.Version >= versionV3_4_9 && h.hasMaxReconsumeTimes {
		maxTimes = h.maxReconsumeTimes
	}
	if m.ReconsumeTimes <= maxTimes && d.locks.IsLockAllExpired(group) {
		return nil
	}
	dlq := dlqTopic(group)
	tc, _ := d.topics.CreateInSendBack(dlq, 1, metadata.PermRead|metadata.PermWrite, 0)
	if tc == nil {
		return remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("topic[%s] not exist", dlq))
	}
	d.holdRoute(req, dlq)
	m.Topic = dlq
	m.QueueID = 0
	m.Properties[message.PropertyDelayTimeLevel] = "-1"
	return nil
}

// ToHalfMessage rewrites a prepared transactional message into the half
// topic.
func ToHalfMessage(m *message.Inner) {
	p := m.Properties
	p[message.PropertyRealTopic] = m.Topic
	p[message.PropertyRealQueueID] = strconv.Itoa(int(m.QueueID))
	if uniq := p[message.PropertyUniqClientMessageIDKeyIdx]; uniq != "" {
		p[message.PropertyTransactionID] = uniq
	}
	m.SysFlag = message.ResetTransactionValue(m.SysFlag, message.TransactionNotType)
	m.Topic = topicTransHalf
	m.QueueID = 0
	m.TagsCode = message.TagsHashCode(p[message.PropertyTags])
}

// checkBodySize refuses bodies over maxMessageSize; a zlib-compressed body
// is measured inflated, so a compressible 5 MiB body is refused although its
// compressed form is small.
func (d *Path) checkBodySize(req *remoting.Command, sysFlag int32, body []byte) *remoting.Command {
	limit := d.config().MaxMessageSize
	if limit <= 0 {
		return nil
	}
	if len(body) > limit {
		return remoting.NewResponse(req, remoting.MessageIllegal, fmt.Sprintf(
			"message body size exceeded: %d bytes, maxMessageSize %d", len(body), limit))
	}
	if sysFlag&message.SysFlagCompressed == 0 {
		return nil
	}
	ct := sysFlag & message.SysFlagCompressionTypeMask
	if ct != 0 && ct != 0x300 {
		return nil // LZ4/ZSTD bodies are stored as sent; only zlib is measured
	}
	_, err := message.InflatedSize(body, limit)
	switch {
	case errors.Is(err, message.ErrInflatedTooLarge):
		return remoting.NewResponse(req, remoting.MessageIllegal, fmt.Sprintf(
			"message body size exceeded: the compressed body (%d bytes) inflates to more than maxMessageSize %d", len(body), limit))
	case err != nil:
		return remoting.NewResponse(req, remoting.MessageIllegal, fmt.Sprintf(
			"the message is flagged compressed (sysFlag bit 0) but its body is not a valid zlib stream: %v", err))
	}
	return nil
}

// sendBatch stores a SEND_BATCH_MESSAGE as consecutive records of one queue.
func (d *Path) sendBatch(c *transport.Conn, req *remoting.Command, t *sendTarget) transport.Reply {
	h := t.h
	if isRetryTopic(h.topic) {
		return transport.Respond(remoting.NewResponse(req, remoting.MessageIllegal, "batch request does not support retry group "+h.topic))
	}
	if message.TransactionValue(h.sysFlag) != message.TransactionNotType {
		return transport.Respond(remoting.NewResponse(req, remoting.MessageIllegal, "batch message does not support transaction"))
	}
	if delayLevelOfString(h.properties) > 0 {
		return transport.Respond(remoting.NewResponse(req, remoting.MessageIllegal, "batch message does not support delay level (DELAY)"))
	}
	if limit := d.config().MaxMessageSize; limit > 0 && len(req.Body) > limit {
		return transport.Respond(remoting.NewResponse(req, remoting.MessageIllegal, fmt.Sprintf(
			"message body size exceeded: batch body %d bytes, maxMessageSize %d", len(req.Body), limit)))
	}
	// The members' properties alias the request's body, which stays as it
	// is until this handler returns (the store has copied the records by
	// then); the broker's properties are added in one new string.
	members, err := message.DecodeBatchBodyView(req.Body, 0)
	if err != nil {
		return transport.Respond(remoting.NewResponse(req, remoting.MessageIllegal, err.Error()))
	}
	addBrokerPropertiesToBatch(members, d.config())
	for i := range members {
		if len(members[i].PropertiesString) > message.MaxPropertiesLen {
			return transport.Respond(remoting.NewResponse(req, remoting.MessageIllegal, fmt.Sprintf(
				"batch member %d: properties are %d bytes, more than the limit of %d", i, len(members[i].PropertiesString), message.MaxPropertiesLen)))
		}
	}
	sysFlag := h.sysFlag
	if t.tc.TopicFilterType == metadata.FilterMultiTag {
		sysFlag |= message.SysFlagMultiTags
	}
	batch := &message.Batch{
		Topic:          h.topic,
		QueueID:        t.queueID,
		SysFlag:        sysFlag,
		BornTimestamp:  h.bornTimestamp,
		BornHost:       message.AddrOfConn(c.RemoteAddr()),
		StoreHost:      d.storeHost(),
		ReconsumeTimes: h.reconsumeTimes,
		Members:        members,
	}
	qid := t.queueID
	rs := c.DeferIn(&t.rs, req)
	start := putStart()
	d.store.PutMessages(batch, d.replicated(true, func(r store.PutResult) {
		d.countPut(h.topic, r)
		d.countTopicPut(h.topic, qid, r, start)
		offs := r.Offsets
		if len(offs) == 0 && r.Status == store.PutOK {
			offs = []int64{r.WroteOffset}
		}
		d.replyLater(rs, d.sendResponse(req, r, qid, "", offs, &t.answer))
	}))
	return transport.Later(rs)
}

// countRetryToDLQ counts a message sent to a retry topic that retryToDLQ
// moved to the dead-letter queue, under the topic it was first sent to.
func (d *Path) countRetryToDLQ(m *message.Inner, resp *remoting.Command) {
	if resp.Code != remoting.Success || !strings.HasPrefix(m.Topic, systopic.DLQPrefix) {
		return
	}
	topic := m.Properties[message.PropertyRetryTopic]
	if topic == "" {
		topic = retryGroupTopicPrefix + strings.TrimPrefix(m.Topic, systopic.DLQPrefix)
	}
	d.stats.IncSendToDLQ(strings.TrimPrefix(m.Topic, systopic.DLQPrefix), topic)
}

// attachRecallHandle adds recallHandle to a successful single send's
// answer when the message went to the timing wheel (not for a retry
// topic), as RocketMQ's SendMessageProcessor does.
func (d *Path) attachRecallHandle(req *remoting.Command, m *message.Inner, resp *remoting.Command) {
	if m.Topic != timer.Topic || resp.Code != remoting.Success || (req.Code != remoting.SendMessage && req.Code != remoting.SendMessageV2) {
		return
	}
	real, uniq := m.Properties[message.PropertyRealTopic], m.Properties[message.PropertyUniqClientMessageIDKeyIdx]
	due, err := strconv.ParseInt(m.Properties[message.PropertyTimerOutMS], 10, 64)
	if err != nil || real == "" || uniq == "" || isRetryTopic(real) {
		return
	}
	resp.SetExt("recallHandle", timer.RecallHandle(real, d.config().BrokerName, due, uniq))
}

// sendResponse maps a put result to the send answer: code, remark and the
// msgId/queueId/queueOffset/transactionId/MSG_REGION/TRACE_ON ext fields.
func (d *Path) sendResponse(req *remoting.Command, r store.PutResult, queueID int32, uniq string, offsets []int64, room *remoting.ResponseRoom) *remoting.Command {
	code, remark := PutStatusCode(r)
	if r.Status == store.OSPageCacheBusy {
		d.flow.PCSynchronized.Add(1)
	}
	switch code {
	case remoting.Success, remoting.FlushDiskTimeout, remoting.FlushSlaveTimeout, remoting.SlaveNotAvailable:
	default:
		return remoting.NewResponse(req, code, remark)
	}
	cfg := d.config()
	// The fields' text goes into one buffer allocated with the answer
	// (the offsetMsgIds and numbers formatted in place). The keys, the
	// numbers and TRACE_ON take at most 96 bytes; msgId
	// holds an id of 32 characters and a comma per member of a batch. A
	// single send's fields fit the room that comes with the answer.
	size := 96 + 33*len(offsets) + len(uniq) + len(cfg.RegionID)
	resp, w := remoting.NewResponseExtIn(room, req, code, remark, size)
	w.Append("msgId", func(dst []byte) []byte {
		host := d.storeHost()
		for i, off := range offsets {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = message.AppendOffsetMsgID(dst, host, off)
		}
		return dst
	})
	w.Int("queueId", int64(queueID))
	w.Int("queueOffset", r.QueueOffset)
	if uniq != "" {
		w.Str("transactionId", uniq)
	}
	w.Str(message.PropertyMsgRegion, cfg.RegionID)
	w.Str(message.PropertyTraceSwitch, strconv.FormatBool(cfg.TraceOn))
	w.Close()
	return resp
}

// PutStatusCode maps a store status to RocketMQ's response code.
func PutStatusCode(r store.PutResult) (int32, string) {
	withRemark := func(def string) string {
		if r.Remark != "" {
			return r.Remark
		}
		return def
	}
	switch r.Status {
	case store.PutOK:
		return remoting.Success, ""
	case store.FlushDiskTimeout:
		return remoting.FlushDiskTimeout, withRemark("")
	case store.FlushSlaveTimeout:
		return remoting.FlushSlaveTimeout, withRemark("")
	case store.SlaveNotAvailable:
		return remoting.SlaveNotAvailable, withRemark("")
	case store.ServiceNotAvailable:
		return remoting.ServiceNotAvailable, withRemark(
			"service not available now: the broker's disk may be full, the store may be read-only after an I/O error, or shutting down")
	case store.CreateMappedFileFailed:
		return remoting.SystemError, withRemark("create mapped file failed, server is busy or broken.")
	case store.InSyncReplicasNotEnough:
		return remoting.SystemError, withRemark(InSyncReplicasNotEnoughRemark)
	case store.MessageIllegal, store.PropertiesSizeExceeded:
		return remoting.MessageIllegal, withRemark("the message is illegal, maybe msg body or properties length not matched")
	case store.OSPageCacheBusy:
		remark := "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
		if r.Remark != "" && !strings.HasPrefix(r.Remark, "[PC_SYNCHRONIZED]") {
			remark += ", " + r.Remark
		} else if r.Remark != "" {
			remark = r.Remark
		}
		return remoting.SystemBusy, remark
	default:
		return remoting.SystemError, withRemark("UNKNOWN_ERROR")
	}
}
