package datapath

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/processor"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// HandleConsumerSendMsgBack re-stores a message a consumer failed to
// consume: into %RETRY%<group> with a delay level (3 + reconsumeTimes when
// the client leaves it to the broker), or into %DLQ%<group> once the
// reconsume limit is reached or when the client asks (delayLevel < 0).
func (d *Path) HandleConsumerSendMsgBack(c *transport.Conn, req *remoting.Command) transport.Reply {
	r := processor.NewHeader(req)
	offset := r.I64("offset", true, 0)
	group := r.Str("group", true)
	delayLevel := r.I32("delayLevel", true, 0)
	hasMax := r.Has("maxReconsumeTimes")
	maxHeader := r.I32("maxReconsumeTimes", false, 0)
	if r.Err() != nil {
		return transport.Respond(badHeader(req, r.Err()))
	}
	cfg := d.config()
	if d.stopping() {
		return transport.Respond(remoting.NewResponse(req, remoting.ServiceNotAvailable, "the broker is shutting down"))
	}
	sg := d.groups.FindOrCreate(group, cfg.AutoCreateSubscriptionGroup)
	if sg == nil {
		return transport.Respond(remoting.NewResponse(req, remoting.SubscriptionGroupNotExist,
			fmt.Sprintf("subscription group not exist, %s %s", group, faqURL)))
	}
	if !metadata.IsWriteable(cfg.BrokerPermission) {
		return transport.Respond(remoting.NewResponse(req, remoting.NoPermission, fmt.Sprintf("the broker[%s] sending message is forbidden", d.addr())))
	}
	if sg.RetryQueueNums <= 0 {
		return transport.Respond(remoting.NewResponse(req, remoting.Success, ""))
	}
	newTopic := retryTopic(group)
	tc, _ := d.topics.CreateInSendBack(newTopic, sg.RetryQueueNums, metadata.PermRead|metadata.PermWrite, 0)
	if tc == nil {
		return transport.Respond(remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("topic[%s] not exist", newTopic)))
	}
	d.holdRoute(req, newTopic) // answered once a new retry topic is registered
	if !metadata.IsWriteable(tc.Perm) {
		return transport.Respond(remoting.NewResponse(req, remoting.NoPermission, fmt.Sprintf("the topic[%s] sending message is forbidden", newTopic)))
	}
	rec, err := d.store.LookMessageByOffset(offset)
	if err != nil {
		return transport.Respond(remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("look message by offset failed, %d: %v", offset, err)))
	}
	ext, err := message.DecodeRecord(rec)
	if err != nil {
		return transport.Respond(remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("decode message at offset %d: %v", offset, err)))
	}
	m := ext.ToInner()
	props := m.Properties
	if props[message.PropertyRetryTopic] == "" {
		props[message.PropertyRetryTopic] = ext.Topic
	}
	backTopic := props[message.PropertyRetryTopic] // SNDBCK_PUT_NUMS's topic, as RocketMQ's
	props[message.PropertyWaitStoreMsgOK] = "false"
	maxTimes := int32(sg.RetryMaxTimes)
	if req.Version >= versionV3_4_9 && hasMax {
		maxTimes = maxHeader
	}
	queueID := rand.Int32N(int32(max(tc.WriteQueueNums, 1)))
	if ext.ReconsumeTimes >= maxTimes || delayLevel < 0 {
		newTopic = dlqTopic(group)
		queueID = 0
		dlq, _ := d.topics.CreateInSendBack(newTopic, 1, metadata.PermRead|metadata.PermWrite, 0)
		if dlq == nil {
			return transport.Respond(remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("topic[%s] not exist", newTopic)))
		}
		d.holdRoute(req, newTopic)
		delete(props, message.PropertyDelayTimeLevel)
	} else {
		if delayLevel == 0 {
			delayLevel = 3 + ext.ReconsumeTimes
		}
		props[message.PropertyDelayTimeLevel] = strconv.Itoa(int(delayLevel))
	}
	// As RocketMQ: an ORIGIN_MESSAGE_ID already there is kept, else the
	// record's own id (its offsetMsgId); the header's originMsgId only
	// names the message for tracing.
	if props[message.PropertyOriginMessageID] == "" {
		props[message.PropertyOriginMessageID] = ext.MsgID()
	}
	m.Topic = newTopic
	m.QueueID = queueID
	m.StoreHost = d.storeHost()
	m.ReconsumeTimes = ext.ReconsumeTimes + 1
	m.PreparedTransactionOffset = 0
	m.TagsCode = message.TagsHashCode(props[message.PropertyTags])
	d.ApplyDelay(m)
	m.PropertiesString = message.EncodeProperties(props)
	if len(m.PropertiesString) > message.MaxPropertiesLen {
		return transport.Respond(remoting.NewResponse(req, remoting.MessageIllegal, fmt.Sprintf(
			"the retried message's properties are %d bytes, more than the limit of %d", len(m.PropertiesString), message.MaxPropertiesLen)))
	}
	rs := c.Defer(req)
	d.store.PutMessage(m, func(r store.PutResult) {
		d.countPut(m.Topic, r)
		if r.Status == store.PutOK {
			d.stats.IncSendBack(group, backTopic)
			if newTopic == dlqTopic(group) {
				d.stats.IncSendToDLQ(group, backTopic)
			}
			d.replyLater(rs, remoting.NewResponse(req, remoting.Success, ""))
			return
		}
		_, remark := PutStatusCode(r)
		if remark == "" {
			remark = fmt.Sprintf("put status %d", r.Status)
		}
		d.replyLater(rs, remoting.NewResponse(req, remoting.SystemError, remark))
	})
	return transport.Later(rs)
}
