package store

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/store/index"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

var benchSizes = []int{128, 1024, 4096}

// BenchmarkMemcpy is the memory limit the append figures compare with: a
// sequential copy of the same sizes into a large buffer.
func BenchmarkMemcpy(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			dst := make([]byte, 256<<20)
			for i := range dst {
				dst[i] = 1 // resident, like a prepared file
			}
			src := make([]byte, size)
			b.SetBytes(int64(size))
			b.ResetTimer()
			pos := 0
			for i := 0; i < b.N; i++ {
				if pos+size > len(dst) {
					pos = 0
				}
				copy(dst[pos:], src)
				pos += size
			}
		})
	}
}

func benchStore(b *testing.B, path string, flush string) *DefaultMessageStore {
	return benchStoreIndexed(b, path, flush, false)
}

func benchStoreIndexed(b *testing.B, path string, flush string, indexed bool) *DefaultMessageStore {
	cfg := DefaultConfig()
	cfg.StorePathRootDir = b.TempDir()
	cfg.StorePathCommitLog = filepath.Join(cfg.StorePathRootDir, "commitlog")
	cfg.MappedFileSizeCommitLog = 256 << 20
	cfg.MaxHashSlotNum = 100000
	cfg.MaxIndexNum = 400000
	cfg.MessageIndexEnable = indexed
	cfg.FlushDiskType = flush
	for _, wp := range writePaths {
		if wp.name == path {
			wp.set(&cfg)
		}
	}
	cfg.CommitIntervalCommitLog = 200
	st, err := Open(cfg, vfs.OS(), nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Start(); err != nil {
		b.Fatal(err)
	}
	// Prepared files: wait until the allocator has files ready.
	for st.commitLog.alloc.readyCount() < 1 {
		st.commitLog.alloc.kick()
		runtimeGosched()
	}
	return st
}

func benchMsg(size int, qid int32) *message.Inner {
	m := testMsg("BenchTopic", qid, strings.Repeat("x", size), "TagA")
	m.PropertiesString = message.EncodeProperties(m.Properties)
	return m
}

// BenchmarkAppend measures PutMessage: write path x flush mode x body size
// x goroutines. MB/s counts body bytes. SYNC runs use 64 writers waiting for
// their group commit.
func BenchmarkAppend(b *testing.B) {
	for _, path := range []string{"mmap", "pwrite", "transient"} {
		for _, flush := range []string{AsyncFlush, SyncFlush} {
			if path == "transient" && flush == SyncFlush {
				continue // ASYNC_FLUSH only, as in RocketMQ
			}
			for _, size := range benchSizes {
				gs := []int{1, 8}
				if flush == SyncFlush {
					gs = []int{64}
				}
				for _, g := range gs {
					name := fmt.Sprintf("%s/%s/%dB/g%d", path, strings.TrimSuffix(flush, "_FLUSH"), size, g)
					b.Run(name, func(b *testing.B) { benchAppend(b, path, flush, size, g, false) })
				}
			}
		}
	}
}

// BenchmarkAppendIndexed is BenchmarkAppend's pwrite/ASYNC/1024B runs with
// the message index on (the server default), so the index dispatcher's
// wake-ups show.
func BenchmarkAppendIndexed(b *testing.B) {
	for _, g := range []int{1, 8} {
		b.Run(fmt.Sprintf("pwrite/ASYNC/1024B/g%d", g), func(b *testing.B) { benchAppend(b, "pwrite", AsyncFlush, 1024, g, true) })
	}
}

func benchAppend(b *testing.B, path, flush string, size, g int, indexed bool) {
	st := benchStoreIndexed(b, path, flush, indexed)
	defer st.Shutdown()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N / g
	for w := 0; w < g; w++ {
		n := per
		if w == 0 {
			n += b.N % g
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := benchMsg(size, int32(w%8))
			done := make(chan PutResult, 1)
			cb := func(r PutResult) { done <- r }
			for i := 0; i < n; i++ {
				st.PutMessage(m, cb)
				if r := <-done; r.Status != PutOK && r.Status != OSPageCacheBusy {
					b.Errorf("put: %v %s", r.Status, r.Remark)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(st.disp.parks.Load())/float64(b.N), "disp-parks/op")
	if st.index != nil {
		b.ReportMetric(float64(st.index.parks.Load())/float64(b.N), "index-parks/op")
	}
	s := st.Stats()
	if path == "pwrite" {
		b.ReportMetric(float64(st.commitLog.fileWrites.Load())/float64(b.N), "pwrites/op")
	}
	b.ReportMetric(float64(s.Flushes)/float64(b.N), "flushes/op")
	b.ReportMetric(float64(s.PutLockHold.P99.Nanoseconds()), "lock-p99-ns")
	b.ReportMetric(float64(s.Put.P99.Nanoseconds()), "put-p99-ns")
	if s.SpillFull+s.PoolExhausted > 0 {
		b.ReportMetric(float64(s.SpillFull+s.PoolExhausted), "busy")
	}
}

// BenchmarkGatheredPass is an event loop's pass of 64 puts of 128 B
// (ASYNC_FLUSH, pwrite): GatherWrites, the puts, ReleaseWrites, which
// writes them with one pwrite and answers them all. One op is one put.
func BenchmarkGatheredPass(b *testing.B) {
	st := benchStoreIndexed(b, "pwrite", AsyncFlush, false)
	defer st.Shutdown()
	const pass = 64
	m := benchMsg(128, 0)
	answered := 0
	cb := func(r PutResult) {
		if r.Status != PutOK {
			b.Errorf("put: %v %s", r.Status, r.Remark)
		}
		answered++
	}
	b.SetBytes(128)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += pass {
		if !st.GatherWrites() {
			b.Fatal("GatherWrites refused: records are not staged")
		}
		for j := 0; j < pass; j++ {
			st.PutMessage(m, cb)
		}
		st.ReleaseWrites()
	}
	b.StopTimer()
	if want := (b.N + pass - 1) / pass * pass; answered != want {
		b.Fatalf("%d puts answered, want %d", answered, want)
	}
}

// BenchmarkAppendSlowFsync appends 1 KiB bodies from 8 goroutines while
// every sync takes 2 s (ASYNC_FLUSH): the put-lock hold time must not move.
func BenchmarkAppendSlowFsync(b *testing.B) {
	for _, path := range []string{"mmap", "pwrite"} {
		b.Run(path, func(b *testing.B) {
			cfg := benchConfig(b, 256<<20)
			cfg.FlushIntervalCommitLog = 10
			cfg.WriteWithoutMmap = path == "pwrite"
			fs := vfs.NewFaultFS(vfs.OS())
			st, err := Open(cfg, fs, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := st.Start(); err != nil {
				b.Fatal(err)
			}
			for st.commitLog.alloc.readyCount() < 1 {
				runtimeGosched()
			}
			fs.SetLatency(vfs.OpSync, 2*time.Second)
			b.SetBytes(1024)
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := 0; w < 8; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m := benchMsg(1024, int32(w))
					done := make(chan PutResult, 1)
					for i := 0; i < b.N/8; i++ {
						st.PutMessage(m, func(r PutResult) { done <- r })
						<-done
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			s := st.Stats()
			b.ReportMetric(float64(s.PutLockHold.P99.Nanoseconds()), "lock-p99-ns")
			b.ReportMetric(float64(s.PutLockHold.Max.Nanoseconds()), "lock-max-ns")
			b.ReportMetric(float64(s.Flushes), "flushes")
			fs.SetLatency(vfs.OpSync, 0)
			st.Shutdown()
		})
	}
}

// BenchmarkGetMessage drains a store of 1 KiB messages with pulls of 32:
// "q1" holds one queue (adjacent records), "q4" four queues written in turn
// (each queue's records 3 KiB apart), the layout of concurrent producers.
func BenchmarkGetMessage(b *testing.B) {
	for _, queues := range []int{1, 4} {
		b.Run(fmt.Sprintf("q%d", queues), func(b *testing.B) {
			st := benchStore(b, "pwrite", AsyncFlush)
			defer st.Shutdown()
			const perQueue = 4096
			ms := make([]*message.Inner, queues)
			for q := range ms {
				ms[q] = benchMsg(1024, int32(q))
			}
			done := make(chan PutResult, 1)
			cb := func(r PutResult) { done <- r }
			for i := 0; i < perQueue; i++ {
				for q := range ms {
					st.PutMessage(ms[q], cb)
					if r := <-done; r.Status != PutOK {
						b.Fatalf("put: %v %s", r.Status, r.Remark)
					}
				}
			}
			for q := range ms {
				waitDispatched(b, st, "BenchTopic", int32(q), perQueue)
			}
			b.SetBytes(32 * 1024)
			b.ReportAllocs()
			b.ResetTimer()
			off := int64(0)
			for i := 0; i < b.N; i++ {
				q := int32(i % queues)
				r := st.GetMessage("g", "BenchTopic", q, off, 32, 0, nil)
				if r.Status != Found || len(r.Buffers) != 32 {
					b.Fatalf("get at %d: %v %d", off, r.Status, len(r.Buffers))
				}
				r.Release()
				if q == int32(queues-1) {
					off += 32
					if off+32 > perQueue {
						off = 0
					}
				}
			}
		})
	}
}

// BenchmarkDispatchLatency is the wake-up latency a held long poll sees:
// one put at a time, each op ends when OnDispatch reports its record.
// "held" tells the dispatcher a pull waits (as the broker does while one
// is held); "nobody" does not, so records flowing in gather for up to
// dispatchLinger between passes.
func BenchmarkDispatchLatency(b *testing.B) {
	b.Run("held", func(b *testing.B) { benchDispatchLatency(b, true) })
	b.Run("nobody", func(b *testing.B) { benchDispatchLatency(b, false) })
}

func benchDispatchLatency(b *testing.B, held bool) {
	st := benchStoreIndexed(b, "pwrite", AsyncFlush, true)
	defer st.Shutdown()
	st.SetDispatchWaiters(func() bool { return held })
	ch := make(chan int64, 1024)
	st.OnDispatch(func(tp string, q int32, max int64) {
		if tp == "BenchTopic" {
			ch <- max
		}
	})
	m := benchMsg(1024, 0)
	done := make(chan PutResult, 1)
	cb := func(r PutResult) { done <- r }
	b.ReportAllocs()
	b.ResetTimer()
	for i := int64(1); i <= int64(b.N); i++ {
		st.PutMessage(m, cb)
		if r := <-done; r.Status != PutOK {
			b.Fatalf("put: %v", r.Status)
		}
		for got := int64(0); got < i; {
			got = <-ch
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(st.disp.parks.Load())/float64(b.N), "disp-parks/op")
	b.ReportMetric(float64(st.index.parks.Load())/float64(b.N), "index-parks/op")
}

// BenchmarkIndexRecord is the index dispatcher's work per record: the
// view, the UNIQ_KEY and KEYS properties, and the index entries (one per
// key). Properties as the Go client sends them, with or without KEYS.
func BenchmarkIndexRecord(b *testing.B) {
	for _, keys := range []string{"", "order-1 order-2"} {
		name := "uniq"
		if keys != "" {
			name = "uniq+2keys"
		}
		b.Run(name, func(b *testing.B) {
			svc, err := index.Open(index.Config{Dir: b.TempDir(), MaxHashSlotNum: 1 << 16, MaxIndexNum: 1 << 22, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			defer svc.Close()
			m := benchMsg(128, 0)
			m.Properties[message.PropertyUniqClientMessageIDKeyIdx] = "7F00000100012A9F4C3B1E2D00000000"
			m.Properties[message.PropertyWaitStoreMsgOK] = "true"
			if keys != "" {
				m.Properties[message.PropertyKeys] = keys
			}
			rec := message.EncodeRecord(nil, m, message.EncodeProperties(m.Properties))
			message.PatchRecord(rec, 0, 0, 1700000000000)
			x := &indexDispatcher{svc: svc}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := x.index(rec, int64(i+1)*int64(len(rec))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
