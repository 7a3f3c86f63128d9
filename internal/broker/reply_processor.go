package broker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// pushReplyTimeout bounds PUSH_REPLY_MESSAGE_TO_CLIENT.
const pushReplyTimeout = 3 * time.Second

// handleSendReply serves SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2
// (325): the reply is pushed to the requester named by REPLY_TO_CLIENT
// (a producer connection known from heartbeats) with
// PUSH_REPLY_MESSAGE_TO_CLIENT, then stored when storeReplyMessageEnable.
// The push is asynchronous; no worker waits for the requester.
func (b *Broker) handleSendReply(c *transport.Conn, req *remoting.Command) transport.Reply {
	h, err := parseSendHeader(req, b.nowMillis)
	if err != nil {
		return transport.Respond(badHeader(req, err))
	}
	t, resp := b.checkSend(c, req, h)
	if resp != nil {
		return transport.Respond(resp)
	}
	cfg := b.config()
	props := message.DecodeProperties(h.properties)
	if props == nil {
		props = map[string]string{}
	}
	setBrokerProperties(props, cfg)
	m := b.innerFromSend(c, req, t)
	m.Properties = props
	m.TagsCode = message.TagsHashCode(props[message.PropertyTags])
	if resp := b.checkBodySize(req, m.SysFlag, m.Body); resp != nil {
		return transport.Respond(resp)
	}
	m.PropertiesString = message.EncodeProperties(props)
	if len(m.PropertiesString) > message.MaxPropertiesLen {
		return transport.Respond(response(req, remoting.MessageIllegal, fmt.Sprintf(
			"the message properties are %d bytes, more than the limit of %d", len(m.PropertiesString), message.MaxPropertiesLen)))
	}
	target := props[message.PropertyReplyToClient]
	conn := b.producers.ConnByClientID(target)
	if conn == nil {
		return transport.Respond(response(req, remoting.SystemError, fmt.Sprintf(
			"push reply message to %s failed: no connection of that client (REPLY_TO_CLIENT) is known", target)))
	}
	push := b.pushReplyRequest(h, m)
	rs := c.Defer(req)
	ctx, cancel := context.WithTimeout(context.Background(), pushReplyTimeout)
	err = conn.InvokeAsync(ctx, push, func(pr *remoting.Command, err error) {
		cancel()
		switch {
		case err != nil:
			b.replyLater(rs, response(req, remoting.SystemError, fmt.Sprintf("push reply message to %s failed: %v", target, err)))
			return
		case pr.Code != remoting.Success:
			b.replyLater(rs, response(req, remoting.SystemError, fmt.Sprintf(
				"push reply message to %s failed: code %d: %s", target, pr.Code, pr.Remark)))
			return
		}
		if !b.config().StoreReplyMessageEnable {
			ok := response(req, remoting.Success, "")
			ok.SetExt("msgId", "0")
			ok.SetExt("queueId", strconv.Itoa(int(t.queueID)))
			ok.SetExt("queueOffset", "0")
			b.replyLater(rs, ok)
			return
		}
		b.store.PutMessage(m, func(r store.PutResult) {
			b.stats.countPut(m.Topic, r)
			b.replyLater(rs, b.sendResponse(req, r, t.queueID, "", []int64{r.WroteOffset}))
		})
	})
	if err != nil {
		cancel()
		return transport.Respond(response(req, remoting.SystemError, fmt.Sprintf("push reply message to %s failed: %v", target, err)))
	}
	return transport.Later(rs)
}

// pushReplyRequest builds PUSH_REPLY_MESSAGE_TO_CLIENT for a reply.
func (b *Broker) pushReplyRequest(h *sendHeader, m *message.Inner) *remoting.Command {
	now := b.nowMillis()
	props := make(map[string]string, len(m.Properties)+1)
	for k, v := range m.Properties {
		props[k] = v
	}
	props[message.PropertyPushReplyTime] = strconv.FormatInt(now, 10)
	return remoting.NewRequest(remoting.PushReplyMessageToClient, map[string]string{
		"producerGroup":         h.producerGroup,
		"topic":                 m.Topic,
		"defaultTopic":          h.defaultTopic,
		"defaultTopicQueueNums": strconv.Itoa(int(h.defaultTopicQueueNums)),
		"queueId":               strconv.Itoa(int(m.QueueID)),
		"sysFlag":               strconv.Itoa(int(m.SysFlag)),
		"bornTimestamp":         strconv.FormatInt(m.BornTimestamp, 10),
		"flag":                  strconv.Itoa(int(m.Flag)),
		"properties":            message.EncodeProperties(props),
		"reconsumeTimes":        strconv.Itoa(int(m.ReconsumeTimes)),
		"unitMode":              strconv.FormatBool(h.unitMode),
		"bornHost":              m.BornHost.String(),
		"storeHost":             b.addr,
		"storeTimestamp":        strconv.FormatInt(now, 10),
	}, m.Body)
}
