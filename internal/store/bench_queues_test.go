package store

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

// BenchmarkDispatchManyQueues puts 128-byte messages one at a time to
// 1024 queues in turn (the layout of BenchmarkTest) and ends when every
// entry is dispatched; cq-writes/op counts the consume-queue writes.
func BenchmarkDispatchManyQueues(b *testing.B) {
	const queues = 1024
	cfg := benchConfig(b, 256<<20)
	fs := vfs.NewInjector(vfs.OS())
	st, err := Open(cfg, fs, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Start(); err != nil {
		b.Fatal(err)
	}
	defer st.Shutdown()
	for st.commitLog.alloc.readyCount() < 1 {
		st.commitLog.alloc.kick()
		runtimeGosched()
	}
	done := make(chan PutResult, 1)
	cb := func(r PutResult) { done <- r }
	for q := int32(0); q < queues; q++ { // every queue's file exists
		st.PutMessage(benchMsg(128, q), cb)
		<-done
	}
	waitDispatched(b, st, "BenchTopic", queues-1, 1)
	var writes atomic.Int64
	sep := string(filepath.Separator)
	fs.SetHook(func(op vfs.Op, name string) {
		if op == vfs.OpWrite && strings.Contains(name, sep+"consumequeue"+sep) {
			writes.Add(1)
		}
	})
	msgs := make([]*message.Inner, queues)
	for q := range msgs {
		msgs[q] = benchMsg(128, int32(q))
	}
	b.SetBytes(128)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st.PutMessage(msgs[i%queues], cb)
		if r := <-done; r.Status != PutOK {
			b.Fatalf("put: %v %s", r.Status, r.Remark)
		}
	}
	last := b.N - 1
	waitDispatched(b, st, "BenchTopic", int32(last%queues), int64(last/queues)+2)
	b.StopTimer()
	b.ReportMetric(float64(writes.Load())/float64(b.N), "cq-writes/op")
}

// BenchmarkDispatchNewQueue puts one message to a queue no message went
// to before and waits until it is dispatched: the cost of a consume
// queue's first file on the dispatcher. In slow-sync every file and
// directory sync takes 2 ms more, as on a disk with a long write-back
// queue.
func BenchmarkDispatchNewQueue(b *testing.B) {
	for _, slow := range []time.Duration{0, 2 * time.Millisecond} {
		name := "disk"
		if slow > 0 {
			name = "slow-sync"
		}
		b.Run(name, func(b *testing.B) {
			cfg := benchConfig(b, 64<<20)
			fs := vfs.NewInjector(vfs.OS())
			st := openStarted(b, cfg, fs)
			defer st.Shutdown()
			done := make(chan PutResult, 1)
			cb := func(r PutResult) { done <- r }
			st.PutMessage(benchMsg(128, 0), cb) // the CommitLog's first file
			<-done
			fs.SetLatency(vfs.OpSync, slow)
			fs.SetLatency(vfs.OpSyncDir, slow)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m := benchMsg(128, 0)
				m.Topic = fmt.Sprint("NewQueue", i)
				st.PutMessage(m, cb)
				if r := <-done; r.Status != PutOK {
					b.Fatalf("put: %v %s", r.Status, r.Remark)
				}
				waitDispatched(b, st, m.Topic, 0, 1)
			}
			b.StopTimer()
		})
	}
}

// benchConfig is the default configuration on a fresh directory, with
// CommitLog files of commitLogSize bytes and no index.
func benchConfig(b *testing.B, commitLogSize int64) Config {
	cfg := DefaultConfig()
	cfg.StorePathRootDir = b.TempDir()
	cfg.StorePathCommitLog = filepath.Join(cfg.StorePathRootDir, "commitlog")
	cfg.MappedFileSizeCommitLog = commitLogSize
	cfg.MessageIndexEnable = false
	return cfg
}
