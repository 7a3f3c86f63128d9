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

// timerCase is one timer message and the earliest time it may arrive.
type timerCase struct {
	body     string
	earliest int64 // ms; a lower bound of the message's exact due time
}

// sendTimers sends timer messages due within 10 s: absolute times
// (WithDelayTimestamp, TIMER_DELIVER_MS) and relative ones (TIMER_DELAY_MS,
// TIMER_DELAY_SEC, counted by the broker from when it handles the send, so
// the client's clock before the send is a lower bound). It returns
// skip != "" when the broker answers that timers are not built.
func sendTimers(t testing.TB, p interface {
	SendSync(ctx context.Context, mq ...*primitive.Message) (*primitive.SendResult, error)
}, topic, prefix string) (cases []timerCase, skip string) {
	t.Helper()
	send := func(body string, earliest int64, m *primitive.Message) bool {
		res, err := p.SendSync(context.Background(), m)
		if isNotBuilt(err) {
			skip = fmt.Sprintf("the broker does not deliver timer messages yet: %v", err)
			return false
		}
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send timer message %s: %v %+v", body, err, res)
		}
		cases = append(cases, timerCase{body, earliest})
		return true
	}
	for i, d := range []time.Duration{1500 * time.Millisecond, 3 * time.Second, 4700 * time.Millisecond, 7 * time.Second, 9500 * time.Millisecond} {
		due := time.Now().Add(d)
		b := fmt.Sprintf("%s-at-%d", prefix, i)
		if !send(b, due.UnixMilli(), primitive.NewMessage(topic, []byte(b)).WithDelayTimestamp(due)) {
			return nil, skip
		}
	}
	for i, ms := range []int64{2200, 6100, 8000} {
		b := fmt.Sprintf("%s-ms-%d", prefix, i)
		m := primitive.NewMessage(topic, []byte(b))
		m.WithProperty("TIMER_DELAY_MS", strconv.FormatInt(ms, 10))
		if !send(b, time.Now().UnixMilli()+ms, m) {
			return nil, skip
		}
	}
	for i, sec := range []int64{2, 5} {
		b := fmt.Sprintf("%s-sec-%d", prefix, i)
		m := primitive.NewMessage(topic, []byte(b))
		m.WithProperty("TIMER_DELAY_SEC", strconv.FormatInt(sec, 10))
		if !send(b, time.Now().UnixMilli()+sec*1000, m) {
			return nil, skip
		}
	}
	return cases, ""
}

// checkNotEarly asserts that every timer message was stored in its topic
// and received no earlier than it was due.
func checkNotEarly(t testing.TB, log *receiptLog, cases []timerCase) {
	t.Helper()
	earliest := map[string]int64{}
	for _, c := range cases {
		earliest[c.body] = c.earliest
	}
	var minLate, maxLate int64 = 1 << 62, -1 << 62
	checked := 0
	for _, r := range log.snapshot() {
		b := string(r.msg.Body)
		due, ok := earliest[b]
		if !ok {
			continue
		}
		checked++
		if out := r.msg.GetProperty("TIMER_OUT_MS"); out != "" {
			v, err := strconv.ParseInt(out, 10, 64)
			if err != nil || v < due {
				t.Errorf("%s delivered with TIMER_OUT_MS=%q, before its earliest due time %d", b, out, due)
			} else {
				due = v
			}
		}
		if r.msg.StoreTimestamp < due {
			t.Errorf("%s stored in its topic at %d, %d ms early (due %d)", b, r.msg.StoreTimestamp, due-r.msg.StoreTimestamp, due)
		}
		if r.at < due {
			t.Errorf("%s received at %d, %d ms early (due %d)", b, r.at, due-r.at, due)
		}
		minLate, maxLate = min(minLate, r.at-due), max(maxLate, r.at-due)
	}
	if checked > 0 {
		// A figure for the record, not an assertion.
		t.Logf("%d timer deliveries checked; received %d..%d ms after due", checked, minLate, maxLate)
	}
}

// Timer messages due at several times within 10 s are never early.
func TestSemanticsTimerNeverEarly(t *testing.T) {
	t.Parallel()
	s := startSpool(t)
	topic := "E2ESemTimer"
	s.createTopic(t, s.newAdmin(t), topic, 2)
	log := newReceiptLog()
	s.startConsumer(t, "cg-sem-timer", topic, consumer.MessageSelector{}, log.handler)
	p := s.newProducer(t, "pg-sem-timer")

	cases, skip := sendTimers(t, p, topic, "timer")
	if skip != "" {
		t.Skip(skip)
	}
	var all []string
	for _, c := range cases {
		all = append(all, c.body)
	}
	waitFor(t, 60*time.Second, "the timer messages", func() bool { return log.hasAll(all) })
	checkNotEarly(t, log, cases)
	for _, b := range all {
		if n := log.count(b); n != 1 {
			t.Errorf("%s delivered %d times, want once", b, n)
		}
	}
}
