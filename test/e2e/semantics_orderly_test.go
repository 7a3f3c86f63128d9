package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// orderLog records, per sharding key, the sequence numbers an orderly
// consumer saw, in the order it saw them.
type orderLog struct {
	mu    sync.Mutex
	seqs  map[string][]int
	total int
	delay time.Duration
}

func newOrderLog(delay time.Duration) *orderLog {
	return &orderLog{seqs: map[string][]int{}, delay: delay}
}

func (o *orderLog) handler(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	for _, m := range msgs {
		key, seq, ok := strings.Cut(string(m.Body), "/")
		n, err := strconv.Atoi(seq)
		if !ok || err != nil {
			continue
		}
		o.mu.Lock()
		o.seqs[key] = append(o.seqs[key], n)
		o.total++
		o.mu.Unlock()
	}
	if o.delay > 0 {
		// Slow consumption, so that the consumer is stopped mid-stream.
		time.Sleep(o.delay)
	}
	return consumer.ConsumeSuccess, nil
}

func (o *orderLog) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.total
}

func (o *orderLog) snapshot() map[string][]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string][]int{}
	for k, v := range o.seqs {
		out[k] = append([]int(nil), v...)
	}
	return out
}

// An orderly consumer sees each sharding key's messages in the order they
// were sent, also when it is stopped mid-stream and another consumer of
// the group takes over (it may see the last uncommitted ones again, but
// never out of order and never with a gap).
func TestSemanticsOrderlyAcrossConsumerRestart(t *testing.T) {
	t.Parallel()
	s := startSpool(t)
	topic, group := "E2ESemOrderly", "cg-sem-orderly"
	a := s.newAdmin(t)
	s.createTopic(t, a, topic, 4)
	s.createTopic(t, a, "%RETRY%"+group, 1)
	const keys, perKey = 8, 25
	p := s.newProducer(t, "pg-sem-orderly", producer.WithQueueSelector(producer.NewHashQueueSelector()))
	queueOf := map[string]int{}
	for i := 0; i < perKey; i++ {
		for k := 0; k < keys; k++ {
			key := fmt.Sprintf("key%d", k)
			m := primitive.NewMessage(topic, []byte(fmt.Sprintf("%s/%d", key, i))).WithShardingKey(key)
			res, err := p.SendSync(context.Background(), m)
			if err != nil {
				t.Fatalf("send %s/%d: %v", key, i, err)
			}
			if q, ok := queueOf[key]; ok && q != res.MessageQueue.QueueId {
				t.Fatalf("hash selector sent %s to queues %d and %d", key, q, res.MessageQueue.QueueId)
			}
			queueOf[key] = res.MessageQueue.QueueId
		}
	}

	first := newOrderLog(10 * time.Millisecond)
	c1 := s.newPushConsumer(t, group, consumer.WithConsumerOrder(true))
	if err := c1.Subscribe(topic, consumer.MessageSelector{}, first.handler); err != nil {
		t.Fatal(err)
	}
	if err := c1.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the first consumer to consume part of the stream", func() bool {
		return first.count() >= keys*perKey/3
	})
	if err := c1.Shutdown(); err != nil {
		t.Fatalf("shutdown of the first consumer: %v", err)
	}
	seen1 := first.snapshot()

	second := newOrderLog(0)
	s.startConsumer(t, group, topic, consumer.MessageSelector{}, second.handler, consumer.WithConsumerOrder(true))
	waitFor(t, 90*time.Second, "the second consumer to reach the end of every key", func() bool {
		snap := second.snapshot()
		for k := 0; k < keys; k++ {
			key := fmt.Sprintf("key%d", k)
			if v := snap[key]; len(v) == 0 || v[len(v)-1] != perKey-1 {
				if len(seen1[key]) == 0 || seen1[key][len(seen1[key])-1] != perKey-1 {
					return false
				}
			}
		}
		return true
	})
	seen2 := second.snapshot()
	t.Logf("first consumer saw %d messages, second %d (of %d)", first.count(), second.count(), keys*perKey)

	for k := 0; k < keys; k++ {
		key := fmt.Sprintf("key%d", k)
		a, b := seen1[key], seen2[key]
		if err := contiguousFrom(a, 0); err != "" {
			t.Errorf("%s first consumer: %s (saw %v)", key, err, a)
		}
		next := 0
		if len(a) > 0 {
			next = a[len(a)-1] + 1
		}
		if len(b) == 0 {
			if next != perKey {
				t.Errorf("%s: the first consumer stopped at %d and the second saw nothing", key, next)
			}
			continue
		}
		if b[0] > next {
			t.Errorf("%s: the second consumer started at %d, skipping %d..%d", key, b[0], next, b[0]-1)
		}
		if err := contiguousFrom(b, b[0]); err != "" {
			t.Errorf("%s second consumer: %s (saw %v)", key, err, b)
		}
		if b[len(b)-1] != perKey-1 {
			t.Errorf("%s: the second consumer ended at %d, want %d", key, b[len(b)-1], perKey-1)
		}
	}
}

// contiguousFrom checks that seqs is start, start+1, start+2, ...
func contiguousFrom(seqs []int, start int) string {
	for i, v := range seqs {
		if v != start+i {
			return fmt.Sprintf("position %d holds %d, want %d", i, v, start+i)
		}
	}
	return ""
}
