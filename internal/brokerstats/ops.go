package brokerstats

import (
	"sort"
	"sync"
	"sync/atomic"
)

// This file holds the figures the metrics read beyond RocketMQ's stats
// items: per topic the message-size histogram and the transaction ends,
// per group and topic the messages moved to the dead-letter queue, and
// per group, topic and queue the next offset pulled (the inflight and
// ready gauges). They are removed with the topic or group like the items.

// MessageSizeBounds are the upper bounds (bytes) of the message-size
// histogram, RocketMQ 5's rocketmq_message_size buckets.
var MessageSizeBounds = [...]int64{1 << 10, 4 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20}

// topicOps are one topic's figures; a put entry points at its topic's,
// so the put path adds no lookup.
type topicOps struct {
	sizes              [len(MessageSizeBounds) + 1]atomic.Uint64 // the last is +Inf
	sizeSum            atomic.Uint64
	commits, rollbacks atomic.Uint64
}

// SizeHistogram is a topic's message-size histogram: Counts[i] messages
// of at most MessageSizeBounds[i] bytes (cumulative), Count and Sum of
// every message.
type SizeHistogram struct {
	Counts [len(MessageSizeBounds)]uint64
	Count  uint64
	Sum    uint64
}

// TopicOps are one topic's figures as Topics reads them.
type TopicOps struct {
	Topic              string
	Sizes              SizeHistogram
	Commits, Rollbacks uint64
}

// GroupTopic names a group's figures on a topic.
type GroupTopic struct{ Group, Topic string }

// PulledQueue is the next offset group pulled from a queue of topic.
type PulledQueue struct {
	Group, Topic string
	QueueID      int32
	Next         int64
}

type pulledKey struct {
	group, topic string
	queueID      int32
}

type ops struct {
	mu     sync.RWMutex
	topics map[string]*topicOps
	dlq    map[GroupTopic]*atomic.Uint64
	pulled map[pulledKey]*atomic.Int64
}

func (o *ops) init() {
	o.topics = map[string]*topicOps{}
	o.dlq = map[GroupTopic]*atomic.Uint64{}
	o.pulled = map[pulledKey]*atomic.Int64{}
}

// topicOps returns topic's figures, creating them; nil when maxKeys topics
// are kept already.
func (m *Manager) topicOps(topic string) *topicOps {
	o := &m.ops
	o.mu.RLock()
	t := o.topics[topic]
	o.mu.RUnlock()
	if t != nil {
		return t
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if t = o.topics[topic]; t != nil {
		return t
	}
	if len(o.topics) >= m.maxKeys {
		return nil // capped as the items are; Dropped counts the items' drops
	}
	t = &topicOps{}
	o.topics[topic] = t
	return t
}

// countSizes adds msgs messages of size bytes in all to the histogram
// (a batch counts as msgs messages of its mean size).
func (t *topicOps) countSizes(msgs int, size int64) {
	if t == nil || msgs <= 0 {
		return
	}
	each := size / int64(msgs)
	i := 0
	for i < len(MessageSizeBounds) && each > MessageSizeBounds[i] {
		i++
	}
	t.sizes[i].Add(uint64(msgs))
	t.sizeSum.Add(uint64(max(size, 0)))
}

// IncTransaction counts a transactional message of topic committed
// (commit) or rolled back.
func (m *Manager) IncTransaction(topic string, commit bool) {
	t := m.topicOps(topic)
	if t == nil {
		return
	}
	if commit {
		t.commits.Add(1)
	} else {
		t.rollbacks.Add(1)
	}
}

// IncSendToDLQ counts a message of topic that group's retries moved to
// the dead-letter queue.
func (m *Manager) IncSendToDLQ(group, topic string) {
	k := GroupTopic{group, topic}
	o := &m.ops
	o.mu.RLock()
	c := o.dlq[k]
	o.mu.RUnlock()
	if c == nil {
		o.mu.Lock()
		if c = o.dlq[k]; c == nil {
			if len(o.dlq) >= m.maxKeys {
				o.mu.Unlock()
				return
			}
			c = &atomic.Uint64{}
			o.dlq[k] = c
		}
		o.mu.Unlock()
	}
	c.Add(1)
}

// NotePulled records next as the next offset group is to pull from a
// queue of topic, when it is past what was recorded.
func (m *Manager) NotePulled(group, topic string, queueID int32, next int64) {
	k := pulledKey{group, topic, queueID}
	o := &m.ops
	o.mu.RLock()
	c := o.pulled[k]
	o.mu.RUnlock()
	if c == nil {
		o.mu.Lock()
		if c = o.pulled[k]; c == nil {
			if len(o.pulled) >= m.maxKeys {
				o.mu.Unlock()
				return
			}
			c = &atomic.Int64{}
			o.pulled[k] = c
		}
		o.mu.Unlock()
	}
	for {
		old := c.Load()
		if next <= old || c.CompareAndSwap(old, next) {
			return
		}
	}
}

// Topics returns every topic's figures, sorted by topic.
func (m *Manager) Topics() []TopicOps {
	o := &m.ops
	o.mu.RLock()
	out := make([]TopicOps, 0, len(o.topics))
	for name, t := range o.topics {
		to := TopicOps{Topic: name, Commits: t.commits.Load(), Rollbacks: t.rollbacks.Load()}
		var cum uint64
		for i := range MessageSizeBounds {
			cum += t.sizes[i].Load()
			to.Sizes.Counts[i] = cum
		}
		to.Sizes.Count = cum + t.sizes[len(MessageSizeBounds)].Load()
		to.Sizes.Sum = t.sizeSum.Load()
		out = append(out, to)
	}
	o.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}

// SentToDLQ returns the dead-letter counts by group and topic.
func (m *Manager) SentToDLQ() map[GroupTopic]uint64 {
	o := &m.ops
	o.mu.RLock()
	defer o.mu.RUnlock()
	out := make(map[GroupTopic]uint64, len(o.dlq))
	for k, c := range o.dlq {
		out[k] = c.Load()
	}
	return out
}

// Pulled returns the next offsets pulled of group on topic by queue.
func (m *Manager) Pulled(group, topic string) map[int32]int64 {
	o := &m.ops
	o.mu.RLock()
	defer o.mu.RUnlock()
	out := map[int32]int64{}
	for k, c := range o.pulled {
		if k.group == group && k.topic == topic {
			out[k.queueID] = c.Load()
		}
	}
	return out
}

// removeOps drops the figures of a topic ("" none) and of a group ("" none).
func (m *Manager) removeOps(topic, group string) {
	o := &m.ops
	o.mu.Lock()
	defer o.mu.Unlock()
	if topic != "" {
		delete(o.topics, topic)
	}
	for k := range o.dlq {
		if (topic != "" && k.Topic == topic) || (group != "" && k.Group == group) {
			delete(o.dlq, k)
		}
	}
	for k := range o.pulled {
		if (topic != "" && k.topic == topic) || (group != "" && k.group == group) {
			delete(o.pulled, k)
		}
	}
}
