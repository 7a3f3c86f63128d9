package timer

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

const t0 = int64(1_700_000_000_123)

// harness is a service over a memStore driven by a fake clock, with a
// deliver function that checks every delivery against the due time the
// test expects.
type harness struct {
	t     *testing.T
	clk   *clock.Manual
	st    *memStore
	fs    vfs.FS
	root  string
	svc   *Service
	mu    sync.Mutex
	due   map[string]int64 // key -> due
	early []string
}

func newHarness(t *testing.T, fs vfs.FS) *harness {
	h := &harness{t: t, clk: clock.NewManual(time.UnixMilli(t0)), fs: fs, root: t.TempDir(), due: map[string]int64{}}
	h.st = newMemStore(func() int64 { return h.clk.Now().UnixMilli() })
	return h
}

func (h *harness) config() Config {
	cfg := DefaultConfig()
	cfg.StorePathRootDir = h.root
	cfg.LogFileSize = 4096
	cfg.FlushIntervalMs = 0
	cfg.FS = h.fs
	cfg.Clock = h.clk
	cfg.CommitLogFileSize = 1 << 30
	cfg.Deliver = h.deliver
	return cfg
}

func (h *harness) start(mod func(*Config)) *Service {
	h.t.Helper()
	cfg := h.config()
	if mod != nil {
		mod(&cfg)
	}
	svc, err := New(cfg, h.st)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := svc.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.svc = svc
	return svc
}

func (h *harness) deliver(m *message.Inner, done func(store.PutResult)) {
	now := h.clk.Now().UnixMilli()
	key := m.Properties[message.PropertyKeys]
	h.mu.Lock()
	if d, ok := h.due[key]; !ok || now < d {
		h.early = append(h.early, key+" at "+strconv.FormatInt(now-t0, 10)+" due "+strconv.FormatInt(d-t0, 10))
	}
	h.mu.Unlock()
	h.st.PutMessage(m, done)
}

// schedule sends a message with a random kind of timer due at now+delayMs.
func (h *harness) schedule(key string, delayMs int64, rnd *rand.Rand) {
	h.t.Helper()
	now := h.clk.Now().UnixMilli()
	var m *message.Inner
	switch rnd.IntN(3) {
	case 0:
		m = timerMsg(key, message.PropertyTimerDeliverMS, strconv.FormatInt(now+delayMs, 10))
	case 1:
		m = timerMsg(key, message.PropertyTimerDelayMS, strconv.FormatInt(delayMs, 10))
	default:
		delayMs = (delayMs/1000 + 1) * 1000
		m = timerMsg(key, message.PropertyTimerDelaySec, strconv.FormatInt(delayMs/1000, 10))
	}
	h.mu.Lock()
	h.due[key] = now + delayMs
	h.mu.Unlock()
	scheduleSync(h.t, h.svc, m)
}

// dueBy counts the keys due at or before now.
func (h *harness) dueBy(now int64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, d := range h.due {
		if d <= now {
			n++
		}
	}
	return n
}

// advance moves the clock and waits until everything due is delivered.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.clk.Advance(d)
	want := h.dueBy(h.clk.Now().UnixMilli())
	waitFor(h.t, "deliveries", func() bool { return len(h.st.records("T")) >= want })
	h.checkNotEarly()
}

func (h *harness) checkNotEarly() {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.early) > 0 {
		h.t.Fatalf("%d early deliveries, first: %s", len(h.early), h.early[0])
	}
}

// checkExactlyOnce verifies the real topic holds each key once, rebuilt as
// RocketMQ delivers a timer message.
func (h *harness) checkExactlyOnce() {
	h.t.Helper()
	seen := map[string]int{}
	for _, e := range h.st.records("T") {
		k := e.Properties[message.PropertyKeys]
		seen[k]++
		if e.Properties[message.PropertyTimerOutMS] != strconv.FormatInt(h.due[k], 10) {
			h.t.Fatalf("%s: TIMER_OUT_MS=%q want %d", k, e.Properties[message.PropertyTimerOutMS], h.due[k])
		}
		for _, p := range []string{message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyTimerDeliverMS,
			message.PropertyTimerDelayMS, message.PropertyTimerDelaySec} {
			if _, ok := e.Properties[p]; ok {
				h.t.Fatalf("%s: delivered with %s", k, p)
			}
		}
		if e.Properties[PropertyTimerSource] == "" || string(e.Body) != "body-"+k || e.Properties[message.PropertyTags] != "tg" {
			h.t.Fatalf("%s: delivered record %+v", k, e.Properties)
		}
	}
	for _, k := range sortedKeys(seen) {
		if seen[k] != 1 {
			h.t.Fatalf("%s delivered %d times", k, seen[k])
		}
	}
	if len(seen) != len(h.due) {
		h.t.Fatalf("delivered %d distinct messages, scheduled %d", len(seen), len(h.due))
	}
}

// TestNeverEarlyExactlyOnce is a property test: random due times (ms
// precision, three properties), random clock steps; nothing is delivered
// before its due time, everything exactly once.
func TestNeverEarlyExactlyOnce(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run("seed"+strconv.Itoa(int(seed)), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 7))
			h := newHarness(t, vfs.OS())
			svc := h.start(nil)
			defer svc.Close()
			n := 0
			for h.clk.Now().UnixMilli() < t0+15_000 {
				for range rnd.IntN(60) {
					h.schedule("k"+strconv.Itoa(n), 1+rnd.Int64N(8000), rnd)
					n++
				}
				h.advance(time.Duration(1+rnd.IntN(700)) * time.Millisecond)
			}
			h.advance(10 * time.Second)
			h.checkExactlyOnce()
			s := svc.Stats()
			if s.Pending != 0 || s.Delivered != int64(n) || s.Lateness.Count != uint64(n) {
				t.Fatalf("stats: %+v (scheduled %d)", s, n)
			}
		})
	}
}

// TestCrashRecoveryExactlyOnce kills the service at random points (no
// checkpoint, unsynced timer files lost as after a power cut), restarts it
// on the same store and checks nothing is lost, duplicated or early.
func TestCrashRecoveryExactlyOnce(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run("seed"+strconv.Itoa(int(seed)), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 11))
			ffs := vfs.NewFaultFS(vfs.OS())
			ffs.SkipRealSync(true)
			h := newHarness(t, ffs)
			n := 0
			for round := range 6 {
				svc := h.start(nil)
				for range 3 + rnd.IntN(4) {
					for range rnd.IntN(80) {
						h.schedule("k"+strconv.Itoa(n), 1+rnd.Int64N(6000), rnd)
						n++
					}
					h.advance(time.Duration(rnd.IntN(900)) * time.Millisecond)
					if rnd.IntN(3) == 0 {
						if err := svc.Checkpoint(); err != nil {
							t.Fatal(err)
						}
					}
				}
				if round%3 == 2 {
					if err := svc.Close(); err != nil {
						t.Fatal(err)
					}
				} else {
					svc.kill()
				}
				if err := ffs.Crash(h.root, vfs.CrashOptions{Garbage: round%2 == 1, Rand: rnd}); err != nil {
					t.Fatal(err)
				}
			}
			svc := h.start(nil)
			defer svc.Close()
			h.advance(10 * time.Second)
			h.checkExactlyOnce()
			if s := svc.Stats(); s.Pending != 0 || s.Lost != 0 || s.Corrupt != 0 {
				t.Fatalf("pending %d after everything was delivered: %+v", s.Pending, s)
			}
		})
	}
}

// TestRefusals covers the answers of Prepare/Schedule.
func TestRefusals(t *testing.T) {
	h := newHarness(t, vfs.OS())
	cfg := h.config()
	early, err := New(cfg, h.st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := early.Prepare(timerMsg("a", message.PropertyTimerDelaySec, "5")); !errors.Is(err, ErrNotRunning) || ResponseCode(err) != remoting.ServiceNotAvailable {
		t.Fatalf("before Start: %v", err)
	}
	svc := h.start(func(c *Config) { c.CongestNumEachSlot = 1 })
	defer svc.Close()
	now := h.clk.Now().UnixMilli()
	maxMs := cfg.MaxDelaySec * 1000
	illegal := []*message.Inner{
		timerMsg("a", message.PropertyTimerDelaySec, strconv.FormatInt(cfg.MaxDelaySec+1, 10)),
		timerMsg("b", message.PropertyTimerDelayMS, strconv.FormatInt(maxMs+1, 10)),
		timerMsg("c", message.PropertyTimerDeliverMS, strconv.FormatInt(now+maxMs+1, 10)),
		timerMsg("d", message.PropertyTimerDeliverMS, "12x"),
		timerMsg("e", message.PropertyTimerDelaySec, ""),
		timerMsg("f", message.PropertyTimerDelaySec, "99999999999999999"),
	}
	for _, m := range illegal {
		ok, err := svc.Schedule(m, func(store.PutResult) { t.Fatal("done called for a refused message") })
		if ok || !errors.Is(err, ErrIllegal) || ResponseCode(err) != remoting.MessageIllegal {
			t.Fatalf("%v: ok=%v err=%v", m.Properties, ok, err)
		}
		t.Logf("remark: %v", err)
	}
	// Exactly the max delay is accepted.
	h.due["max"] = now + maxMs
	scheduleSync(t, svc, timerMsg("max", message.PropertyTimerDeliverMS, strconv.FormatInt(now+maxMs, 10)))

	// Stored as they are: past due, DELAY level, delivered before, half.
	past := timerMsg("p", message.PropertyTimerDeliverMS, strconv.FormatInt(now-1, 10))
	delayed := timerMsg("q", message.PropertyTimerDelaySec, "10")
	delayed.Properties[message.PropertyDelayTimeLevel] = "3"
	redelivered := timerMsg("r", message.PropertyTimerDelaySec, "10")
	redelivered.Properties[message.PropertyTimerOutMS] = "1"
	half := timerMsg("s", message.PropertyTimerDelaySec, "10")
	half.SysFlag = message.TransactionPreparedType
	plain := timerMsg("u", message.PropertyTags, "x")
	for _, m := range []*message.Inner{past, delayed, redelivered, half, plain} {
		if ok, err := svc.Prepare(m); ok || err != nil || m.Topic != "T" {
			t.Fatalf("%v: ok=%v err=%v topic=%s", m.Properties, ok, err, m.Topic)
		}
	}
	if HasTimerProperty(delayed.Properties) || delayed.PropertiesString == "" {
		t.Fatalf("DELAY level kept timer properties: %v", delayed.Properties)
	}

	// A message carrying only its encoded property string.
	enc := timerMsg("enc", message.PropertyTimerDelaySec, "2")
	enc.PropertiesString = message.EncodeProperties(enc.Properties)
	enc.Properties = nil
	h.due["enc"] = now + 2000
	scheduleSync(t, svc, enc)
	if enc.Topic != Topic || message.DecodeProperties(enc.PropertiesString)[message.PropertyRealTopic] != "T" {
		t.Fatalf("rewritten: topic %s props %q", enc.Topic, enc.PropertiesString)
	}

	// Flow control: with timerCongestNumEachSlot=1, a second holding two
	// timers refuses the next.
	for i := range 2 {
		k := "fc" + strconv.Itoa(i)
		h.due[k] = now + 5000
		scheduleSync(t, svc, timerMsg(k, message.PropertyTimerDeliverMS, strconv.FormatInt(now+5000, 10)))
	}
	waitFor(t, "linking", func() bool { return svc.Stats().EnqueueOffset == 4 })
	ok, err := svc.Schedule(timerMsg("fc2", message.PropertyTimerDeliverMS, strconv.FormatInt(now+5500, 10)), nil)
	if ok || !errors.Is(err, ErrFlowControl) || ResponseCode(err) != remoting.SystemError {
		t.Fatalf("flow control: ok=%v err=%v", ok, err)
	}
	t.Logf("remark: %v", err)
	// Another second is free.
	h.due["fc3"] = now + 6000
	scheduleSync(t, svc, timerMsg("fc3", message.PropertyTimerDeliverMS, strconv.FormatInt(now+6000, 10)))
	s := svc.Stats()
	if s.RejectedIllegal != int64(len(illegal)) || s.RejectedFlowControl != 1 || s.Scheduled != 5 {
		t.Fatalf("stats %+v", s)
	}
}

// TestRollsBeyondTheWheel uses a tiny wheel so that timers wait in their
// slot for later rounds.
func TestRollsBeyondTheWheel(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 3))
	h := newHarness(t, vfs.OS())
	svc := h.start(func(c *Config) { c.WheelSlots = 7 })
	defer svc.Close()
	for i := range 200 {
		h.schedule("k"+strconv.Itoa(i), 1+rnd.Int64N(40_000), rnd)
	}
	for h.clk.Now().UnixMilli() < t0+42_000 {
		h.advance(time.Duration(1+rnd.IntN(1500)) * time.Millisecond)
	}
	h.checkExactlyOnce()
	if s := svc.Stats(); s.Rolled == 0 || s.Pending != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestDeliveryRetry makes the store refuse deliveries for a while.
func TestDeliveryRetry(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 5))
	h := newHarness(t, vfs.OS())
	svc := h.start(nil)
	defer svc.Close()
	for i := range 20 {
		h.schedule("k"+strconv.Itoa(i), 1+rnd.Int64N(2000), rnd)
	}
	var mu sync.Mutex
	refuse := true
	h.st.fail = func(m *message.Inner) *store.PutResult {
		mu.Lock()
		defer mu.Unlock()
		if refuse && m.Topic == "T" {
			return &store.PutResult{Status: store.ServiceNotAvailable, Remark: "disk full"}
		}
		return nil
	}
	h.clk.Advance(3 * time.Second)
	waitFor(t, "retries", func() bool { return svc.Stats().Retries >= 1 })
	if n := len(h.st.records("T")); n != 0 {
		t.Fatalf("%d delivered while the store refuses", n)
	}
	mu.Lock()
	refuse = false
	mu.Unlock()
	// A refusal answered after this point is retried a second after the
	// clock it saw: keep the clock moving until everything is delivered.
	waitFor(t, "deliveries", func() bool {
		h.clk.Advance(100 * time.Millisecond)
		return len(h.st.records("T")) >= 20
	})
	h.checkNotEarly()
	h.checkExactlyOnce()
	if s := svc.Stats(); s.Pending != 0 || s.Delivered != 20 {
		t.Fatalf("stats %+v", s)
	}
}

// TestRecoveryKeepsMarkersUntilPassed: run A delivers four timers after its
// last checkpoint and is killed; run B recovers (finding A's markers),
// moves its cursor one slot and checkpoints while A's later markers are
// still unmatched, and is killed; run C must still find those markers.
func TestRecoveryKeepsMarkersUntilPassed(t *testing.T) {
	h := newHarness(t, vfs.OS())
	a := h.start(nil)
	s0 := h.clk.Now().UnixMilli()/1000 + 1
	for k := range int64(4) {
		key := "a" + strconv.Itoa(int(k))
		h.due[key] = (s0+k)*1000 + 500
		scheduleSync(t, a, timerMsg(key, message.PropertyTimerDeliverMS, strconv.FormatInt(h.due[key], 10)))
	}
	h.due["x"] = (s0+1)*1000 + 600
	scheduleSync(t, a, timerMsg("x", message.PropertyTimerDeliverMS, strconv.FormatInt(h.due["x"], 10)))
	waitFor(t, "linking", func() bool { return a.Stats().EnqueueOffset == 5 })
	if err := a.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	// A drops x (the store refuses it for good) and delivers a0..a3.
	h.st.fail = func(m *message.Inner) *store.PutResult {
		if m.Properties[message.PropertyKeys] == "x" {
			return &store.PutResult{Status: store.MessageIllegal, Remark: "refused"}
		}
		return nil
	}
	h.clk.Advance(time.Duration((s0+4)*1000-h.clk.Now().UnixMilli()) * time.Millisecond)
	waitFor(t, "A's deliveries", func() bool { return len(h.st.records("T")) == 4 && a.Stats().Dropped == 1 })
	a.kill()
	h.st.fail = nil

	// B delivers x but never hears back, so its cursor stays at x's slot
	// while a2 and a3 are still in its skip set.
	xSeen := make(chan struct{})
	b := h.start(func(c *Config) {
		c.Deliver = func(m *message.Inner, done func(store.PutResult)) {
			if m.Properties[message.PropertyKeys] == "x" {
				close(xSeen)
				return
			}
			h.deliver(m, done)
		}
	})
	<-xSeen
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if got := b.Stats().Cursor; got != s0+1 {
		t.Fatalf("B's cursor %d, want %d", got, s0+1)
	}
	b.kill()

	c := h.start(nil)
	defer c.Close()
	h.advance(time.Second)
	// x's delivery is what advance waits for; a2's and a3's later slots
	// may still be under way, so wait for C to pass them.
	waitFor(t, "C past every slot", func() bool { s := c.Stats(); return s.Pending == 0 })
	h.checkExactlyOnce()
	if s := c.Stats(); s.SkippedDelivered != 3 || s.Pending != 0 { // a1, a2, a3
		t.Fatalf("C: %+v", s)
	}
}

// TestPowerLossExactlyOnce: the store loses its unflushed CommitLog tail
// (timer records and deliveries alike, as ASYNC_FLUSH allows) together
// with the unsynced timer files. Every timer whose record survived is
// delivered exactly once, never early; nothing refers to a lost record.
func TestPowerLossExactlyOnce(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run("seed"+strconv.Itoa(int(seed)), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 21))
			ffs := vfs.NewFaultFS(vfs.OS())
			ffs.SkipRealSync(true)
			h := newHarness(t, ffs)
			h.st.manualFlush = true
			// surviving lists the keys whose timer record is in the store.
			surviving := func() map[string]bool {
				out := map[string]bool{}
				for _, e := range h.st.records(Topic) {
					out[e.Properties[message.PropertyKeys]] = true
				}
				return out
			}
			advance := func(d time.Duration) {
				h.clk.Advance(d)
				now := h.clk.Now().UnixMilli()
				want := 0
				for k := range surviving() {
					if h.due[k] <= now {
						want++
					}
				}
				waitFor(t, "deliveries", func() bool { return len(h.st.records("T")) >= want })
				h.checkNotEarly()
			}
			start := func() *Service {
				svc := h.start(nil)
				svc.flushWait = 20 * time.Millisecond
				return svc
			}
			n := 0
			for round := range 6 {
				svc := start()
				for range 3 + rnd.IntN(4) {
					for range rnd.IntN(60) {
						h.schedule("k"+strconv.Itoa(n), 1+rnd.Int64N(5000), rnd)
						n++
					}
					advance(time.Duration(rnd.IntN(900)) * time.Millisecond)
					if rnd.IntN(2) == 0 {
						h.st.flush()
					}
					if rnd.IntN(2) == 0 {
						if err := svc.Checkpoint(); err != nil {
							t.Fatal(err)
						}
					}
				}
				svc.kill()
				h.st.crashTail()
				if err := ffs.Crash(h.root, vfs.CrashOptions{Garbage: round%2 == 0, Rand: rnd}); err != nil {
					t.Fatal(err)
				}
			}
			svc := start()
			defer svc.Close()
			advance(10 * time.Second)
			keep := surviving()
			seen := map[string]int{}
			for _, e := range h.st.records("T") {
				k := e.Properties[message.PropertyKeys]
				seen[k]++
				if !keep[k] {
					t.Fatalf("%s delivered but its timer record is gone", k)
				}
			}
			for k := range keep {
				if seen[k] != 1 {
					t.Fatalf("%s delivered %d times", k, seen[k])
				}
			}
			s := svc.Stats()
			if s.Pending != 0 || s.Lost != 0 || s.Corrupt != 0 {
				t.Fatalf("stats %+v", s)
			}
			t.Logf("scheduled %d, survived %d, delivered once each", n, len(keep))
		})
	}
}

// TestReplayBeforeDelivery: after a restart, timers delivered by the last
// run but missing from its checkpoint come back through the consume-queue
// replay; delivery must not start (and forget the markers) before that
// replay is done, however slow it is.
func TestReplayBeforeDelivery(t *testing.T) {
	h := newHarness(t, vfs.OS())
	a := h.start(nil)
	if err := a.Checkpoint(); err != nil { // before any timer exists
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(2, 2))
	for i := range 5 {
		h.schedule("k"+strconv.Itoa(i), 500+int64(i)*500, rnd)
	}
	h.advance(4 * time.Second)
	a.kill()
	h.clk.Advance(5 * time.Second)

	release := make(chan struct{})
	var once sync.Once
	entered := make(chan struct{})
	hook := func(topic string, maxMsgNums int32) {
		// Start's one-message look at the queue's end passes; the enqueue
		// goroutine's batch reads are held back.
		if topic == Topic && maxMsgNums > 1 {
			once.Do(func() { close(entered) })
			<-release
		}
	}
	h.st.getHook.Store(&hook)
	b := h.start(nil)
	defer b.Close()
	<-entered
	// Give a delivery loop that does not wait for the replay the chance to
	// run past the restart's second (it would forget the markers).
	limit := h.clk.Now().UnixMilli()/1000 + 1
	deadline := time.Now().Add(300 * time.Millisecond)
	for b.Stats().Cursor <= limit && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(release)
	h.clk.Advance(time.Second)
	waitFor(t, "the replay", func() bool {
		s := b.Stats()
		return !s.Recovering && s.Pending == 0 && s.EnqueueOffset == 5
	})
	h.clk.Advance(time.Second)
	if err := b.Checkpoint(); err != nil { // a round trip through the loop's lock
		t.Fatal(err)
	}
	h.checkExactlyOnce()
	if s := b.Stats(); s.SkippedDelivered != 5 {
		t.Fatalf("stats %+v", s)
	}
}

// TestCheckpointRetriedAfterENOSPC: a wheel image that finds the disk full
// fails that checkpoint only; the next one, with space back, succeeds (a
// failed sync, by contrast, stops checkpoints for good).
func TestCheckpointRetriedAfterENOSPC(t *testing.T) {
	ffs := vfs.NewFaultFS(vfs.OS())
	h := newHarness(t, ffs)
	svc := h.start(nil)
	rnd := rand.New(rand.NewPCG(5, 6))
	for i := range 20 {
		h.schedule("e"+strconv.Itoa(i), 1000+int64(i), rnd)
	}
	ffs.SetENOSPCOn("timerwheel", true, true)
	err := svc.Checkpoint()
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("checkpoint on a full disk: %v", err)
	}
	ffs.SetENOSPCOn("", false, false)
	if err := svc.Checkpoint(); err != nil {
		t.Fatalf("checkpoint after space returned: %v", err)
	}
	h.advance(5 * time.Second)
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	h.checkExactlyOnce()
}
