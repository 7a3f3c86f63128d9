package timer

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

// jumpClock runs at wall-clock speed while the service works and jumps
// ahead whenever the delivery loop waits for a time, so a simulated hour
// takes only the time the deliveries cost, and lateness (simulated time at
// delivery - due) measures the real processing delays. It starts paused.
type jumpClock struct {
	mu     sync.Mutex
	base   time.Time
	anchor time.Time
	paused bool
	parked []chan time.Time
}

func newJumpClock(start time.Time) *jumpClock { return &jumpClock{base: start, paused: true} }

func (c *jumpClock) nowLocked() time.Time {
	if c.paused {
		return c.base
	}
	return c.base.Add(time.Since(c.anchor))
}

func (c *jumpClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked()
}

func (c *jumpClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *jumpClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if c.paused {
		c.parked = append(c.parked, ch)
		return ch
	}
	if d > 0 {
		c.base = c.base.Add(d)
	}
	ch <- c.nowLocked()
	return ch
}

func (c *jumpClock) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused = false
	c.anchor = time.Now()
	for _, ch := range c.parked {
		ch <- c.base
	}
	c.parked = nil
}

// millionSetup stores n timer records due uniformly over span after a
// second, then starts a service over them and waits until all are linked.
// It returns the service, the clock, the heap the service added (bytes),
// the delivered counter and the timer log's size on disk.
type millionRun struct {
	svc       *Service
	clk       *jumpClock
	heapDelta int64
	delivered *atomic.Int64
	logBytes  int64
	linkTime  time.Duration
}

func millionSetup(tb testing.TB, n int, span time.Duration) *millionRun {
	root := tb.TempDir()
	clk := newJumpClock(time.UnixMilli(t0))
	st := newMemStore(func() int64 { return clk.Now().UnixMilli() })
	st.log = make([]byte, 0, n*280)
	cfg := DefaultConfig()
	cfg.StorePathRootDir = root
	cfg.LogFileSize = 16 << 20
	cfg.FlushIntervalMs = 0
	cfg.ReadBytesPerSec = 0
	cfg.Clock = clk
	cfg.FS = vfs.OS()
	delivered := new(atomic.Int64)
	cfg.Deliver = func(m *message.Inner, done func(store.PutResult)) {
		delivered.Add(1)
		done(store.PutResult{Status: store.PutOK})
	}
	// A service that only rewrites messages fills the store.
	pre, err := New(cfg, st)
	if err != nil {
		tb.Fatal(err)
	}
	pre.state.Store(stateRunning)
	pre.w = &wheel{nslots: 1, counts: make([]atomic.Int32, 1)}
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		due := t0 + 1000 + rnd.Int64N(span.Milliseconds())
		m := timerMsg(strconv.Itoa(i), message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10))
		if ok, err := pre.Prepare(m); !ok || err != nil {
			tb.Fatalf("Prepare: %v %v", ok, err)
		}
		st.PutMessage(m, func(store.PutResult) {})
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := int64(ms.HeapAlloc)

	svc, err := New(cfg, st)
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	if err := svc.Start(); err != nil {
		tb.Fatal(err)
	}
	for svc.Stats().EnqueueOffset < int64(n) {
		time.Sleep(5 * time.Millisecond)
	}
	link := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	var logBytes int64
	files, _ := os.ReadDir(filepath.Join(root, "timerlog"))
	for _, f := range files {
		if fi, err := f.Info(); err == nil {
			logBytes += fi.Size()
		}
	}
	return &millionRun{svc: svc, clk: clk, heapDelta: int64(ms.HeapAlloc) - before, delivered: delivered, logBytes: logBytes, linkTime: link}
}

// TestMillionPendingBoundedHeap links a million pending timers and checks
// what they cost: the heap the service adds stays a few MB (the wheel's
// slot array, not per timer), the timer log is 32 bytes per timer.
func TestMillionPendingBoundedHeap(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a million timers: not with -short or -race")
	}
	const n = 1_000_000
	r := millionSetup(t, n, time.Hour)
	defer r.svc.Close()
	s := r.svc.Stats()
	t.Logf("linked %d timers in %v: service heap +%.1f MB, timer log %.1f MB, pending %d",
		n, r.linkTime, float64(r.heapDelta)/(1<<20), float64(r.logBytes)/(1<<20), s.Pending)
	if s.Pending != n {
		t.Fatalf("pending %d", s.Pending)
	}
	if r.heapDelta > 16<<20 {
		t.Fatalf("the service holds %d bytes of heap for %d pending timers", r.heapDelta, n)
	}
	if r.logBytes != n*entrySize {
		t.Fatalf("timer log is %d bytes, want %d", r.logBytes, n*entrySize)
	}
}

// BenchmarkLateness1M delivers a million pending timers due uniformly over
// a simulated span and reports the lateness percentiles (simulated ms; the
// clock runs at wall speed while the service works and skips idle time).
func BenchmarkLateness1M(b *testing.B) {
	for _, tc := range []struct {
		name string
		span time.Duration
	}{{"over1h", time.Hour}, {"over200s_5000perSec", 200 * time.Second}} {
		b.Run(tc.name, func(b *testing.B) {
			const n = 1_000_000
			r := millionSetup(b, n, tc.span)
			defer r.svc.Close()
			b.ResetTimer()
			start := time.Now()
			r.clk.start()
			for r.delivered.Load() < n || r.svc.Stats().Delivered < n {
				time.Sleep(5 * time.Millisecond)
			}
			wall := time.Since(start)
			b.StopTimer()
			s := r.svc.Stats()
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(s.Lateness.P50), "p50-late-ms")
			b.ReportMetric(ms(s.Lateness.P99), "p99-late-ms")
			b.ReportMetric(ms(s.Lateness.P999), "p999-late-ms")
			b.ReportMetric(ms(s.Lateness.Max), "max-late-ms")
			b.ReportMetric(float64(n)/wall.Seconds(), "deliveries/s")
			b.ReportMetric(float64(r.heapDelta)/(1<<20), "heap-MB")
			b.ReportMetric(float64(r.logBytes)/(1<<20), "timerlog-MB")
			if s.Pending != 0 {
				b.Fatalf("pending %d", s.Pending)
			}
		})
	}
}

// BenchmarkLatenessStore100k runs the whole path over the real store: 100,000
// timers due uniformly over 20 simulated seconds (5,000 due per second),
// delivered through Store.PutMessage into their real topic.
func BenchmarkLatenessStore100k(b *testing.B) {
	const n = 100_000
	root := b.TempDir()
	scfg := storeConfig(root)
	scfg.MappedFileSizeCommitLog = 64 << 20
	scfg.MappedFileSizeConsumeQueue = 300_000 * store.CQEntrySize
	scfg.FlushIntervalCommitLog = 500
	scfg.FlushCommitLogLeastPages = 4
	st, err := store.Open(scfg, vfs.OS(), nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Start(); err != nil {
		b.Fatal(err)
	}
	defer st.Shutdown()
	clk := newJumpClock(time.UnixMilli(t0))
	cfg := DefaultConfig()
	cfg.StorePathRootDir = root
	cfg.Clock = clk
	svc, err := New(cfg, st)
	if err != nil {
		b.Fatal(err)
	}
	if err := svc.Start(); err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	rnd := rand.New(rand.NewPCG(1, 2))
	var wg sync.WaitGroup
	for i := range n {
		due := t0 + 1000 + rnd.Int64N(20_000)
		wg.Add(1)
		ok, err := svc.Schedule(timerMsg(strconv.Itoa(i), message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10)),
			func(store.PutResult) { wg.Done() })
		if !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
	wg.Wait()
	for svc.Stats().EnqueueOffset < n {
		time.Sleep(5 * time.Millisecond)
	}
	b.ResetTimer()
	start := time.Now()
	clk.start()
	for svc.Stats().Delivered < n {
		time.Sleep(5 * time.Millisecond)
	}
	wall := time.Since(start)
	b.StopTimer()
	s := svc.Stats()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(s.Lateness.P50), "p50-late-ms")
	b.ReportMetric(ms(s.Lateness.P99), "p99-late-ms")
	b.ReportMetric(ms(s.Lateness.Max), "max-late-ms")
	b.ReportMetric(float64(n)/wall.Seconds(), "deliveries/s")
	if got := st.MaxOffsetInQueue("T", 0); s.Pending != 0 {
		b.Fatalf("pending %d, delivered records %d", s.Pending, got)
	}
}
