package store

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

// commitLogOps counts the writes and syncs of CommitLog files through the
// FS seam; the first CommitLog write waits on gate when gate is set.
type commitLogOps struct {
	writes, syncs atomic.Int64
	gate          chan struct{}
	gated         atomic.Bool
}

func (o *commitLogOps) hook(op vfs.Op, name string) {
	if !strings.Contains(name, "commitlog") {
		return
	}
	switch op {
	case vfs.OpWrite:
		o.writes.Add(1)
		if o.gate != nil && o.gated.CompareAndSwap(false, true) {
			<-o.gate
		}
	case vfs.OpSync:
		o.syncs.Add(1)
	}
}

// TestConcurrentPutsShareWrites holds the first CommitLog pwrite until n
// concurrent puts have been placed: the others' records are written by
// runs of the group writer, so the file sees far fewer than n writes (and
// under SYNC_FLUSH far fewer than n syncs), and every put is answered OK
// and readable.
func TestConcurrentPutsShareWrites(t *testing.T) {
	for _, flush := range []string{AsyncFlush, SyncFlush} {
		t.Run(flush, func(t *testing.T) {
			const n = 16
			cfg := testConfig(t)
			cfg.MappedFileSizeCommitLog = 1 << 20
			cfg.FlushDiskType = flush
			cfg.WriteWithoutMmap = true
			fs := vfs.NewInjector(vfs.OS())
			st := openStarted(t, cfg, fs)
			defer st.Shutdown()
			mustPut(t, st, testMsg("G", 0, "warm", "")) // the first file is in use
			ops := &commitLogOps{gate: make(chan struct{})}
			fs.SetHook(ops.hook)

			results := make(chan PutResult, n)
			var returned atomic.Int64
			for i := 0; i < n; i++ {
				go func() {
					st.PutMessage(testMsg("G", 0, fmt.Sprint("g", i), ""), func(r PutResult) { results <- r })
					returned.Add(1)
				}()
			}
			// Every put but the one stuck in its write returns (its answer
			// may be held); then the write goes on.
			for returned.Load() < n-1 {
				runtimeGosched()
			}
			close(ops.gate)
			want := map[int64]string{0: "warm"}
			for i := 0; i < n; i++ {
				r := <-results
				if r.Status != PutOK {
					t.Fatalf("put: %v %s", r.Status, r.Remark)
				}
				want[r.QueueOffset] = ""
			}
			writes, syncs := ops.writes.Load(), ops.syncs.Load()
			t.Logf("%d puts: %d CommitLog writes, %d syncs", n, writes, syncs)
			if writes >= n/2 {
				t.Fatalf("%d concurrent puts made %d CommitLog writes, want fewer than %d", n, writes, n/2)
			}
			if flush == SyncFlush && syncs >= n/2 {
				t.Fatalf("%d concurrent SYNC_FLUSH puts made %d syncs, want fewer than %d", n, syncs, n/2)
			}
			waitDispatched(t, st, "G", 0, n+1)
			for qo := int64(1); qo <= n; qo++ {
				g := st.GetMessage("g", "G", 0, qo, 1, 0, nil)
				if g.Status != Found || len(g.Buffers) != 1 {
					t.Fatalf("queue offset %d: %v", qo, g.Status)
				}
				g.Release()
			}
		})
	}
}

// TestBatchIsOneWrite stores a batch of small records with one pwrite.
func TestBatchIsOneWrite(t *testing.T) {
	cfg := testConfig(t)
	cfg.WriteWithoutMmap = true
	fs := vfs.NewInjector(vfs.OS())
	st := openStarted(t, cfg, fs)
	defer st.Shutdown()
	mustPut(t, st, testMsg("B", 0, "first", ""))
	ops := &commitLogOps{}
	fs.SetHook(ops.hook)
	b := &message.Batch{Topic: "B", QueueID: 0, BornHost: message.Addr{IP: []byte{1, 2, 3, 4}, Port: 1},
		StoreHost: message.Addr{IP: []byte{1, 2, 3, 5}, Port: 2}}
	for i := 0; i < 32; i++ {
		b.Members = append(b.Members, message.BatchMember{Body: []byte(fmt.Sprint("m", i)), PropertiesString: "TAGS\x01X\x02"})
	}
	ch := make(chan PutResult, 1)
	st.PutMessages(b, func(r PutResult) { ch <- r })
	if r := <-ch; r.Status != PutOK || r.MsgNum != 32 {
		t.Fatalf("batch: %+v", r)
	}
	if w := ops.writes.Load(); w != 1 {
		t.Fatalf("a batch of 32 made %d CommitLog writes, want 1", w)
	}
}

// TestCrashDuringConcurrentWrites kills the store while concurrent puts
// write: under ASYNC_FLUSH a process kill (the page
// cache survives) and under SYNC_FLUSH a machine crash (only synced bytes
// survive, the rest garbage) must keep every acknowledged put.
func TestCrashDuringConcurrentWrites(t *testing.T) {
	for _, flush := range []string{AsyncFlush, SyncFlush} {
		t.Run(flush, func(t *testing.T) {
			for round := 0; round < 3; round++ {
				cfg := testConfig(t)
				cfg.FlushDiskType = flush
				cfg.WriteWithoutMmap = true
				fs := vfs.NewFaultFS(vfs.OS())
				fs.SkipRealSync(true)
				st := openStarted(t, cfg, fs)
				var mu sync.Mutex
				want := map[int64]string{}
				var acked atomic.Int64
				dead := make(chan struct{})
				var wg sync.WaitGroup
				for g := 0; g < 6; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; ; i++ {
							body := fmt.Sprintf("%d-%d-%d-%s", round, g, i, strings.Repeat("x", (i*53)%300))
							ch := make(chan PutResult, 1)
							st.PutMessage(testMsg("CG", 0, body, ""), func(r PutResult) { ch <- r })
							var r PutResult
							select {
							case r = <-ch:
							case <-dead: // a killed process answers nothing more
								return
							}
							if r.Status != PutOK {
								continue
							}
							mu.Lock()
							want[r.QueueOffset] = body
							mu.Unlock()
							acked.Add(1)
						}
					}()
				}
				for acked.Load() < int64(200+round*150) {
					runtimeGosched()
				}
				crash(st) // while the puts go on
				close(dead)
				wg.Wait()
				if flush == SyncFlush {
					if err := fs.Crash(cfg.StorePathRootDir, vfs.CrashOptions{Garbage: true, Rand: rand.New(rand.NewPCG(uint64(round), 7))}); err != nil {
						t.Fatal(err)
					}
				}
				st = openStarted(t, cfg, vfs.OS())
				var top int64
				for qo := range want {
					top = max(top, qo+1)
				}
				waitDispatched(t, st, "CG", 0, top)
				checkAll(t, st, "CG", 0, want)
				st.Shutdown()
			}
		})
	}
}

// TestHeldPutAfterFailedWriteIsRefused is the race of a put that found its
// records behind an unfinished range, checked the write flags before an
// earlier write failed, and registers to wait after the failing writer
// answered the held puts: it is refused at once rather than held behind a
// range that never becomes readable.
func TestHeldPutAfterFailedWriteIsRefused(t *testing.T) {
	for _, flag := range []string{"write error", "no space"} {
		t.Run(flag, func(t *testing.T) {
			st := openStarted(t, testConfig(t), vfs.OS())
			defer st.Shutdown()
			mustPut(t, st, testMsg("F", 0, "x", ""))
			c := st.commitLog
			f := &c.writeFailed
			if flag == "no space" {
				f = &c.writeNoSpace
			}
			f.Store(true)
			defer f.Store(false)
			var got *PutResult
			c.holdForVisible(c.visible.Load()+100, PutResult{Status: PutOK}, func(r PutResult) { got = &r })
			if got == nil {
				t.Fatal("the put is held behind a failed write")
			}
			if got.Status != ServiceNotAvailable || got.Remark == "" {
				t.Fatalf("answer %+v, want SERVICE_NOT_AVAILABLE with a remark", *got)
			}
		})
	}
}

// TestGatheredWritesAreOne: the puts made while the caller gathers
// (GatherWrites) are neither written nor answered until ReleaseWrites,
// which writes them with one pwrite and answers each; under SYNC_FLUSH
// the answers still wait for the sync. With mapped writes nothing is
// gathered.
func TestGatheredWritesAreOne(t *testing.T) {
	for _, flush := range []string{AsyncFlush, SyncFlush} {
		t.Run(flush, func(t *testing.T) {
			const n = 12
			cfg := testConfig(t)
			cfg.FlushDiskType = flush
			cfg.WriteWithoutMmap = true
			fs := vfs.NewInjector(vfs.OS())
			st := openStarted(t, cfg, fs)
			defer st.Shutdown()
			mustPut(t, st, testMsg("G", 0, "warm", ""))
			ops := &commitLogOps{}
			fs.SetHook(ops.hook)
			if !st.GatherWrites() {
				t.Fatal("GatherWrites refused with no writer running")
			}
			if st.GatherWrites() {
				t.Fatal("GatherWrites granted twice")
			}
			results := make(chan PutResult, n)
			for i := 0; i < n; i++ {
				st.PutMessage(testMsg("G", 0, fmt.Sprint("g", i), ""), func(r PutResult) { results <- r })
			}
			if w, got := ops.writes.Load(), len(results); w != 0 || got != 0 {
				t.Fatalf("before ReleaseWrites: %d CommitLog writes, %d answers", w, got)
			}
			st.ReleaseWrites()
			for i := 0; i < n; i++ {
				if r := <-results; r.Status != PutOK || r.QueueOffset != int64(i+1) {
					t.Fatalf("put %d: %+v", i, r)
				}
			}
			if w := ops.writes.Load(); w != 1 {
				t.Fatalf("%d gathered puts made %d CommitLog writes, want 1", n, w)
			}
			if flush == SyncFlush && ops.syncs.Load() == 0 {
				t.Fatal("SYNC_FLUSH puts answered without a sync")
			}
			waitDispatched(t, st, "G", 0, n+1)
		})
	}
	t.Run("mapped", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.WriteWithoutMmap = false
		st := openStarted(t, cfg, vfs.OS())
		defer st.Shutdown()
		if st.GatherWrites() {
			t.Fatal("mapped writes gathered")
		}
		mustPut(t, st, testMsg("G", 0, "m", ""))
	})
}
