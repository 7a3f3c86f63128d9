package datapath

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

// HandleSendReply serves SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2
// (325): the reply is pushed to the requester named by REPLY_TO_CLIENT
// (a producer connection known from heartbeats) with
// PUSH_REPLY_MESSAGE_TO_CLIENT, then stored when storeReplyMessageEnable.
// The push is asynchronous; no worker waits for the requester.
func (d *Path) HandleSendReply(c *transport.Conn, req *remoting.Command) transport.Reply {
	h, err := parseSendHeader(req, d.nowMillis)
	if err != nil {
		return transport.Respond(badHeader(req, err))
	}
	t, resp := d.checkSend(c, req, h)
	if resp != nil {
		return transport.Respond(resp)
	}
	cfg := d.config()
	props := message.DecodeProperties(h.properties)
	if props == nil {
		props = map[string]string{}
	}
	setBrokerProperties(props, cfg)
	m := d.innerFromSend(c, req, t)
	m.Properties = props
	m.TagsCode = message.TagsHashCode(props[message.PropertyTags])
	if resp := d.checkBodySize(req, m.SysFlag, m.Body); resp != nil {
		return transport.Respond(resp)
	}
	m.PropertiesString = message.EncodeProperties(props)
	if len(m.PropertiesString) > message.MaxPropertiesLen {
		return transport.Respond(remoting.NewResponse(req, remoting.MessageIllegal, fmt.Sprintf(
			"the message properties are %d bytes, more than the limit of %d", len(m.PropertiesString), message.MaxPropertiesLen)))
	}
	target := props[message.PropertyReplyToClient]
	conn := d.producers.ConnByClientID(target)
	if conn == nil {
		return transport.Respond(remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf(
			"push reply message to %s failed: no connection of that client (REPLY_TO_CLIENT) is known", target)))
	}
	push := d.pushReplyRequest(h, m)
	rs := c.Defer(req)
	ctx, cancel := context.WithTimeout(context.Background(), pushReplyTimeout)
	err = conn.InvokeAsync(ctx, push, func(pr *remoting.Command, err error) {
		cancel()
		switch {
		case err != nil:
			d.replyLater(rs, remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("push reply message to %s failed: %v", target, err)))
			return
		case pr.Code != remoting.Success:
			d.replyLater(rs, remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf(
				"push reply message to %s failed: code %d: %s", target, pr.Code, pr.Remark)))
			return
		}
		if !d.config().StoreReplyMessageEnable {
			ok := remoting.NewResponse(req, remoting.Success, "")
			ok.SetExt("msgId", "0")
			ok.SetExt("queueId", strconv.Itoa(int(t.queueID)))
			ok.SetExt("queueOffset", "0")
			d.replyLater(rs, ok)
			return
		}
		d.store.PutMessage(m, func(r store.PutResult) {
			d.countPut(m.Topic, r)
			d.replyLater(rs, d.sendResponse(req, r, t.queueID, "", []int64{r.WroteOffset}, nil))
		})
	})
	if err != nil {
		cancel()
		return transport.Respond(remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("push reply message to %s failed: %v", target, err)))
	}
	return transport.Later(rs)
}

// pushReplyRequest builds PUSH_REPLY_MESSAGE_TO_CLIENT for a reply.
func (d *Path) pushReplyRequest(h *sendHeader, m *message.Inner) *remoting.Command {
	now := d.nowMillis()
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
		"storeHost":             d.addr(),
		"storeTimestamp":        strconv.FormatInt(now, 10),
	}, m.Body)
}
