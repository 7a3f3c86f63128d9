package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

// TestPullCopiesResidentRecords puts the records of eight queues
// interleaved, as concurrent producers do, and pulls every queue: with
// the pages in memory each span is copied from the read mapping, record by
// record; after the pages are dropped from the page cache the same pulls
// read with pread. Both give the same records, in every write path.
func TestPullCopiesResidentRecords(t *testing.T) {
	const queues, perQueue = 8, 64
	for _, wp := range writePaths {
		t.Run(wp.name, func(t *testing.T) {
			cfg := testConfig(t)
			wp.set(&cfg)
			cfg.MappedFileSizeCommitLog = 1 << 20
			st := openStarted(t, cfg, vfs.OS())
			defer st.Shutdown()
			body := func(q, i int) string { return fmt.Sprintf("q%d-m%03d-%0400d", q, i, i) }
			for i := 0; i < perQueue; i++ {
				for q := 0; q < queues; q++ {
					mustPut(t, st, testMsg("Res", int32(q), body(q, i), ""))
				}
			}
			for q := 0; q < queues; q++ {
				waitDispatched(t, st, "Res", int32(q), perQueue)
			}
			c := st.commitLog
			if err := c.flusher.flushTo(c.visible.Load()); err != nil {
				t.Fatal(err)
			}
			pullAll := func(from int64) {
				t.Helper()
				for q := 0; q < queues; q++ {
					r := st.GetMessage("g", "Res", int32(q), from, 32, 0, nil)
					if r.Status != Found || len(r.Buffers) != 32 {
						t.Fatalf("queue %d from %d: %v, %d records", q, from, r.Status, len(r.Buffers))
					}
					for k, rec := range r.Buffers {
						ext, err := message.DecodeRecord(rec)
						i := int(from) + k
						if err != nil || ext.QueueID != int32(q) || ext.QueueOffset != int64(i) || string(ext.Body) != body(q, i) {
							t.Fatalf("queue %d offset %d: %v %+v", q, i, err, ext)
						}
					}
					r.Release()
				}
			}

			res0, pread0 := c.residentSpans.Load(), c.preadSpans.Load()
			pullAll(0)
			if got := c.residentSpans.Load() - res0; got < queues || c.preadSpans.Load() != pread0 {
				t.Fatalf("pages in memory: %d resident spans, %d pread spans", got, c.preadSpans.Load()-pread0)
			}
			// Unmapping the read mapping's pages leaves them in the page
			// cache: the same pulls copy them again.
			c.dropReadMappings()
			res0 = c.residentSpans.Load()
			pullAll(0)
			if got := c.residentSpans.Load() - res0; got < queues || c.preadSpans.Load() != pread0 {
				t.Fatalf("after the pages were unmapped: %d resident spans, %d pread spans", got, c.preadSpans.Load()-pread0)
			}
			// Pages the kernel holds in a CPU's batch of recently used
			// pages are skipped by an eviction; under load some may stay
			// until a later try.
			var ev EvictReport
			for try := 0; try < 10; try++ {
				var err error
				if ev, err = st.EvictPageCache(""); err != nil {
					t.Fatal(err)
				}
				if ev.ResidentAfter == 0 || ev.ResidentAfter >= ev.ResidentBefore {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if ev.ResidentAfter != 0 {
				// A file system whose pages cannot be dropped (tmpfs).
				t.Logf("the page cache kept pages (%+v): the pread fallback is not checked", ev)
				return
			}
			res1, pread1 := c.residentSpans.Load(), c.preadSpans.Load()
			pullAll(32)
			if c.preadSpans.Load() == pread1 {
				t.Fatalf("pages dropped: every span still copied from the mapping (%d)", c.residentSpans.Load()-res1)
			}
		})
	}
}

func TestWorthCopyingRecords(t *testing.T) {
	span := func(step int64, n, size int) []pick {
		ps := make([]pick, n)
		for i := range ps {
			ps[i] = pick{phy: 1000 + int64(i)*step, size: size}
		}
		return ps
	}
	for _, tc := range []struct {
		name string
		ps   []pick
		want bool
	}{
		{"one record", span(0, 1, 500), false},
		{"end to end (one queue, a batch)", span(500, 32, 500), false},
		{"small gaps", span(700, 32, 500), false},
		{"two queues interleaved", span(1000, 32, 500), true},
		{"eight queues interleaved", span(4000, 32, 500), true},
	} {
		if got := worthCopyingRecords(tc.ps); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
