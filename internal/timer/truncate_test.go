package timer

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

// TestTruncateTo: after a CommitLog truncation the timers of cut records
// are never delivered, not even when new timer records are written at
// the same offsets with the same due times, and the timer topic's queue
// is linked again from its new end; both hold across a crash of the
// service right after the cut.
func TestTruncateTo(t *testing.T) {
	root := t.TempDir()
	clk := clock.NewManual(time.UnixMilli(t0))
	st, err := store.Open(storeConfig(root), vfs.OS(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	defer st.Shutdown()
	open := func() *Service {
		cfg := DefaultConfig()
		cfg.StorePathRootDir = root
		cfg.LogFileSize = 4096
		cfg.FlushIntervalMs = 0
		cfg.Clock = clk
		svc, err := New(cfg, st)
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Start(); err != nil {
			t.Fatal(err)
		}
		return svc
	}
	linked := func(svc *Service, n int64) {
		waitFor(t, "timers linked", func() bool {
			svc.mu.Lock()
			defer svc.mu.Unlock()
			return svc.w.enqOffset >= n
		})
	}
	sched := func(svc *Service, key string, delayMs int64) {
		scheduleSync(t, svc, timerMsg(key, message.PropertyTimerDelayMS, strconv.FormatInt(delayMs, 10)))
	}
	svc := open()
	sched(svc, "a0", 5000)
	sched(svc, "a1", 6000)
	cut := st.MaxPhyOffset()
	for i := range 5 {
		sched(svc, "b"+strconv.Itoa(i), int64(7000+i*1000))
	}
	linked(svc, 7)

	if _, err := st.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	if err := svc.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	svc.mu.Lock()
	enq := svc.w.enqOffset
	svc.mu.Unlock()
	if enq != 2 {
		t.Fatalf("linked offset %d after the cut, want the queue's end 2", enq)
	}
	if b, err := os.ReadFile(filepath.Join(root, cutFileName)); err != nil || len(b) == 0 {
		t.Fatalf("cut file: %q %v", b, err)
	}
	// A crash right after the cut: the new service reads the cut back.
	svc.kill()
	svc = open()
	// New records at the offsets of b0..b2, due when they were, and one
	// more (at b3's offset) due later.
	for i := range 3 {
		sched(svc, "c"+strconv.Itoa(i), int64(7000+i*1000))
	}
	sched(svc, "d0", 12500)
	linked(svc, 6)

	clk.Advance(15 * time.Second)
	waitFor(t, "deliveries", func() bool { return st.MaxOffsetInQueue("T", 0) >= 6 })
	time.Sleep(50 * time.Millisecond) // a duplicate would be delivered by now
	seen := map[string]int{}
	for off := int64(0); off < st.MaxOffsetInQueue("T", 0); {
		r := st.GetMessage("g", "T", 0, off, 32, 1<<20, nil)
		if r.Status != store.Found {
			t.Fatalf("offset %d: %v", off, r.Status)
		}
		for _, rec := range r.Buffers {
			e, err := message.DecodeRecord(rec)
			if err != nil {
				t.Fatal(err)
			}
			seen[e.Properties[message.PropertyKeys]]++
		}
		off = r.NextBeginOffset
		r.Release()
	}
	want := map[string]int{"a0": 1, "a1": 1, "c0": 1, "c1": 1, "c2": 1, "d0": 1}
	if len(seen) != len(want) {
		t.Fatalf("delivered %v, want %v", seen, want)
	}
	for k, n := range want {
		if seen[k] != n {
			t.Fatalf("delivered %v, want %v", seen, want)
		}
	}
	if s := svc.Stats(); s.Pending != 0 || s.Truncated != 5 {
		t.Fatalf("stats %+v", s)
	}
	svc.Close()
}

// TestTruncateClosedWheel: a wheel closed before the CommitLog is cut
// (a master becoming slave) has its files cut by TruncateTo, so that
// once the log has filled again past the cut with another master's timer
// records, the wheel started again delivers those records when they are
// due and never the timers of cut records, whose entries now point into
// the new records.
func TestTruncateClosedWheel(t *testing.T) {
	root := t.TempDir()
	clk := clock.NewManual(time.UnixMilli(t0))
	st, err := store.Open(storeConfig(root), vfs.OS(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	defer st.Shutdown()
	open := func(dir string) *Service {
		cfg := DefaultConfig()
		cfg.StorePathRootDir = dir
		cfg.LogFileSize = 4096
		cfg.FlushIntervalMs = 0
		cfg.Clock = clk
		svc, err := New(cfg, st)
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Start(); err != nil {
			t.Fatal(err)
		}
		return svc
	}
	sched := func(svc *Service, key string, delayMs int64) {
		scheduleSync(t, svc, timerMsg(key, message.PropertyTimerDelayMS, strconv.FormatInt(delayMs, 10)))
	}
	svc := open(root)
	sched(svc, "a0", 5000)
	sched(svc, "a1", 6000)
	cut := st.MaxPhyOffset()
	for i := range 5 {
		sched(svc, "b"+strconv.Itoa(i), int64(7000+i*1000))
	}
	waitFor(t, "timers linked", func() bool { return svc.Stats().EnqueueOffset >= 7 })
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	if err := svc.TruncateTo(cut); err != nil {
		t.Fatalf("TruncateTo on the closed wheel: %v", err)
	}
	// Another master's timer records at the offsets of b0..b3, due later.
	other := open(t.TempDir())
	for i := range 4 {
		sched(other, "c"+strconv.Itoa(i), int64(20000+i*1000))
	}
	other.kill()

	svc = open(root)
	defer svc.Close()
	waitFor(t, "timers linked again", func() bool { return svc.Stats().EnqueueOffset >= 6 })
	clk.Advance(12 * time.Second)
	waitFor(t, "a0 and a1", func() bool { return st.MaxOffsetInQueue("T", 0) >= 2 })
	waitFor(t, "the cursor past 12 s", func() bool { return svc.Stats().Cursor >= (t0+12000)/1000 })
	if n := st.MaxOffsetInQueue("T", 0); n != 2 {
		t.Fatalf("%d messages delivered by 12 s, want a0 and a1 only (a cut timer delivered a new record early)", n)
	}
	clk.Advance(20 * time.Second)
	waitFor(t, "deliveries", func() bool { return st.MaxOffsetInQueue("T", 0) >= 6 })
	time.Sleep(50 * time.Millisecond) // a duplicate would be delivered by now
	seen := map[string]int{}
	for off := int64(0); off < st.MaxOffsetInQueue("T", 0); {
		r := st.GetMessage("g", "T", 0, off, 32, 1<<20, nil)
		if r.Status != store.Found {
			t.Fatalf("offset %d: %v", off, r.Status)
		}
		for _, rec := range r.Buffers {
			e, err := message.DecodeRecord(rec)
			if err != nil {
				t.Fatal(err)
			}
			seen[e.Properties[message.PropertyKeys]]++
		}
		off = r.NextBeginOffset
		r.Release()
	}
	want := map[string]int{"a0": 1, "a1": 1, "c0": 1, "c1": 1, "c2": 1, "c3": 1}
	if len(seen) != len(want) {
		t.Fatalf("delivered %v, want %v", seen, want)
	}
	for k, n := range want {
		if seen[k] != n {
			t.Fatalf("delivered %v, want %v", seen, want)
		}
	}
}
