package store

import (
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/spoolmq/spool/internal/vfs"
)

// liveHeapObjects is the number of objects the heap holds after a full
// collection.
func liveHeapObjects() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapObjects
}

// TestSyncFlushPutsLeaveNoLiveObjects counts the heap objects still live
// after 100,000 SYNC_FLUSH puts: an answered put must leave nothing behind
// (no timer, deferred call or waiter record per wait).
func TestSyncFlushPutsLeaveNoLiveObjects(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 synced puts")
	}
	const (
		writers = 4
		warmup  = 5000
		puts    = 100000
	)
	cfg := DefaultConfig()
	cfg.StorePathRootDir = t.TempDir()
	cfg.StorePathCommitLog = filepath.Join(cfg.StorePathRootDir, "commitlog")
	cfg.MappedFileSizeCommitLog = 64 << 20 // every put in one file: no per-file state grows
	cfg.MessageIndexEnable = false
	cfg.FlushDiskType = SyncFlush
	cfg.SyncFlushTimeout = 60000
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()

	run := func(n int) {
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := benchMsg(128, int32(w))
				done := make(chan PutResult, 1)
				cb := func(r PutResult) { done <- r }
				for i := 0; i < n/writers; i++ {
					st.PutMessage(m, cb)
					if r := <-done; r.Status != PutOK {
						t.Errorf("put: %v %s", r.Status, r.Remark)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	run(warmup) // queues, files and pools created
	before := liveHeapObjects()
	run(puts)
	after := liveHeapObjects()
	growth := float64(int64(after)-int64(before)) / puts
	t.Logf("live heap objects %d -> %d over %d SYNC_FLUSH puts: %.4f per put", before, after, puts, growth)
	if growth > 0.01 {
		t.Fatalf("%.4f live heap objects left per SYNC_FLUSH put (want none)", growth)
	}
}
