package broker

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/processor"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/timer"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// recallTag is the tag of the delete marker a recall stores (RocketMQ's
// RecallMessageProcessor).
const recallTag = "_RECALL_TAG_"

// recallHandle is a decoded recall handle, version v1: base64url of
// "v1 topic brokerName timestamp messageId" (RocketMQ's
// RecallMessageHandle.HandleV1). The timestamp is the timer's due time
// plus one millisecond; messageId is its UNIQ_KEY (timer.RecallHandle
// builds it).
type recallHandle struct {
	topic, brokerName, timestamp, messageID string
}

var errRecallHandle = errors.New("recall handle is invalid")

func decodeRecallHandle(s string) (recallHandle, error) {
	if s == "" {
		return recallHandle{}, errRecallHandle
	}
	raw, err := base64.URLEncoding.DecodeString(s)
	if err != nil {
		// Java's URL decoder also takes the handle without padding.
		if raw, err = base64.RawURLEncoding.DecodeString(s); err != nil {
			return recallHandle{}, errRecallHandle
		}
	}
	items := strings.Split(string(raw), " ")
	if len(items) < 5 || items[0] != "v1" {
		return recallHandle{}, errRecallHandle
	}
	return recallHandle{topic: items[1], brokerName: items[2], timestamp: items[3], messageID: items[4]}, nil
}

// handleRecallMessage answers RECALL_MESSAGE (370): it stores a delete
// marker (TIMER_DEL_UNIQKEY) due with the timer the handle names, so the
// timing wheel does not deliver it. Header: producerGroup (optional),
// topic, recallHandle; the answer's msgId is the recalled UNIQ_KEY.
func (b *Broker) handleRecallMessage(c *transport.Conn, req *remoting.Command) transport.Reply {
	cfg := b.config()
	answer := func(code int32, remark string) transport.Reply {
		resp := remoting.NewResponse(req, code, remark)
		resp.SetExt(message.PropertyMsgRegion, cfg.RegionID)
		return transport.Respond(resp)
	}
	h := processor.NewHeader(req)
	group := h.Str("producerGroup", false)
	topic := h.Str("topic", true)
	handle := h.Str("recallHandle", true)
	if err := h.Err(); err != nil {
		return transport.Respond(processor.BadHeader(req, err))
	}
	if !cfg.RecallMessageEnable {
		return answer(remoting.NoPermission, "recall failed, operation is forbidden")
	}
	if b.isSlave() {
		return answer(remoting.SlaveNotAvailable, "recall failed, broker service not available")
	}
	if cfg.BrokerPermission&metadata.PermWrite == 0 && !cfg.AllowRecallWhenBrokerNotWriteable {
		return answer(remoting.ServiceNotAvailable, "recall failed, broker service not available")
	}
	if b.topics.Find(topic) == nil {
		return answer(remoting.TopicNotExist, fmt.Sprintf("recall failed, the topic[%s] not exist", topic))
	}
	hd, err := decodeRecallHandle(handle)
	if err != nil {
		return answer(remoting.IllegalOperation, err.Error())
	}
	if hd.topic != topic {
		return answer(remoting.IllegalOperation, "recall failed, topic not match")
	}
	if hd.brokerName != cfg.BrokerName {
		return answer(remoting.IllegalOperation, "recall failed, broker service not available")
	}
	now := b.clock.Now().UnixMilli()
	ts, err := strconv.ParseInt(hd.timestamp, 10, 64)
	if err != nil {
		ts = -1
	}
	left := ts - now
	if left <= 0 || left >= cfg.Timer.MaxDelaySec*1000 {
		return answer(remoting.IllegalOperation, "recall failed, timestamp invalid")
	}
	due, _ := timer.RecallDue(hd.timestamp)
	wheel := b.wheel()
	if wheel == nil {
		return answer(remoting.SystemError, "accurate timer message is not enabled, timerWheelEnable is false")
	}
	m := &message.Inner{
		Topic: topic, QueueID: 0, Body: []byte("0"),
		TagsCode: message.TagsHashCode(recallTag),
		Properties: map[string]string{
			message.PropertyTags:                      recallTag,
			message.PropertyTimerDelUniqKey:           timer.DeleteKey(topic, hd.messageID),
			message.PropertyUniqClientMessageIDKeyIdx: hd.messageID,
			message.PropertyTimerDeliverMS:            strconv.FormatInt(due, 10),
			message.PropertyBornTimestamp:             strconv.FormatInt(now, 10),
		},
		BornTimestamp: now,
		BornHost:      message.AddrFromNet(c.RemoteAddr()),
		StoreHost:     b.storeHost,
	}
	if group != "" {
		m.Properties[message.PropertyProducerGroup] = group
	}
	rs := c.Defer(req)
	ok, err := wheel.Schedule(m, func(r store.PutResult) {
		b.stats.countPut(m.Topic, r)
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.SetExt(message.PropertyMsgRegion, cfg.RegionID)
		switch r.Status {
		case store.PutOK, store.FlushDiskTimeout, store.FlushSlaveTimeout, store.SlaveNotAvailable:
			resp.SetExt("msgId", hd.messageID)
		default:
			resp.Code, resp.Remark = remoting.SystemError, "recall failed, execute error"
		}
		rs.Send(transport.Respond(resp))
	})
	switch {
	case err != nil:
		rs.Send(answer(timer.ResponseCode(err), err.Error()))
	case !ok:
		rs.Send(answer(remoting.IllegalOperation, "recall failed, timestamp invalid"))
	}
	return transport.Later(rs)
}
