package broker

import (
	"fmt"
	"strconv"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// handleQueryConsumerOffset answers the group's committed offset. A group
// with no committed offset gets 0 while the queue still starts at 0 and its
// first message is within the in-memory window (RocketMQ's rule, so a new
// group reads a young topic from the start), else QUERY_NOT_FOUND.
func (b *Broker) handleQueryConsumerOffset(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := newExtReader(req)
	group := r.str("consumerGroup", true)
	topic := r.str("topic", true)
	qid := r.i32("queueId", true, 0)
	setZero := r.boolean("setZeroIfNotFound", true)
	if r.err != nil {
		return badHeader(req, r.err)
	}
	if off := b.offsets.Query(group, topic, qid); off >= 0 {
		resp := response(req, remoting.Success, "")
		resp.SetExt("offset", strconv.FormatInt(off, 10))
		return resp
	}
	if setZero {
		minOff := b.store.MinOffsetInQueue(topic, qid)
		if minOff <= 0 && b.store.CheckInMemByConsumeOffset(topic, qid, 0) {
			resp := response(req, remoting.Success, "")
			resp.SetExt("offset", "0")
			return resp
		}
	}
	return response(req, remoting.QueryNotFound, "Not found, maybe this group consumer boot first")
}

// handleUpdateConsumerOffset commits an offset.
func (b *Broker) handleUpdateConsumerOffset(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := newExtReader(req)
	group := r.str("consumerGroup", true)
	topic := r.str("topic", true)
	qid := r.i32("queueId", true, 0)
	off := r.i64("commitOffset", true, 0)
	if r.err != nil {
		return badHeader(req, r.err)
	}
	if b.groups.Find(group) == nil {
		return response(req, remoting.SubscriptionGroupNotExist, fmt.Sprintf("subscription group [%s] does not exist", group))
	}
	if b.topics.Find(topic) == nil {
		return response(req, remoting.TopicNotExist, fmt.Sprintf("topic[%s] not exist", topic))
	}
	b.offsets.Commit(group, topic, qid, off)
	return response(req, remoting.Success, "")
}

// topicQueueHeader reads the topic and queueId fields shared by the offset
// look-ups.
func topicQueueHeader(req *remoting.Command) (*extReader, string, int32) {
	r := newExtReader(req)
	topic := r.str("topic", true)
	qid := r.i32("queueId", true, 0)
	return r, topic, qid
}

func offsetResponse(req *remoting.Command, key string, v int64) *remoting.Command {
	resp := response(req, remoting.Success, "")
	resp.SetExt(key, strconv.FormatInt(v, 10))
	return resp
}

// handleGetMaxOffset answers the next offset to be written.
func (b *Broker) handleGetMaxOffset(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r, topic, qid := topicQueueHeader(req)
	if r.err != nil {
		return badHeader(req, r.err)
	}
	return offsetResponse(req, "offset", b.store.MaxOffsetInQueue(topic, qid))
}

// handleGetMinOffset answers the smallest offset still stored.
func (b *Broker) handleGetMinOffset(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r, topic, qid := topicQueueHeader(req)
	if r.err != nil {
		return badHeader(req, r.err)
	}
	return offsetResponse(req, "offset", b.store.MinOffsetInQueue(topic, qid))
}

// handleSearchOffsetByTimestamp answers the first offset stored at or after
// a time.
func (b *Broker) handleSearchOffsetByTimestamp(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r, topic, qid := topicQueueHeader(req)
	ts := r.i64("timestamp", true, 0)
	if r.err != nil {
		return badHeader(req, r.err)
	}
	return offsetResponse(req, "offset", b.store.OffsetInQueueByTime(topic, qid, ts))
}

// handleGetEarliestMsgStoretime answers the store time of the queue's first
// message.
func (b *Broker) handleGetEarliestMsgStoretime(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r, topic, qid := topicQueueHeader(req)
	if r.err != nil {
		return badHeader(req, r.err)
	}
	return offsetResponse(req, "timestamp", b.store.EarliestMessageTime(topic, qid))
}
