package store

import (
	"fmt"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

// TestPullCopiesResidentRecords puts the records of eight queues
// interleaved, as concurrent producers do, and pulls every queue: with
// the pages in memory each span is copied from the read mapping, record by
// record; after the pages are dropped from the page cache the same pulls
// read with pread. Both give the same records, in every write path.
func TestPullCopiesResidentRecords(t *testing.T) {
	const queues, perQueue = 8, 96 // 1.4 MB of records
	for _, wp := range writePaths {
		t.Run(wp.name, func(t *testing.T) {
			cfg := testConfig(t)
			wp.set(&cfg)
			cfg.MappedFileSizeCommitLog = 4 << 20 // records past 1 MiB: the first chunk is remembered
			st := openStarted(t, cfg, vfs.OS())
			defer st.Shutdown()
			body := func(q, i int) string { return fmt.Sprintf("q%d-m%03d-%01800d", q, i, i) }
			for i := 0; i < perQueue; i++ {
				for q := 0; q < queues; q++ {
					mustPut(t, st, testMsg("Res", int32(q), body(q, i), ""))
				}
			}
			for q := 0; q < queues; q++ {
				waitDispatched(t, st, "Res", int32(q), perQueue)
			}
			c := st.commitLog
			if err := c.flusher.flushToNow(c.visible.Load()); err != nil {
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
			// The first pulls' chunk was found in memory just now: the
			// eviction must make the same pulls check again.
			res1, pread1 := c.residentSpans.Load(), c.preadSpans.Load()
			pullAll(0)
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

// probeFile answers Resident for a mapping m of the file from a set of
// pages that are not in memory, and records the file ranges asked about.
type probeFile struct {
	vfs.File
	m       []byte
	missing map[int64]bool // page numbers
	probes  [][2]int64
}

func (f *probeFile) Resident(b []byte) (int64, error) {
	off := int64(uintptr(unsafe.Pointer(&b[0])) - uintptr(unsafe.Pointer(&f.m[0])))
	f.probes = append(f.probes, [2]int64{off, off + int64(len(b))})
	var n int64
	for p := off; p < off+int64(len(b)); p += osPageSize {
		if !f.missing[p/osPageSize] {
			n += min(osPageSize, off+int64(len(b))-p)
		}
	}
	return n, nil
}

// TestResidentRemembersWhatItFound: a span whose chunks were found in
// memory is not checked again while that is fresh; a stale chunk is
// checked whole; a chunk reaching the readable end, or with a page not in
// memory, leaves the span to be checked alone and is not remembered; an
// eviction forgets.
func TestResidentRemembersWhatItFound(t *testing.T) {
	const size = 4 * residentChunk
	page := int64(osPageSize)
	memo := int64(residentMemo)
	chunk := int64(residentChunk)
	type step struct {
		pos, n, now int64
		forget      bool // forgetResident before the step
		want        bool
		probes      [][2]int64 // the file ranges checked by this step
	}
	for _, tc := range []struct {
		name      string
		committed int64
		missing   []int64 // pages
		steps     []step
	}{
		{"other queues' spans in a chunk found in memory", size, nil, []step{
			{pos: 100, n: 64 << 10, now: 1, want: true, probes: [][2]int64{{0, chunk}}},
			{pos: 200 << 10, n: 256 << 10, now: 2, want: true},
			{pos: chunk - 10, n: 10, now: 3, want: true},
			{pos: chunk - 10, n: 20, now: 4, want: true, probes: [][2]int64{{chunk, 2 * chunk}}},
			{pos: 10, n: chunk + 100, now: 5, want: true},
		}},
		{"the memo ages, and an eviction forgets", size, nil, []step{
			{pos: 0, n: 4096, now: 1, want: true, probes: [][2]int64{{0, chunk}}},
			{pos: 5 * page, n: 4096, now: memo, want: true},
			{pos: 5 * page, n: 4096, now: memo + 1, want: true, probes: [][2]int64{{0, chunk}}},
			{pos: 5 * page, n: 4096, now: memo + 2, forget: true, want: true, probes: [][2]int64{{0, chunk}}},
		}},
		{"the chunk at the readable end: the span alone, every time", chunk + 10*page + 100, nil, []step{
			{pos: chunk, n: 100, now: 1, want: true, probes: [][2]int64{{chunk, chunk + page}}},
			{pos: chunk, n: 100, now: 2, want: true, probes: [][2]int64{{chunk, chunk + page}}},
			{pos: chunk - 100, n: 200, now: 3, want: true, probes: [][2]int64{{0, chunk}, {chunk - page, chunk + page}}},
			{pos: chunk - 100, n: 50, now: 4, want: true},
		}},
		{"a page of the chunk not in memory: the span alone, not remembered", size, []int64{20}, []step{
			{pos: page, n: 3 * page, now: 1, want: true, probes: [][2]int64{{0, chunk}, {page, 4 * page}}},
			{pos: page, n: 3 * page, now: 2, want: true, probes: [][2]int64{{0, chunk}, {page, 4 * page}}},
			{pos: 20 * page, n: 10, now: 3, want: false, probes: [][2]int64{{0, chunk}, {20 * page, 21 * page}}},
		}},
		{"a span longer than one check", size, nil, []step{
			{pos: 0, n: residentProbe + page, now: 1, want: false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &probeFile{m: make([]byte, size), missing: map[int64]bool{}}
			for _, p := range tc.missing {
				f.missing[p] = true
			}
			mf := &MappedFile{f: f, size: size}
			mf.committed.Store(tc.committed)
			for i, s := range tc.steps {
				f.probes = nil
				if s.forget {
					mf.forgetResident()
				}
				if got := mf.resident(f.m, s.pos, s.n, s.now); got != s.want {
					t.Errorf("step %d: resident(%d, %d) = %v, want %v", i, s.pos, s.n, got, s.want)
				}
				if !slices.Equal(f.probes, s.probes) {
					t.Errorf("step %d: checked %v, want %v", i, f.probes, s.probes)
				}
			}
		})
	}
}

// TestGetMessageNoWait checks the read an event loop makes: records in
// memory come back as GetMessage returns them, in one interleaved queue
// (copied from the read mapping) and in a queue of its own (one span);
// once the page cache has dropped the files, the read says it would wait
// and returns nothing, and GetMessage still reads the records.
func TestGetMessageNoWait(t *testing.T) {
	cfg := testConfig(t)
	cfg.WriteWithoutMmap = true
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	body := func(q, i int) string { return fmt.Sprintf("q%d-m%03d-%0500d", q, i, i) }
	for i := 0; i < 40; i++ {
		for q := 0; q < 4; q++ {
			mustPut(t, st, testMsg("NoWait", int32(q), body(q, i), ""))
		}
		mustPut(t, st, testMsg("Alone", 0, body(9, i), ""))
	}
	for q := 0; q < 4; q++ {
		waitDispatched(t, st, "NoWait", int32(q), 40)
	}
	waitDispatched(t, st, "Alone", 0, 40)
	c := st.commitLog
	if err := c.flusher.flushToNow(c.visible.Load()); err != nil {
		t.Fatal(err)
	}
	check := func(r *GetResult, topic string, q, bodyQ int) {
		t.Helper()
		if r.Status != Found || len(r.Buffers) != 32 || r.NextBeginOffset != 32 {
			t.Fatalf("%s/%d: %v, %d records, next %d", topic, q, r.Status, len(r.Buffers), r.NextBeginOffset)
		}
		for k, rec := range r.Buffers {
			ext, err := message.DecodeRecord(rec)
			if err != nil || ext.Topic != topic || ext.QueueOffset != int64(k) || string(ext.Body) != body(bodyQ, k) {
				t.Fatalf("%s/%d offset %d: %v %+v", topic, q, k, err, ext)
			}
		}
		r.Recycle()
	}
	for q := 0; q < 4; q++ {
		r, ok := st.GetMessageNoWait("g", "NoWait", int32(q), 0, 32, 0, nil)
		if !ok {
			t.Fatalf("queue %d in memory: the read says it would wait", q)
		}
		check(r, "NoWait", q, q)
	}
	r, ok := st.GetMessageNoWait("g", "Alone", 0, 0, 32, 0, nil)
	if !ok {
		t.Fatal("a queue of its own in memory: the read says it would wait")
	}
	check(r, "Alone", 0, 9)
	// A pull at the queue's end reads nothing and never waits.
	if r, ok := st.GetMessageNoWait("g", "Alone", 0, 40, 32, 0, nil); !ok || r.Status != OffsetOverflowOne {
		t.Fatalf("at the end: ok %v, %+v", ok, r)
	}

	// A read that would wait starts the kernel's read-ahead of what it
	// lacks (preadv2 with RWF_NOWAIT), and other readers may bring pages
	// back, so each topic's pull is tried right after an eviction, a few
	// times: it must be turned back at least once, and each turned-back
	// read counted once.
	evict := func() {
		t.Helper()
		var ev EvictReport
		for try := 0; try < 10; try++ {
			var err error
			if ev, err = st.EvictPageCache(""); err != nil {
				t.Fatal(err)
			}
			if ev.Files > 0 && ev.ResidentAfter == 0 {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Skipf("the page cache kept pages (%+v): nothing to wait for", ev)
	}
	for _, topic := range []string{"NoWait", "Alone"} {
		turnedBack := false
		for try := 0; try < 5 && !turnedBack; try++ {
			evict()
			before := st.stats.getWouldWait.Load()
			r, ok := st.GetMessageNoWait("g", topic, 0, 0, 32, 0, nil)
			if ok {
				r.Recycle() // read back in meanwhile: try again
				continue
			}
			turnedBack = true
			if got := st.stats.getWouldWait.Load() - before; got != 1 {
				t.Fatalf("%s: %d reads counted as turned back, want 1", topic, got)
			}
		}
		if !turnedBack {
			t.Fatalf("%s: read without waiting after each of five evictions", topic)
		}
	}
	check(st.GetMessage("g", "NoWait", 1, 0, 32, 0, nil), "NoWait", 1, 1)
	check(st.GetMessage("g", "Alone", 0, 0, 32, 0, nil), "Alone", 0, 9)
}
