package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
)

// cqBlocks is the disk a consume-queue file takes (stat's st_blocks).
func cqBlocks(t *testing.T, path string) (allocated, size int64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Blocks * 512, fi.Size()
}

// Consume-queue files are sparse: each has its full size, but takes the
// blocks its entries take, not 5.72 MiB.
func TestConsumeQueueFilesSparse(t *testing.T) {
	cfg := testConfig(t)
	cfg.MappedFileSizeConsumeQueue = DefaultConfig().MappedFileSizeConsumeQueue // 300,000 entries
	const queues = 40
	st := openStarted(t, cfg, vfs.OS())
	for q := int32(0); q < queues; q++ {
		n := 1
		if q == 0 {
			n = 300 // 6,000 bytes: past the first page and the first scan chunk
		}
		for i := 0; i < n; i++ {
			mustPut(t, st, testMsg("S", q, fmt.Sprint(i), ""))
		}
	}
	for q := int32(0); q < queues; q++ {
		want := int64(1)
		if q == 0 {
			want = 300
		}
		waitDispatched(t, st, "S", q, want)
	}
	if err := st.Shutdown(); err != nil {
		t.Fatal(err)
	}
	var total int64
	for q := 0; q < queues; q++ {
		path := filepath.Join(cfg.consumeQueueDir(), "S", fmt.Sprint(q), fileName(0))
		alloc, size := cqBlocks(t, path)
		if size != cfg.MappedFileSizeConsumeQueue {
			t.Fatalf("%s is %d bytes, want %d", path, size, cfg.MappedFileSizeConsumeQueue)
		}
		limit := int64(64 << 10) // a few pages of the file system
		if alloc > limit {
			t.Errorf("%s takes %d bytes on disk for %d-byte entries (want at most %d)", path, alloc, CQEntrySize, limit)
		}
		total += alloc
	}
	t.Logf("%d consume-queue files of %d bytes take %d bytes on disk (%d per queue)", queues, cfg.MappedFileSizeConsumeQueue, total, total/queues)

	// Recovery finds the end of a sparse queue: the first zero entry.
	st = openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	if got := st.MaxOffsetInQueue("S", 0); got != 300 {
		t.Fatalf("queue 0 after restart: max %d, want 300", got)
	}
	for q := int32(1); q < queues; q++ {
		if got := st.MaxOffsetInQueue("S", q); got != 1 {
			t.Fatalf("queue %d after restart: max %d, want 1", q, got)
		}
	}
	if r := mustPut(t, st, testMsg("S", 0, "next", "")); r.QueueOffset != 300 {
		t.Fatalf("put after restart: queue offset %d, want 300", r.QueueOffset)
	}
	waitDispatched(t, st, "S", 0, 301)
	r := st.GetMessage("g", "S", 0, 299, 2, 1<<20, nil)
	defer r.Release()
	if r.Status != Found || len(r.Buffers) != 2 {
		t.Fatalf("read after restart: status %v, %d messages", r.Status, len(r.Buffers))
	}
}

// A queue that begins past its first file's first entry (leading zero
// entries) keeps its bounds across a clean restart and a crash.
func TestConsumeQueueStartingPastZeroRecovers(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprintf("crash=%v", crash), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.MappedFileSizeConsumeQueue = 1000 * CQEntrySize
			st := openStarted(t, cfg, vfs.OS())
			for i := 0; i < 10; i++ {
				mustPut(t, st, testMsg("R", 0, fmt.Sprint(i), ""))
			}
			waitDispatched(t, st, "R", 0, 10)
			cq := st.consumeQueue("L", 0, true)
			var entries []byte
			for i := int64(0); i < 5; i++ {
				entries = AppendCQEntry(entries, CQEntry{Offset: i, Size: 1})
			}
			if err := cq.appendEntries(st, 250, entries); err != nil {
				t.Fatal(err)
			}
			if err := st.Shutdown(); err != nil {
				t.Fatal(err)
			}
			if crash {
				f, err := os.Create(cfg.abortPath())
				if err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			st = openStarted(t, cfg, vfs.OS())
			defer st.Shutdown()
			if lo, hi := st.MinOffsetInQueue("L", 0), st.MaxOffsetInQueue("L", 0); lo != 250 || hi != 255 {
				t.Fatalf("queue bounds after restart [%d, %d), want [250, 255)", lo, hi)
			}
			if hi := st.MaxOffsetInQueue("R", 0); hi != 10 {
				t.Fatalf("queue R max %d after restart, want 10", hi)
			}
		})
	}
}

// The descriptor cache holds at most its limit of descriptors whatever
// the number of files, and every file stays readable and writable.
func TestFileCacheBoundsDescriptors(t *testing.T) {
	dir := t.TempDir()
	c := newFileCache(vfs.OS(), 8)
	var files []vfs.File
	for i := 0; i < 100; i++ {
		f, err := c.OpenFile(filepath.Join(dir, fmt.Sprint(i)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte(fmt.Sprintf("file %03d", i)), 0); err != nil {
			t.Fatal(err)
		}
		if n := c.openCount(); n > 8 {
			t.Fatalf("%d descriptors open after %d files, limit 8", n, i+1)
		}
		files = append(files, f)
	}
	var wg sync.WaitGroup
	var bad atomic.Int64
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			b := make([]byte, 8)
			for r := 0; r < 5; r++ {
				for i := g; i < len(files); i += 4 {
					if _, err := files[i].ReadAt(b, 0); err != nil || string(b) != fmt.Sprintf("file %03d", i) {
						bad.Add(1)
					}
					if err := files[i].Datasync(); err != nil {
						bad.Add(1)
					}
				}
			}
		}(g)
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d failed reads or syncs", bad.Load())
	}
	if n := c.openCount(); n > 8 {
		t.Fatalf("%d descriptors open at rest, limit 8", n)
	}
	if c.evictions.Load() == 0 || c.opens.Load() <= 100 {
		t.Fatalf("opens %d, evictions %d: the cache never closed a descriptor", c.opens.Load(), c.evictions.Load())
	}
	for _, f := range files {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.openCount(); n != 0 {
		t.Fatalf("%d descriptors open after every handle closed", n)
	}
	if _, err := files[0].ReadAt(make([]byte, 1), 0); !errors.Is(err, errCachedFileClosed) {
		t.Fatalf("read after close: %v", err)
	}
}

// A store with more queues than its consume-queue descriptor limit holds
// at most that many consume-queue descriptors, and every queue is
// dispatched and readable, before and after a restart.
func TestConsumeQueueDescriptorsBounded(t *testing.T) {
	cfg := testConfig(t)
	const queues, limit = 200, 16
	open := func() *DefaultMessageStore {
		st, err := Open(cfg, vfs.OS(), nil)
		if err != nil {
			t.Fatal(err)
		}
		st.cqFiles.limit = limit
		if err := st.Start(); err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := open()
	for q := int32(0); q < queues; q++ {
		mustPut(t, st, testMsg("D", q, fmt.Sprint(q), ""))
	}
	for q := int32(0); q < queues; q++ {
		waitDispatched(t, st, "D", q, 1)
	}
	if n := st.cqFiles.openCount(); n > limit {
		t.Fatalf("%d consume-queue descriptors open for %d queues, limit %d", n, queues, limit)
	}
	readAll := func(st *DefaultMessageStore, want int) {
		t.Helper()
		for q := int32(0); q < queues; q++ {
			r := st.GetMessage("g", "D", q, 0, 32, 1<<20, nil)
			if r.Status != Found || len(r.Buffers) != want {
				t.Fatalf("queue %d: status %v, %d messages, want %d", q, r.Status, len(r.Buffers), want)
			}
			r.Release()
		}
	}
	readAll(st, 1)
	if err := st.Shutdown(); err != nil {
		t.Fatal(err)
	}
	st = open()
	defer st.Shutdown()
	if n := st.cqFiles.openCount(); n > limit {
		t.Fatalf("%d consume-queue descriptors open after restart, limit %d", n, limit)
	}
	for q := int32(0); q < queues; q++ {
		mustPut(t, st, testMsg("D", q, "again", ""))
	}
	for q := int32(0); q < queues; q++ {
		waitDispatched(t, st, "D", q, 2)
	}
	readAll(st, 2)
	if n := st.cqFiles.openCount(); n > limit {
		t.Fatalf("%d consume-queue descriptors open, limit %d", n, limit)
	}
}

// emfileFS fails opens of consume-queue files with EMFILE while fail is set.
type emfileFS struct {
	vfs.FS
	fail atomic.Bool
}

func (fs *emfileFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	if fs.fail.Load() && strings.Contains(name, string(filepath.Separator)+"consumequeue"+string(filepath.Separator)) {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	return fs.FS.OpenFile(name, flag, perm)
}

// waitFor polls cond (a condition the store reaches by itself) for up to
// 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 20000 && !cond(); i++ {
		time.Sleep(time.Millisecond)
	}
	if !cond() {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// While dispatch fails, puts are refused with SERVICE_NOT_AVAILABLE and a
// remark naming the dispatch error; once it recovers, the message that hit
// the failure is dispatched and puts are accepted again.
func TestPutsRefusedWhileDispatchFails(t *testing.T) {
	cfg := testConfig(t)
	fs := &emfileFS{FS: vfs.OS()}
	st := openStarted(t, cfg, fs)
	defer st.Shutdown()
	mustPut(t, st, testMsg("A", 0, "a0", ""))
	waitDispatched(t, st, "A", 0, 1)

	fs.fail.Store(true)
	if r := putSync(t, st, testMsg("B", 0, "b0", "")); r.Status != PutOK {
		t.Fatalf("put before dispatch failed: %d %q", r.Status, r.Remark)
	}
	waitFor(t, "dispatch to fail", func() bool { return st.Descriptors().DispatchError != "" })
	r := putSync(t, st, testMsg("A", 0, "a1", ""))
	if r.Status != ServiceNotAvailable || !strings.Contains(r.Remark, "dispatch") || !strings.Contains(r.Remark, "too many open files") {
		t.Fatalf("put while dispatch fails: status %d remark %q, want SERVICE_NOT_AVAILABLE naming the dispatch error", r.Status, r.Remark)
	}
	if st.MaxOffsetInQueue("A", 0) != 1 {
		t.Fatalf("a refused put was dispatched")
	}

	fs.fail.Store(false)
	waitFor(t, "dispatch to recover", func() bool { return st.Descriptors().DispatchError == "" })
	if got := st.MaxOffsetInQueue("B", 0); got != 1 {
		t.Fatalf("queue B max %d after recovery, want 1", got)
	}
	mustPut(t, st, testMsg("A", 0, "a1", ""))
	waitDispatched(t, st, "A", 0, 2)
	if d := st.Descriptors(); d.DispatchFailures == 0 {
		t.Fatalf("no failed pass counted: %+v", d)
	}
}

// BenchmarkFileCacheReadAt is one 20-byte pread through a plain
// descriptor, through the cache when the file's descriptor is open, and
// through the cache when every read reopens (working set of 64 files,
// limit 16).
func BenchmarkFileCacheReadAt(b *testing.B) {
	dir := b.TempDir()
	mk := func(fs vfs.FS, n int) []vfs.File {
		var out []vfs.File
		for i := 0; i < n; i++ {
			f, err := fs.OpenFile(filepath.Join(dir, fmt.Sprintf("%T-%d", fs, i)), os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.WriteAt(make([]byte, 4096), 0); err != nil {
				b.Fatal(err)
			}
			out = append(out, f)
		}
		return out
	}
	run := func(b *testing.B, files []vfs.File) {
		p := make([]byte, CQEntrySize)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := files[i%len(files)].ReadAt(p, int64(i%200)*CQEntrySize); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("direct", func(b *testing.B) { run(b, mk(vfs.OS(), 1)) })
	b.Run("cached", func(b *testing.B) { run(b, mk(newFileCache(vfs.OS(), 16), 1)) })
	b.Run("reopening", func(b *testing.B) { run(b, mk(newFileCache(vfs.OS(), 16), 64)) })
}

// RaiseNofileLimit lifts a lowered soft descriptor limit to the hard one.
func TestRaiseNofileLimit(t *testing.T) {
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig)
	if orig.Max < 512 {
		t.Skipf("hard RLIMIT_NOFILE %d", orig.Max)
	}
	low := syscall.Rlimit{Cur: 256, Max: orig.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	soft, hard, err := RaiseNofileLimit()
	if err != nil || soft != orig.Max || hard != orig.Max {
		t.Fatalf("RaiseNofileLimit: soft %d hard %d err %v, want both %d", soft, hard, err, orig.Max)
	}
	if s, h, _ := NofileLimit(); s != orig.Max || h != orig.Max {
		t.Fatalf("limit after raising: soft %d hard %d", s, h)
	}
	if got := cqFileLimit(256); got != 64 {
		t.Fatalf("consume-queue descriptor limit for 256: %d", got)
	}
	if got := cqFileLimit(1 << 20); got != cqFileLimitMax {
		t.Fatalf("consume-queue descriptor limit for 2^20: %d", got)
	}
}

// Consume-queue entries collect in their queue's tail and are written
// with one pwrite per queue when the queues are flushed, not one per
// dispatch pass: 100 puts dispatched one pass each to 4 queues write no
// entry until the flush, which writes each queue once. Entries in the
// tail are read like written ones, and a crash before they are written
// loses none of them (recovery dispatches them again).
func TestConsumeQueueEntriesShareWrites(t *testing.T) {
	const queues, n = 4, 100
	cfg := testConfig(t)
	cfg.MappedFileSizeConsumeQueue = 1000 * CQEntrySize
	cfg.FlushIntervalConsumeQueue = 1 << 30 // the test flushes
	fs := vfs.NewInjector(vfs.OS())
	st := openStarted(t, cfg, fs)
	var writes atomic.Int64
	fs.SetHook(func(op vfs.Op, name string) {
		if op == vfs.OpWrite && strings.Contains(name, string(filepath.Separator)+"consumequeue"+string(filepath.Separator)) {
			writes.Add(1)
		}
	})
	want := make([]map[int64]string, queues)
	for q := range want {
		want[q] = map[int64]string{}
	}
	put := func(i int) {
		q := int32(i % queues)
		body := fmt.Sprint("w", i)
		r := mustPut(t, st, testMsg("W", q, body, ""))
		want[q][r.QueueOffset] = body
		waitDispatched(t, st, "W", q, r.QueueOffset+1) // one pass per put
	}
	for i := 0; i < n; i++ {
		put(i)
	}
	if w := writes.Load(); w != 0 {
		t.Fatalf("%d consume-queue writes before the flush, want 0", w)
	}
	for q := range want {
		checkAll(t, st, "W", int32(q), want[q])
	}
	if err := st.flushConsumeQueues(); err != nil {
		t.Fatal(err)
	}
	if w := writes.Load(); w != queues {
		t.Fatalf("%d consume-queue writes for %d entries in %d queues, want %d", w, n, queues, queues)
	}
	for q := range want {
		checkAll(t, st, "W", int32(q), want[q])
	}
	// More entries in the tails (some queues half written), then a crash.
	for i := n; i < n+10; i++ {
		put(i)
	}
	crash(st)
	st = openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	for q := range want {
		if got := st.MaxOffsetInQueue("W", int32(q)); got != int64(len(want[q])) {
			t.Fatalf("queue %d: max %d after the crash, want %d", q, got, len(want[q]))
		}
		checkAll(t, st, "W", int32(q), want[q])
	}
}

// The dispatcher makes a new queue's file without a file or directory
// sync (on a slow disk each would stall dispatch for every new queue); the
// flush that syncs the queue's entries syncs the file and its name first.
func TestNewQueueFilesAreSyncedByTheFlush(t *testing.T) {
	const queues = 8
	cfg := testConfig(t)
	cfg.MappedFileSizeConsumeQueue = 10 * CQEntrySize // 10 entries a file
	cfg.FlushIntervalConsumeQueue = 1 << 30           // the test flushes
	fs := vfs.NewInjector(vfs.OS())
	st := openStarted(t, cfg, fs)
	defer st.Shutdown()
	cqDir := string(filepath.Separator) + "consumequeue" + string(filepath.Separator)
	var syncs, dirSyncs atomic.Int64
	fs.SetHook(func(op vfs.Op, name string) {
		if !strings.Contains(name+string(filepath.Separator), cqDir) {
			return
		}
		switch op {
		case vfs.OpSync:
			syncs.Add(1)
		case vfs.OpSyncDir:
			dirSyncs.Add(1)
		}
	})
	for q := int32(0); q < queues; q++ {
		r := mustPut(t, st, testMsg("N", q, "first", ""))
		waitDispatched(t, st, "N", q, r.QueueOffset+1)
	}
	if s, d := syncs.Load(), dirSyncs.Load(); s != 0 || d != 0 {
		t.Fatalf("dispatching to %d new queues made %d file and %d directory syncs of consume queues, want none", queues, s, d)
	}
	if err := st.flushConsumeQueues(); err != nil {
		t.Fatal(err)
	}
	// Per queue: its file's fsync, its directory's sync, then its entries'
	// fdatasync.
	if s, d := syncs.Load(), dirSyncs.Load(); s != 2*queues || d != queues {
		t.Fatalf("the flush made %d file and %d directory syncs, want %d and %d", s, d, 2*queues, queues)
	}
	// A queue's next file is made with no sync when its last one is
	// synced, and with the last one's syncs when it is not, so only a
	// queue's last file is ever unsynced.
	want := map[int64]string{0: "first"}
	putThrough := func(from, to int) {
		t.Helper()
		syncs.Store(0)
		dirSyncs.Store(0)
		for i := from; i < to; i++ {
			r := mustPut(t, st, testMsg("N", 0, fmt.Sprint("m", i), ""))
			want[r.QueueOffset] = fmt.Sprint("m", i)
			waitDispatched(t, st, "N", 0, r.QueueOffset+1)
		}
		if err := st.consumeQueue("N", 0, false).writeTail(); err != nil {
			t.Fatal(err)
		}
	}
	putThrough(1, 14) // a second file; the first was synced by the flush
	if s, d := syncs.Load(), dirSyncs.Load(); s != 0 || d != 0 {
		t.Fatalf("a second file after a synced first made %d file and %d directory syncs, want none", s, d)
	}
	putThrough(14, 24) // a third file while the second is unsynced
	if s, d := syncs.Load(), dirSyncs.Load(); s != 1 || d != 1 {
		t.Fatalf("a third file made %d file and %d directory syncs, want the second file's 1 and 1", s, d)
	}
	checkAll(t, st, "N", 0, want)
}

// A truncation cuts the tail as well as the file: inside the tail it
// keeps the written part and the tail's head; below the written part it
// cuts the file and empties the tail. Reads across the written end and
// the tail see one sequence.
func TestConsumeQueueTailTruncate(t *testing.T) {
	cfg := testConfig(t)
	cfg.FlushIntervalConsumeQueue = 1 << 30 // the test flushes
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	cq := st.consumeQueue("TT", 0, true)
	entries := func(from, to int64) []byte {
		var b []byte
		for i := from; i < to; i++ {
			b = AppendCQEntry(b, CQEntry{Offset: i * 100, Size: 100, TagsCode: i})
		}
		return b
	}
	check := func(want int64) {
		t.Helper()
		if got := cq.maxOffset.Load(); got != want {
			t.Fatalf("max %d, want %d", got, want)
		}
		got, _, err := cq.readEntries(nil, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(entries(0, want)) {
			t.Fatalf("read %d entries, not the %d appended", len(got)/CQEntrySize, want)
		}
	}
	if err := cq.appendEntries(st, 0, entries(0, 5)); err != nil {
		t.Fatal(err)
	}
	if err := cq.flush(); err != nil {
		t.Fatal(err)
	}
	if err := cq.appendEntries(st, 5, entries(5, 10)); err != nil {
		t.Fatal(err)
	}
	if w := cq.written.Load(); w != 5 {
		t.Fatalf("written %d, want 5", w)
	}
	check(10)
	if err := cq.truncatePhy(700); err != nil { // entries 0..6 end at or below 700
		t.Fatal(err)
	}
	check(7)
	if err := cq.truncatePhy(300); err != nil { // below the written part
		t.Fatal(err)
	}
	if w := cq.written.Load(); w != 3 {
		t.Fatalf("written %d after a cut below it, want 3", w)
	}
	check(3)
	if err := cq.appendEntries(st, 3, entries(3, 8)); err != nil {
		t.Fatal(err)
	}
	if err := cq.flush(); err != nil {
		t.Fatal(err)
	}
	check(8)
	if n := st.cqTailBytes.Load(); n != 0 {
		t.Fatalf("%d tail bytes counted after the flush", n)
	}
}
