package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// A message with delay level 2 reaches its topic, and the consumer, no
// earlier than the store time of its schedule record plus the level's
// delay (2 s here).
func TestSemanticsDelayLevelNeverEarly(t *testing.T) {
	t.Parallel()
	const level, delayMs = 2, 2000
	s := startSpool(t, levels("1s", "2s"))
	topic := "E2ESemDelay"
	s.createTopic(t, s.newAdmin(t), topic, 2)
	log := newReceiptLog()
	s.startConsumer(t, "cg-sem-delay", topic, consumer.MessageSelector{}, log.handler)
	p := s.newProducer(t, "pg-sem-delay")

	stored := map[string]int64{}
	var all []string
	for i := 0; i < 6; i++ {
		b := fmt.Sprintf("delay-%d", i)
		stored[b] = s.sendDelayed(t, p, topic, b, level)
		all = append(all, b)
	}
	// Plain messages sent after the delayed ones are not held back.
	if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("plain"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the delayed messages", func() bool { return log.hasAll(append(all, "plain")) })

	for _, r := range log.snapshot() {
		b := string(r.msg.Body)
		st, ok := stored[b]
		if !ok {
			continue
		}
		due := st + delayMs
		if r.msg.StoreTimestamp < due {
			t.Errorf("%s stored in %s at %d, %d ms before due %d (schedule store time %d + %d ms)",
				b, topic, r.msg.StoreTimestamp, due-r.msg.StoreTimestamp, due, st, delayMs)
		}
		if r.at < due {
			t.Errorf("%s received at %d, %d ms before due %d", b, r.at, due-r.at, due)
		}
		if r.msg.GetProperty(primitive.PropertyDelayTimeLevel) != "" {
			t.Errorf("%s delivered with DELAY=%s still set", b, r.msg.GetProperty(primitive.PropertyDelayTimeLevel))
		}
		if rt := r.msg.GetProperty("REAL_TOPIC"); rt != topic {
			t.Errorf("%s delivered with REAL_TOPIC=%q, want %q", b, rt, topic)
		}
		if q := r.msg.GetProperty("REAL_QID"); q != strconv.Itoa(r.msg.Queue.QueueId) {
			t.Errorf("%s delivered to queue %d with REAL_QID=%q", b, r.msg.Queue.QueueId, q)
		}
	}
	for _, b := range all {
		if n := log.count(b); n != 1 {
			t.Errorf("%s delivered %d times, want once", b, n)
		}
	}
}
