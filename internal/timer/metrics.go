package timer

import (
	"sort"
	"sync"
)

// This file holds the figures the broker's metrics read: timers per real
// topic (entered the wheel, delivered, left without delivery) since the
// service started, and the pending timers by how far ahead they are due.
// The per-topic counts are kept by the enqueue and delivery goroutines,
// never by Prepare.

// TopicTimers are one real topic's timer figures since Start.
type TopicTimers struct {
	Topic string
	// Enqueued counts timers linked into the wheel, Dequeued those
	// delivered; Pending is what is left of the first after the second
	// and the timers cancelled or dropped (never below 0).
	Enqueued, Dequeued, Pending int64
}

type topicCounts struct {
	mu sync.Mutex
	m  map[string]*[3]int64 // enqueued, dequeued, gone
}

func (t *topicCounts) add(topic string, i int, n int64) {
	if topic == "" {
		return
	}
	t.mu.Lock()
	c := t.m[topic]
	if c == nil {
		if t.m == nil {
			t.m = map[string]*[3]int64{}
		}
		c = &[3]int64{}
		t.m[topic] = c
	}
	c[i] += n
	t.mu.Unlock()
}

// TopicTimers returns the per-topic figures, sorted by topic.
func (s *Service) TopicTimers() []TopicTimers {
	t := &s.topics
	t.mu.Lock()
	out := make([]TopicTimers, 0, len(t.m))
	for name, c := range t.m {
		out = append(out, TopicTimers{Topic: name, Enqueued: c[0], Dequeued: c[1], Pending: max(c[0]-c[1]-c[2], 0)})
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}

// ForgetTopic drops a deleted topic's figures.
func (s *Service) ForgetTopic(topic string) {
	s.topics.mu.Lock()
	delete(s.topics.m, topic)
	s.topics.mu.Unlock()
}

// PendingByDelay counts the timers linked in the slots due within each
// bound (seconds, ascending) from now: out[i] holds the slots at least
// bounds[i-1] (0 for the first) and less than bounds[i] seconds ahead,
// as RocketMQ's rocketmq_timer_message_snapshot reads its wheel.
func (s *Service) PendingByDelay(bounds []int64) []int64 {
	out := make([]int64, len(bounds))
	if s.w == nil {
		return out
	}
	nowSec := s.nowMs() / 1000
	lo := int64(0)
	for i, hi := range bounds {
		for d := lo; d < min(hi, s.w.nslots); d++ {
			out[i] += int64(s.w.counts[s.w.idx(nowSec+d)].Load())
		}
		lo = hi
	}
	return out
}

// DueNotDelivered counts the timers linked in the slots from the cursor up
// to the current second: due, or due within this second, and not yet
// delivered (rocketmq_timer_dequeue_lag).
func (s *Service) DueNotDelivered() int64 {
	if s.w == nil {
		return 0
	}
	nowSec := s.nowMs() / 1000
	s.mu.Lock()
	cur := s.w.cursor
	s.mu.Unlock()
	var n int64
	for sec := cur; sec <= nowSec && sec-cur < s.w.nslots; sec++ {
		n += int64(s.w.counts[s.w.idx(sec)].Load())
	}
	return n
}
