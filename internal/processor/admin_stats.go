package processor

import (
	"fmt"
	"strings"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// HandleGetTopicStatsInfo answers GET_TOPIC_STATS_INFO: every queue of
// the topic (the larger of its read and write queue counts) with its min and max offset and the store time of its last
// message (TopicStatsTable).
func (a *Admin) HandleGetTopicStatsInfo(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	topic := r.Str("topic", true)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	tc := a.d.Topics.Find(topic)
	if tc == nil {
		return response(req, remoting.TopicNotExist, fmt.Sprintf("topic[%s] not exist", topic))
	}
	out := adminbody.TopicStatsTable{OffsetTable: adminbody.Map[adminbody.MessageQueue, adminbody.TopicOffset]{},
		TopicPutTps: adminbody.Double(a.putTps(topic))}
	for i := 0; i < max(tc.WriteQueueNums, tc.ReadQueueNums); i++ {
		q := int32(i)
		o := adminbody.TopicOffset{
			MinOffset: max(a.d.Store.MinOffsetInQueue(topic, q), 0),
			MaxOffset: max(a.d.Store.MaxOffsetInQueue(topic, q), 0),
		}
		if o.MaxOffset > 0 {
			o.LastUpdateTimestamp = max(a.d.Store.MessageStoreTimeStamp(topic, q, o.MaxOffset-1), 0)
		}
		out.OffsetTable[a.mq(topic, i)] = o
	}
	return encoded(req, &out)
}

// consumeStats is the group's progress on topic, every read queue
// (ConsumeStats): the queue's end, the committed offset, the pull offset
// (Spool keeps no pull offsets apart from the committed ones, so it is the
// committed offset) and the store time of the last consumed message.
//
// GET_BROKER_CONSUME_STATS walks the write queues and leaves pullOffset
// 0, as RocketMQ does (withPull false).
func (a *Admin) consumeStats(group, topic string, queues int, withPull bool) adminbody.ConsumeStats {
	st := adminbody.ConsumeStats{OffsetTable: adminbody.Map[adminbody.MessageQueue, adminbody.OffsetWrapper]{}}
	for i := 0; i < queues; i++ {
		q := int32(i)
		w := adminbody.OffsetWrapper{
			BrokerOffset:   max(a.d.Store.MaxOffsetInQueue(topic, q), 0),
			ConsumerOffset: max(a.d.Offsets.Query(group, topic, q), 0),
		}
		if withPull {
			w.PullOffset = w.ConsumerOffset
		}
		if w.ConsumerOffset > 0 {
			if ts := a.d.Store.MessageStoreTimeStamp(topic, q, w.ConsumerOffset-1); ts > 0 {
				w.LastTimestamp = ts
			}
		}
		st.OffsetTable[a.mq(topic, i)] = w
	}
	st.ConsumeTps = adminbody.Double(a.getTps(group, topic))
	return st
}

// subscribedElsewhere reports whether the group is online with
// subscriptions none of which is topic: RocketMQ leaves such a topic out
// of the group's stats.
func (a *Admin) subscribedElsewhere(group, topic string) bool {
	gi, online := a.d.Consumers.Group(group)
	if !online || len(gi.Subscriptions) == 0 {
		return false
	}
	_, ok := gi.Subscriptions[topic]
	return !ok
}

// HandleGetConsumeStats answers GET_CONSUME_STATS: the group's progress
// on the topics of topicList (";"-separated), else on the topic of the
// header, else on every topic it committed offsets of; but for topicList,
// a topic an online group does not subscribe to is left out.
func (a *Admin) HandleGetConsumeStats(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	group := r.Str("consumerGroup", true)
	topic := r.Str("topic", false)
	topicList := r.Str("topicList", false)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	var topics []string
	for _, t := range strings.Split(topicList, ";") {
		if t = strings.TrimSpace(t); t != "" {
			topics = append(topics, t)
		}
	}
	checkSub := len(topics) == 0
	if checkSub {
		topics = []string{topic}
		if topic == "" {
			topics = a.topicsOfGroup(group)
		}
	}
	out := adminbody.ConsumeStats{OffsetTable: adminbody.Map[adminbody.MessageQueue, adminbody.OffsetWrapper]{}}
	for _, t := range topics {
		tc := a.d.Topics.Find(t)
		if tc == nil || (checkSub && a.subscribedElsewhere(group, t)) {
			continue
		}
		st := a.consumeStats(group, t, tc.ReadQueueNums, true)
		for mq, w := range st.OffsetTable {
			out.OffsetTable[mq] = w
		}
		out.ConsumeTps += st.ConsumeTps
	}
	return encoded(req, &out)
}

// HandleGetBrokerConsumeStats answers GET_BROKER_CONSUME_STATS: for every
// subscription group, its progress on each topic it committed offsets of
// (only ordered topics when isOrder), every group listed even with none,
// with the sum of the lags (ConsumeStatsList).
func (a *Admin) HandleGetBrokerConsumeStats(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	if !r.Has("isOrder") {
		return badHeader(req, fmt.Errorf("%w: missing ext field isOrder", ErrBadHeader))
	}
	isOrder := r.Bool("isOrder", false)
	doc := a.d.Groups.Document()
	groups := make([]string, 0, len(doc.SubscriptionGroupTable))
	for g := range doc.SubscriptionGroupTable {
		groups = append(groups, g)
	}
	sortStrings(groups)
	out := adminbody.ConsumeStatsList{BrokerAddr: a.d.Config().BrokerAddr, ConsumeStatsList: adminbody.List[map[string]adminbody.List[adminbody.ConsumeStats]]{}}
	for _, g := range groups {
		list := adminbody.List[adminbody.ConsumeStats]{}
		for _, t := range a.topicsOfGroup(g) {
			tc := a.d.Topics.Find(t)
			if tc == nil || (isOrder && !tc.Order) || a.subscribedElsewhere(g, t) {
				continue
			}
			st := a.consumeStats(g, t, tc.WriteQueueNums, false)
			out.TotalDiff += st.TotalDiff()
			out.TotalInflightDiff += st.InflightTotalDiff()
			list = append(list, st)
		}
		out.ConsumeStatsList = append(out.ConsumeStatsList, map[string]adminbody.List[adminbody.ConsumeStats]{g: list})
	}
	return encoded(req, &out)
}

// HandleQueryConsumeTimeSpan answers QUERY_CONSUME_TIME_SPAN: for every
// write queue of the topic, the store times of its first and last
// message, of the group's last consumed message, and how long the next
// unconsumed message has waited.
func (a *Admin) HandleQueryConsumeTimeSpan(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	topic := r.Str("topic", true)
	group := r.Str("group", true)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	tc := a.d.Topics.Find(topic)
	if tc == nil {
		return response(req, remoting.TopicNotExist, fmt.Sprintf("topic[%s] not exist", topic))
	}
	out := adminbody.QueryConsumeTimeSpanBody{ConsumeTimeSpanSet: adminbody.List[adminbody.QueueTimeSpan]{}}
	now := a.nowMillis()
	for i := 0; i < tc.WriteQueueNums; i++ {
		q := int32(i)
		maxOff := a.d.Store.MaxOffsetInQueue(topic, q)
		s := adminbody.QueueTimeSpan{MessageQueue: a.mq(topic, i)}
		s.MinTimeStamp = a.d.Store.EarliestMessageTime(topic, q)
		s.MaxTimeStamp = a.d.Store.MessageStoreTimeStamp(topic, q, maxOff-1)
		consumed := a.d.Offsets.Query(group, topic, q)
		if consumed > 0 {
			s.ConsumeTimeStamp = a.d.Store.MessageStoreTimeStamp(topic, q, consumed-1)
		} else {
			s.ConsumeTimeStamp = s.MinTimeStamp
		}
		if consumed < maxOff {
			if next := a.d.Store.MessageStoreTimeStamp(topic, q, max(consumed, 0)); next > 0 {
				s.DelayTime = now - next
			}
		}
		out.ConsumeTimeSpanSet = append(out.ConsumeTimeSpanSet, s)
	}
	return encoded(req, &out)
}
