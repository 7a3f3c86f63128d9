package processor

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/internal/clients"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// maxQueryConsumeQueueCount bounds QUERY_CONSUME_QUEUE's count: the
// entries are read with their messages.
const maxQueryConsumeQueueCount = 1024

// HandleQueryConsumeQueue answers QUERY_CONSUME_QUEUE: count consume-queue
// entries of a queue from index (CommitLog offset, size and tag code of
// each), and with a consumerGroup the group's subscription and whether
// each entry passes its tag filter (QueryConsumeQueueResponseBody).
func (a *Admin) HandleQueryConsumeQueue(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	topic := r.Str("topic", true)
	// queueId, index and count are Java ints without @CFNotNull: 0 when
	// left out.
	queueID := r.I32("queueId", false, 0)
	index := r.I64("index", false, 0)
	count := r.I32("count", false, 0)
	group := r.Str("consumerGroup", false)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	if count < 0 || count > maxQueryConsumeQueueCount {
		return response(req, remoting.InvalidParameter, fmt.Sprintf("count %d out of range [0, %d]", count, maxQueryConsumeQueueCount))
	}
	if !slices.Contains(a.d.Store.QueueIDs(topic), queueID) {
		return response(req, remoting.SystemError, fmt.Sprintf("%d@%s is not exist!", queueID, topic))
	}
	body := adminbody.QueryConsumeQueueResponseBody{
		MinQueueIndex: a.d.Store.MinOffsetInQueue(topic, queueID),
		MaxQueueIndex: a.d.Store.MaxOffsetInQueue(topic, queueID),
		QueueData:     adminbody.List[adminbody.ConsumeQueueData]{},
	}
	var sub *clients.SubscriptionData
	if group != "" {
		if gi, online := a.d.Consumers.Group(group); online {
			if sd, ok := gi.Subscriptions[topic]; ok {
				sub = &sd
				asd := subscriptionData(sd)
				body.SubscriptionData = &asd
			}
		}
		if sub == nil {
			body.FilterData = fmt.Sprintf("%s@%s is not online!", group, topic)
		}
	}
	if index < body.MinQueueIndex || index >= body.MaxQueueIndex {
		resp := encoded(req, &body)
		resp.Remark = fmt.Sprintf("Index %d of %d@%s is not exist!", index, queueID, topic)
		return resp
	}
	if count > 0 {
		res := a.d.Store.GetMessage("", topic, queueID, index, count, math.MaxInt32, nil)
		if res != nil {
			for _, buf := range res.Buffers {
				e, err := message.DecodeRecord(buf)
				if err != nil {
					res.Release()
					return response(req, remoting.SystemError, fmt.Sprintf("%d@%s: record at index %d: %v", queueID, topic, index, err))
				}
				code := message.TagsHashCode(e.Properties[message.PropertyTags])
				body.QueueData = append(body.QueueData, adminbody.ConsumeQueueData{
					PhysicOffset: e.PhysicalOffset, PhysicSize: int(e.TotalSize), TagsCode: code, Eval: tagMatch(sub, code),
				})
			}
			res.Release()
		}
	}
	return encoded(req, &body)
}

// tagMatch is whether an entry with tag code passes the subscription's
// tag filter; expressions of other types are decided on the message, so
// every entry passes here, as in RocketMQ.
func tagMatch(sub *clients.SubscriptionData, code int64) bool {
	if sub == nil {
		return true
	}
	if sub.ExpressionType != "" && !strings.EqualFold(sub.ExpressionType, clients.ExprTag) {
		return true
	}
	if sub.SubString == "" || sub.SubString == "*" {
		return true
	}
	return slices.Contains([]int64(sub.CodeSet), code)
}
