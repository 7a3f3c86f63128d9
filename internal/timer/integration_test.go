package timer

import (
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

// storeConfig is the Small test store with every flush pass writing
// what it has (the service's files are small).
func storeConfig(root string) store.Config {
	cfg := testkit.StoreConfig(root, testkit.Small)
	cfg.FlushCommitLogLeastPages = 0
	return cfg
}

// TestWithStore runs the service over the real store: timers survive clean
// restarts and crashes of the service (the store shuts down cleanly, the
// timer files lose what was not synced, with garbage in its place), the
// recovery scan crosses CommitLog file ends, and every message reaches its
// real topic once, never early.
func TestWithStore(t *testing.T) {
	root := t.TempDir()
	ffs := vfs.NewFaultFS(vfs.OS())
	ffs.SkipRealSync(true)
	clk := clock.NewManual(time.UnixMilli(t0))
	rnd := rand.New(rand.NewPCG(9, 9))
	var mu sync.Mutex
	due := map[string]int64{}
	var early []string

	var st *store.DefaultMessageStore
	open := func() *Service {
		var err error
		st, err = store.Open(storeConfig(root), vfs.OS(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Start(); err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.StorePathRootDir = root
		cfg.LogFileSize = 4096
		cfg.FlushIntervalMs = 20 // periodic checkpoints race with deliveries and crashes
		cfg.FS = ffs
		cfg.Clock = clk
		s := st
		cfg.Deliver = func(m *message.Inner, done func(store.PutResult)) {
			now := clk.Now().UnixMilli()
			k := m.Properties[message.PropertyKeys]
			mu.Lock()
			if now < due[k] {
				early = append(early, k)
			}
			mu.Unlock()
			s.PutMessage(m, done)
		}
		svc, err := New(cfg, st)
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Start(); err != nil {
			t.Fatal(err)
		}
		return svc
	}
	dueBy := func() int64 {
		mu.Lock()
		defer mu.Unlock()
		n := int64(0)
		for _, d := range due {
			if d <= clk.Now().UnixMilli() {
				n++
			}
		}
		return n
	}
	advance := func(d time.Duration) {
		clk.Advance(d)
		want := dueBy()
		waitFor(t, "deliveries", func() bool { return st.MaxOffsetInQueue("T", 0) >= want })
	}
	n := 0
	for round := range 5 {
		svc := open()
		for range 4 {
			for range rnd.IntN(60) {
				k := "k" + strconv.Itoa(n)
				n++
				d := 1 + rnd.Int64N(5000)
				mu.Lock()
				due[k] = clk.Now().UnixMilli() + d
				mu.Unlock()
				scheduleSync(t, svc, timerMsg(k, message.PropertyTimerDelayMS, strconv.FormatInt(d, 10)))
			}
			advance(time.Duration(rnd.IntN(800)) * time.Millisecond)
			if rnd.IntN(2) == 0 {
				if err := svc.Checkpoint(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if round%2 == 0 {
			svc.kill()
		} else if err := svc.Close(); err != nil {
			t.Fatal(err)
		}
		if err := st.Shutdown(); err != nil {
			t.Fatal(err)
		}
		if err := ffs.Crash(root, vfs.CrashOptions{Garbage: true, Rand: rnd}); err != nil {
			t.Fatal(err)
		}
	}
	svc := open()
	advance(10 * time.Second)
	if err := svc.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	phys := map[string][]int64{}
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
			k := e.Properties[message.PropertyKeys]
			seen[k]++
			phys[k] = append(phys[k], e.PhysicalOffset)
			if e.Properties[message.PropertyTimerOutMS] != strconv.FormatInt(due[k], 10) || e.Properties[PropertyTimerSource] == "" ||
				e.Properties[message.PropertyRealTopic] != "" || e.Properties[message.PropertyTimerDelayMS] != "" {
				t.Fatalf("%s: properties %v", k, e.Properties)
			}
		}
		off = r.NextBeginOffset
		r.Release()
	}
	for _, k := range sortedKeys(seen) {
		if seen[k] != 1 {
			t.Fatalf("%s delivered %d times: records at %v (timer records %v)", k, seen[k], phys[k], srcs(st, phys[k]))
		}
	}
	if len(seen) != n || len(early) > 0 {
		t.Fatalf("delivered %d of %d; early: %v", len(seen), n, early)
	}
	s := svc.Stats()
	if s.Pending != 0 || s.Lost != 0 || s.Corrupt != 0 || s.Malformed != 0 {
		t.Fatalf("stats %+v", s)
	}
	files, _ := ffs.ReadDir(filepath.Join(root, "timerlog"))
	t.Logf("scheduled %d, skipped as delivered on recovery %d, timer-log files left %d, stats %+v", n, s.SkippedDelivered, len(files), s)
	if len(files) > 1 {
		t.Fatalf("delivered timer-log files not removed: %v", files)
	}
	svc.Close()
	st.Shutdown()
}

// srcs lists the delivery markers of the records at offsets.
func srcs(st *store.DefaultMessageStore, offs []int64) []string {
	var out []string
	for _, o := range offs {
		rec, err := st.LookMessageByOffset(o)
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		e, _ := message.DecodeRecord(rec)
		out = append(out, e.Properties[PropertyTimerSource])
	}
	return out
}
