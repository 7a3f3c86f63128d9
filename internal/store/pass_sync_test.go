package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
)

// The gate of the loops' group commit: a slow sync closes it, and it
// opens again after loopSyncFastRun fast ones.
func TestLoopSyncGate(t *testing.T) {
	fast, slow := loopSyncFast, loopSyncFast+time.Microsecond
	runs := []struct {
		run  int32
		took time.Duration
		want int32
	}{
		{0, fast, 1},
		{loopSyncFastRun - 1, fast, loopSyncFastRun},
		{loopSyncFastRun, fast, loopSyncFastRun}, // capped
		{loopSyncFastRun, slow, 0},
		{3, 10 * time.Second, 0},
		{3, 0, 4},
	}
	for _, c := range runs {
		if got := nextFastRun(c.run, c.took); got != c.want {
			t.Errorf("nextFastRun(%d, %v) = %d, want %d", c.run, c.took, got, c.want)
		}
	}
	gates := []struct {
		syncFlush, enabled, failed bool
		run                        int32
		want                       bool
	}{
		{true, true, false, loopSyncFastRun, true},
		{true, true, false, loopSyncFastRun - 1, false},
		{false, true, false, loopSyncFastRun, false}, // ASYNC_FLUSH
		{true, false, false, loopSyncFastRun, false}, // syncFlushOnEventLoop=false
		{true, true, true, loopSyncFastRun, false},   // a failed sync
	}
	for _, c := range gates {
		if got := loopMaySync(c.syncFlush, c.enabled, c.failed, c.run); got != c.want {
			t.Errorf("loopMaySync(%v, %v, %v, %d) = %v, want %v", c.syncFlush, c.enabled, c.failed, c.run, got, c.want)
		}
	}
}

// putAnswer is a put's answer with what was flushed when it came.
type putAnswer struct {
	res     PutResult
	flushed int64
}

func putNoted(st *DefaultMessageStore, body string, out chan<- putAnswer) {
	st.PutMessage(testMsg("P", 0, body, ""), func(r PutResult) {
		out <- putAnswer{r, st.commitLog.flushedWhere.Load()}
	})
}

// openSyncFlush starts a SYNC_FLUSH store on the OS file system, shut
// down when the test ends.
func openSyncFlush(t *testing.T) (*DefaultMessageStore, *flusher) {
	cfg := testConfig(t)
	cfg.FlushDiskType = SyncFlush
	st := openStarted(t, cfg, vfs.OS())
	t.Cleanup(func() { st.Shutdown() })
	return st, st.commitLog.flusher
}

// A pass that begins with BeginPassSync has its SYNC_FLUSH puts synced and
// answered on the goroutine that calls EndPassSync, each answer after the
// flush covered its record; once the loops sync, the flusher's timer
// leaves the puts to them.
func TestPassSyncAnswersOnTheCaller(t *testing.T) {
	st, f := openSyncFlush(t)
	if st.BeginPassSync() {
		t.Fatal("a pass synced before any sync was seen fast")
	}
	const rounds, n = 20, 4
	answered := 0
	for round := range rounds {
		f.fastRun.Store(loopSyncFastRun) // a sync of this machine may be slow
		if !st.BeginPassSync() {
			t.Fatalf("round %d: BeginPassSync refused with fast syncs", round)
		}
		out := make(chan putAnswer, n)
		for i := range n {
			putNoted(st, fmt.Sprint(round, "-", i), out)
		}
		st.EndPassSync()
		if len(out) == n {
			answered++
		}
		for i := range n {
			select {
			case a := <-out:
				if a.res.Status != PutOK {
					t.Fatalf("round %d put %d: %+v", round, i, a.res)
				}
				if end := a.res.WroteOffset + int64(a.res.WroteBytes); a.flushed < end {
					t.Fatalf("round %d put %d answered with %d flushed, its record ends at %d", round, i, a.flushed, end)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: put %d not answered", round, i)
			}
		}
	}
	// The flusher's timer may take a first round's puts; after that the
	// loops' syncs keep it off.
	if answered < rounds/2 {
		t.Fatalf("puts answered by EndPassSync in %d of %d rounds", answered, rounds)
	}
	if st.Stats().LoopFlushes == 0 {
		t.Fatal("no flush counted as a loop's")
	}
	if f.onLoop.Load() != 0 {
		t.Fatalf("%d passes still counted as syncing", f.onLoop.Load())
	}
}

// A pass that finds the flusher syncing leaves its puts to it, and wakes
// it: no put waits for a timer.
func TestPassSyncLeavesABusyFlushToTheFlusher(t *testing.T) {
	st, f := openSyncFlush(t)
	f.fastRun.Store(loopSyncFastRun)
	// Keep the flusher's timer off, so only a kick can wake it, and let
	// a flush it began before that end.
	f.loopSynced.Store(f.c.monoNs() + int64(time.Hour))
	time.Sleep(50 * time.Millisecond)
	f.flushMu.Lock() // the flusher's sync, under way
	if !st.BeginPassSync() {
		f.flushMu.Unlock()
		t.Fatal("BeginPassSync refused")
	}
	out := make(chan putAnswer, 1)
	putNoted(st, "busy", out)
	st.EndPassSync()
	select {
	case a := <-out:
		f.flushMu.Unlock()
		t.Fatalf("answered while no sync could run: %+v", a.res)
	case <-time.After(20 * time.Millisecond):
	}
	f.flushMu.Unlock()
	select {
	case a := <-out:
		if end := a.res.WroteOffset + int64(a.res.WroteBytes); a.res.Status != PutOK || a.flushed < end {
			t.Fatalf("answer %+v with %d flushed", a.res, a.flushed)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the put was never answered: the flusher was not woken")
	}
}
