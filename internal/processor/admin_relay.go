package processor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// defaultRelayTimeout is how long a request relayed to a client may take
// (RocketMQ's Broker2Client.callClient).
const defaultRelayTimeout = 10 * time.Second

// statusTimeout is how long GET_CONSUMER_STATUS_FROM_CLIENT may take
// (RocketMQ's Broker2Client.getConsumeStatus).
const statusTimeout = 5 * time.Second

// HandleInvokeBrokerToResetOffset answers INVOKE_BROKER_TO_RESET_OFFSET
// as RocketMQ 5.3's broker does by default (useServerSideResetOffset):
// the group's offsets of every read queue of the topic (or of queueId
// only, to offset when the header has one) are moved to the offset of
// the timestamp (negative: the queue's end; a time before the first
// message lands on the queue's first offset) and committed here, isForce
// notwithstanding. So that clients running now move at once (Spool's
// pull path keeps no pending resets), RESET_CONSUMER_CLIENT_OFFSET with
// the table is pushed oneway to every online client of the group, as
// RocketMQ's client-side reset does. The answer carries the table
// (ResetOffsetBody).
func (a *Admin) HandleInvokeBrokerToResetOffset(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	topic := r.Str("topic", true)
	group := r.Str("group", true)
	ts := r.I64("timestamp", true, 0)
	queueID := r.I32("queueId", false, -1)
	offset := r.I64("offset", false, -1)
	if !r.Has("isForce") && r.Err() == nil {
		return badHeader(req, fmt.Errorf("%w: missing ext field isForce", ErrBadHeader))
	}
	force := r.Bool("isForce", false)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	tc := a.d.Topics.Find(topic)
	if tc == nil {
		return response(req, remoting.TopicNotExist, "Topic "+topic+" does not exist")
	}
	if a.d.Groups.Find(group) == nil {
		return response(req, remoting.SubscriptionGroupNotExist, "Group "+group+" does not exist")
	}
	byTime := func(q int32) int64 {
		if ts < 0 {
			return a.d.Store.MaxOffsetInQueue(topic, q)
		}
		return a.d.Store.OffsetInQueueByTime(topic, q, ts)
	}
	offsets := map[int32]int64{}
	if queueID >= 0 {
		if offset != -1 {
			lo, hi := a.d.Store.MinOffsetInQueue(topic, queueID), a.d.Store.MaxOffsetInQueue(topic, queueID)
			if (lo >= 0 && offset < lo) || offset > hi+1 {
				return response(req, remoting.SystemError, fmt.Sprintf("Target offset %d not in consume queue range [%d-%d]", offset, lo, hi))
			}
			offsets[queueID] = offset
		} else {
			offsets[queueID] = max(byTime(queueID), 0)
		}
	} else {
		for i := 0; i < tc.ReadQueueNums; i++ {
			offsets[int32(i)] = max(byTime(int32(i)), 0)
		}
	}
	if len(offsets) == 0 {
		return response(req, remoting.SystemError, "No queues to reset.")
	}
	table := adminbody.Map[adminbody.MessageQueue, int64]{}
	for q, off := range offsets {
		a.d.Offsets.Commit(group, topic, q, off)
		table[a.mq(topic, int(q))] = off
	}
	body, err := adminbody.Marshal(&adminbody.ResetOffsetBody{OffsetTable: table})
	if err != nil {
		return response(req, remoting.SystemError, err.Error())
	}
	if gi, online := a.d.Consumers.Group(group); online {
		for _, ch := range gi.Channels {
			push := remoting.NewRequest(remoting.ResetConsumerClientOffset, map[string]string{
				"topic": topic, "group": group, "timestamp": strconv.FormatInt(ts, 10), "isForce": strconv.FormatBool(force),
				"queueId": "-1",
			}, body)
			if err := ch.Conn.InvokeOneway(push); err != nil {
				a.d.Logger.Warn("reset offset: push to client failed", "group", group, "client", ch.ClientID, "err", err)
			}
		}
	}
	resp := response(req, remoting.Success, "")
	resp.Body = body
	return resp
}

// HandleInvokeBrokerToGetConsumerStatus answers
// INVOKE_BROKER_TO_GET_CONSUMER_STATUS: GET_CONSUMER_STATUS_FROM_CLIENT is
// asked of every online client of the group (or only the one the
// clientAddr field names by client id), and their queue offsets are
// answered by client id (GetConsumerStatusBody). A client that does not
// answer in time is left out.
func (a *Admin) HandleInvokeBrokerToGetConsumerStatus(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	topic := r.Str("topic", true)
	group := r.Str("group", true)
	only := r.Str("clientAddr", false)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	gi, online := a.d.Consumers.Group(group)
	if !online {
		return response(req, remoting.SystemError, fmt.Sprintf("No Any Consumer online in the consumer group: [%s]", group))
	}
	out := adminbody.GetConsumerStatusBody{ConsumerTable: adminbody.Map[string, adminbody.Map[adminbody.MessageQueue, int64]]{},
		MessageQueueTable: adminbody.Map[adminbody.MessageQueue, int64]{}}
	for _, ch := range gi.Channels {
		if only != "" && only != ch.ClientID {
			continue
		}
		ask := remoting.NewRequest(remoting.GetConsumerStatusFromClient, map[string]string{"topic": topic, "group": group}, nil)
		resp, err := a.call(ch.Conn, ask, min(a.d.RelayTimeout, statusTimeout))
		if err != nil || resp.Code != remoting.Success || len(resp.Body) == 0 {
			a.d.Logger.Warn("consumer status: client did not answer", "group", group, "client", ch.ClientID, "err", err)
			continue
		}
		var body adminbody.GetConsumerStatusBody
		if err := adminbody.Unmarshal(resp.Body, &body); err != nil {
			a.d.Logger.Warn("consumer status: bad answer", "group", group, "client", ch.ClientID, "err", err)
			continue
		}
		out.ConsumerTable[ch.ClientID] = body.MessageQueueTable
		if only != "" {
			break
		}
	}
	return encoded(req, &out)
}

// call sends req to a client and waits at most timeout, less when the
// connection closes first.
func (a *Admin) call(conn *transport.Conn, req *remoting.Command, timeout time.Duration) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return conn.Invoke(ctx, req)
}

// relay sends a copy of req (its code, fields and body) to the group's
// client clientID and answers with the client's answer.
func (a *Admin) relay(req *remoting.Command, group, clientID string, ext map[string]string, body []byte) *remoting.Command {
	conn := a.d.Consumers.ConnOf(group, clientID)
	if conn == nil {
		return response(req, remoting.SystemError, fmt.Sprintf("The Consumer <%s> <%s> not online", group, clientID))
	}
	fwd := remoting.NewRequest(req.Code, ext, body)
	resp, err := a.call(conn, fwd, a.d.RelayTimeout)
	if errors.Is(err, context.DeadlineExceeded) {
		return response(req, remoting.ConsumeMsgTimeout, fmt.Sprintf("consumer <%s> <%s> Timeout: %v", group, clientID, err))
	}
	if err != nil {
		return response(req, remoting.SystemError, fmt.Sprintf("invoke consumer <%s> <%s> Exception: %v", group, clientID, err))
	}
	out := response(req, resp.Code, resp.Remark)
	out.ExtFields = resp.ExtFields
	out.Body = resp.Body
	return out
}

func copyExt(req *remoting.Command) map[string]string {
	ext := make(map[string]string, len(req.ExtFields)+1)
	for k, v := range req.ExtFields {
		ext[k] = v
	}
	return ext
}

// HandleGetConsumerRunningInfo answers GET_CONSUMER_RUNNING_INFO by
// relaying it to the client named by clientId; the client's answer
// (ConsumerRunningInfo) is passed back as it is.
func (a *Admin) HandleGetConsumerRunningInfo(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	group := r.Str("consumerGroup", true)
	clientID := r.Str("clientId", true)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	return a.relay(req, group, clientID, copyExt(req), req.Body)
}

// HandleConsumeMessageDirectly answers CONSUME_MESSAGE_DIRECTLY: the
// message named by msgId (an offset message id of this broker) is read
// and sent with the request, its brokerName set to this broker's and the
// topic's and group's sysFlags added, to the client named by clientId, whose answer (ConsumeMessageDirectlyResult)
// is passed back.
func (a *Admin) HandleConsumeMessageDirectly(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	group := r.Str("consumerGroup", true)
	clientID := r.Str("clientId", true)
	msgID := r.Str("msgId", true)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	_, offset, err := message.ParseOffsetMsgID(msgID)
	if err != nil {
		return response(req, remoting.SystemError, fmt.Sprintf("msgId %q is not an offset message id: %v", msgID, err))
	}
	rec, err := a.d.Store.LookMessageByOffset(offset)
	if err != nil || len(rec) == 0 {
		return response(req, remoting.SystemError, fmt.Sprintf("can not find message by the offset, %d: %v", offset, err))
	}
	ext := copyExt(req)
	ext["brokerName"] = a.d.Config().BrokerName
	if t := ext["topic"]; t != "" {
		if tc := a.d.Topics.Find(t); tc != nil {
			ext["topicSysFlag"] = strconv.Itoa(tc.TopicSysFlag)
		}
	}
	if g := a.d.Groups.Find(group); g != nil {
		ext["groupSysFlag"] = strconv.Itoa(g.GroupSysFlag)
	}
	return a.relay(req, group, clientID, ext, rec)
}
