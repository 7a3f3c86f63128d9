package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
)

// A kill -9 while delayed (and, once built, timer) messages are pending
// loses and duplicates nothing: after the restart every message is in its
// topic exactly once, delivered no earlier than due.
func TestSemanticsKillDuringDelaysExactlyOnce(t *testing.T) {
	t.Parallel()
	s := startSpool(t, levels("1s", "2s", "3s", "4s", "5s", "6s", "7s", "8s"))
	topic := "E2ESemDelayKill"
	const queues = 2
	s.createTopic(t, s.newAdmin(t), topic, queues)
	p := s.newProducer(t, "pg-sem-delay-kill")

	const n = 48
	due := map[string]int64{}
	var all []string
	for i := 0; i < n; i++ {
		level := 1 + i%8
		b := fmt.Sprintf("dk-%02d-level-%d", i, level)
		due[b] = s.sendDelayed(t, p, topic, b, level) + int64(level)*1000
		all = append(all, b)
	}
	timers, skip := sendTimers(t, p, topic, "kill-timer")
	if skip != "" {
		t.Logf("timers left out: %s", skip)
	}
	for _, c := range timers {
		all = append(all, c.body)
	}
	total := int64(len(all))

	stored := func() int64 {
		var sum int64
		for q := 0; q < queues; q++ {
			if m := s.maxOffset(t, topic, q); m > 0 {
				sum += m
			}
		}
		return sum
	}
	// Kill once some are delivered and many are still pending.
	waitFor(t, 30*time.Second, "the first delayed messages to be delivered", func() bool { return stored() >= 6 })
	before := stored()
	s.kill()
	if before >= total {
		t.Fatalf("all %d messages were delivered before the kill; the test needs pending ones", total)
	}
	s.start()

	log := newReceiptLog()
	s.startConsumer(t, "cg-sem-delay-kill", topic, consumer.MessageSelector{}, log.handler)
	waitFor(t, 60*time.Second, "every delayed message after the restart", func() bool { return log.hasAll(all) })
	s.waitCommitted(t, "cg-sem-delay-kill", topic, queues)

	// The topic holds each message exactly once (the schedule queues are
	// read in order, so a copy delivered twice would have been written
	// before the last message of its level).
	perBody := map[string]int{}
	for q := 0; q < queues; q++ {
		for _, m := range s.pullAll(t, "cg-sem-delay-kill-reader", topic, q) {
			perBody[string(m.Body)]++
		}
	}
	var dup, lost []string
	for _, b := range all {
		switch c := perBody[b]; {
		case c == 0:
			lost = append(lost, b)
		case c > 1:
			dup = append(dup, fmt.Sprintf("%s x%d", b, c))
		}
	}
	if len(lost) > 0 || len(dup) > 0 {
		t.Errorf("after kill -9 at %d/%d delivered: stored in %s lost %v, duplicated %v", before, total, topic, lost, dup)
	}
	if got := stored(); got != total {
		t.Errorf("%s holds %d messages, want %d", topic, got, total)
	}
	for b, c := range log.counts() {
		if c != 1 {
			t.Errorf("%s received %d times, want once", b, c)
		}
	}
	for _, r := range log.snapshot() {
		b := string(r.msg.Body)
		if d, ok := due[b]; ok && (r.msg.StoreTimestamp < d || r.at < d) {
			t.Errorf("%s early: stored at %d, received at %d, due %d", b, r.msg.StoreTimestamp, r.at, d)
		}
	}
	checkNotEarly(t, log, timers)
}
