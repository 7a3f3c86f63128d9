package processor

import (
	"fmt"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// HandleQueryConsumerOffset answers the group's committed offset. A group
// with no committed offset gets 0 while the queue still starts at 0 and its
// first message is within the in-memory window (RocketMQ's rule, so a new
// group reads a young topic from the start), else QUERY_NOT_FOUND.
func (p *Processor) HandleQueryConsumerOffset(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	group := r.Str("consumerGroup", true)
	topic := r.Str("topic", true)
	qid := r.I32("queueId", true, 0)
	setZero := r.Bool("setZeroIfNotFound", true)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	if off := p.offsets.Query(group, topic, qid); off >= 0 {
		return offsetResponse(req, "offset", off)
	}
	if setZero {
		minOff := p.store.MinOffsetInQueue(topic, qid)
		if minOff <= 0 && p.store.CheckInMemByConsumeOffset(topic, qid, 0) {
			resp := response(req, remoting.Success, "")
			resp.SetExt("offset", "0")
			return resp
		}
	}
	return response(req, remoting.QueryNotFound, "Not found, maybe this group consumer boot first")
}

// HandleUpdateConsumerOffset commits an offset.
func (p *Processor) HandleUpdateConsumerOffset(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	group := r.Str("consumerGroup", true)
	topic := r.Str("topic", true)
	qid := r.I32("queueId", true, 0)
	off := r.I64("commitOffset", true, 0)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	if p.groups.Find(group) == nil {
		return response(req, remoting.SubscriptionGroupNotExist, fmt.Sprintf("subscription group [%s] does not exist", group))
	}
	if p.topics.Find(topic) == nil {
		return response(req, remoting.TopicNotExist, fmt.Sprintf("topic[%s] not exist", topic))
	}
	p.offsets.Commit(group, topic, qid, off)
	return response(req, remoting.Success, "")
}

// topicQueueHeader reads the topic and queueId fields shared by the offset
// look-ups.
func topicQueueHeader(req *remoting.Command) (*Header, string, int32) {
	r := NewHeader(req)
	topic := r.Str("topic", true)
	qid := r.I32("queueId", true, 0)
	return r, topic, qid
}

// offsetResponse answers SUCCESS with one number field; the field is
// formatted into the answer's own allocation (no map).
func offsetResponse(req *remoting.Command, key string, v int64) *remoting.Command {
	resp, w := remoting.NewResponseExt(req, remoting.Success, "")
	w.Int(key, v)
	w.Close()
	return resp
}

// HandleGetMaxOffset answers the next offset to be written.
func (p *Processor) HandleGetMaxOffset(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r, topic, qid := topicQueueHeader(req)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	return offsetResponse(req, "offset", p.store.MaxOffsetInQueue(topic, qid))
}

// HandleGetMinOffset answers the smallest offset still stored.
func (p *Processor) HandleGetMinOffset(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r, topic, qid := topicQueueHeader(req)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	return offsetResponse(req, "offset", p.store.MinOffsetInQueue(topic, qid))
}

// HandleSearchOffsetByTimestamp answers the first offset stored at or after
// a time.
func (p *Processor) HandleSearchOffsetByTimestamp(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r, topic, qid := topicQueueHeader(req)
	ts := r.I64("timestamp", true, 0)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	return offsetResponse(req, "offset", p.store.OffsetInQueueByTime(topic, qid, ts))
}

// HandleGetEarliestMsgStoretime answers the store time of the queue's first
// message.
func (p *Processor) HandleGetEarliestMsgStoretime(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r, topic, qid := topicQueueHeader(req)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	return offsetResponse(req, "timestamp", p.store.EarliestMessageTime(topic, qid))
}
