package broker

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/schedule"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/timer"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

// fastFlush makes the store flush every interval, so the timing wheel's
// checkpoints (which wait for the CommitLog flush) do not hold shutdown.
func fastFlush(_ *Config, s *store.Config) {
	s.FlushCommitLogLeastPages = 0
	s.MessageDelayLevel = "1s"
}

// TestTimerMessages: TIMER_DELAY_MS goes through the timing wheel and is
// delivered to its real topic no earlier than its due time, with the
// timer properties removed; DELAY wins over timer properties; markers sent
// by clients are dropped; a pending timer survives a restart and arrives
// once.
func TestTimerMessages(t *testing.T) {
	dir := t.TempDir()
	e := startBrokerIn(t, dir, fastFlush)
	e.createTopic("TT", 2)
	sent := time.Now().UnixMilli()
	resp := e.invoke(sendV1("TT", 1, map[string]string{"TIMER_DELAY_MS": "1500", "TAGS": "tm", "__DELAY_SRC": "1:999"}, []byte("timed")))
	if resp.Code != remoting.Success || extInt(t, resp, "queueId") != 1 {
		t.Fatalf("timer send: code %d remark %q ext %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	if got := e.b.store.MaxOffsetInQueue("TT", 1); got != 0 {
		t.Fatalf("the real queue holds %d before the due time", got)
	}
	e.waitDispatched("TT", 1, 1)
	x := e.readQueue("TT", 1)[0]
	due, err := strconv.ParseInt(x.Properties[message.PropertyTimerOutMS], 10, 64)
	if err != nil || due < sent+1500 || x.StoreTimestamp < due || string(x.Body) != "timed" || x.Properties["TAGS"] != "tm" {
		t.Fatalf("delivered at %d, due %d (sent %d): %v", x.StoreTimestamp, due, sent, x.Properties)
	}
	if _, ok := x.Properties[message.PropertyTimerDelayMS]; ok {
		t.Fatalf("TIMER_DELAY_MS kept: %v", x.Properties)
	}
	if _, ok := x.Properties[schedule.PropertyDelaySource]; ok {
		t.Fatalf("a client's __DELAY_SRC was stored: %v", x.Properties)
	}
	// The wheel counts a delivery when its put's answer reaches it, which
	// may be after the dispatch made the message visible.
	waitFor(t, "the timer's delivery count", func() bool {
		st, ok := e.b.TimerStats()
		return ok && st.Delivered == 1
	})

	// DELAY and a timer property: the level wins, the timer keys go.
	resp = e.invoke(sendV1("TT", 0, map[string]string{"DELAY": "1", "TIMER_DELAY_SEC": "30"}, []byte("level")))
	if resp.Code != remoting.Success {
		t.Fatalf("delay+timer: %d %q", resp.Code, resp.Remark)
	}
	e.waitDispatched(topicSchedule, 0, 1)
	if p := e.readQueue(topicSchedule, 0)[0].Properties; timer.HasTimerProperty(p) {
		t.Fatalf("timer keys kept beside DELAY: %v", p)
	}
	e.waitDispatched("TT", 0, 1)

	// A pending timer across a clean restart.
	resp = e.invoke(sendV1("TT", 1, map[string]string{"TIMER_DELAY_MS": "2000"}, []byte("across")))
	if resp.Code != remoting.Success {
		t.Fatalf("timer send: %d %q", resp.Code, resp.Remark)
	}
	e.stop()
	e = startBrokerIn(t, dir, fastFlush)
	e.waitDispatched("TT", 1, 2)
	waitFor(t, "no pending timers", func() bool { st, _ := e.b.TimerStats(); return st.Pending == 0 && !st.Recovering })
	e.waitDispatched("TT", 1, 2)
	recs := e.readQueue("TT", 1)
	if len(recs) != 2 || string(recs[1].Body) != "across" {
		t.Fatalf("after restart: %d records", len(recs))
	}
}

// TestTimerWheelDisabled: with timerWheelEnable=false a timer message is
// refused as RocketMQ refuses it.
func TestTimerWheelDisabled(t *testing.T) {
	e := startBroker(t, func(c *Config, _ *store.Config) { c.TimerWheelEnable = false })
	resp := e.invoke(sendV1("TW", 0, map[string]string{"TIMER_DELIVER_MS": strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10)}, []byte("x")))
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "timer message is not enabled") {
		t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
	}
	if _, ok := e.b.TimerStats(); ok {
		t.Fatal("timer stats with the wheel off")
	}
}

// TestTimerLiveMaxDelay: timerMaxDelaySec changes live through
// UPDATE_BROKER_CONFIG and bounds timer sends at once.
func TestTimerLiveMaxDelay(t *testing.T) {
	e := startBroker(t, fastFlush)
	e.createTopic("TL", 1)
	send := func() *remoting.Command {
		return e.invoke(sendV1("TL", 0, map[string]string{"TIMER_DELAY_SEC": "20"}, []byte("x")))
	}
	if r := send(); r.Code != remoting.Success {
		t.Fatalf("20 s timer: code %d remark %q", r.Code, r.Remark)
	}
	updateBrokerConfig(t, e, "timerMaxDelaySec=10\n")
	if r := send(); r.Code != remoting.MessageIllegal || !strings.Contains(r.Remark, "max delay") {
		t.Fatalf("20 s timer over a 10 s max: code %d remark %q", r.Code, r.Remark)
	}
}
