package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

// crash stops the store as kill -9 would leave it: no final flush, no
// dispatch, no checkpoint, the abort file stays.
func crash(st *DefaultMessageStore) {
	st.state.Store(stateStopped)
	c := st.commitLog
	c.lock.Lock()
	c.lock.Unlock()
	close(st.bgStop)
	st.statsStop()
	st.bgWG.Wait()
	if st.index != nil {
		close(st.index.stopCh)
		st.index.wg.Wait()
	}
	close(c.alloc.stopCh)
	c.alloc.wg.Wait()
	close(c.flusher.stopCh)
	c.flusher.wg.Wait()
	c.flusher.failAll(ServiceNotAvailable, "crashed")
	close(st.disp.stopCh)
	st.disp.wg.Wait()
	st.closeFiles()
}

// checkAll reads every queue of topic and checks each record against
// want (queue offset -> body).
func checkAll(t *testing.T, st *DefaultMessageStore, topic string, qid int32, want map[int64]string) {
	t.Helper()
	max := st.MaxOffsetInQueue(topic, qid)
	seen := map[int64]bool{}
	for off := st.MinOffsetInQueue(topic, qid); off < max; {
		r := st.GetMessage("g", topic, qid, off, 32, 1<<20, nil)
		if r.Status != Found {
			t.Fatalf("offset %d: %v", off, r.Status)
		}
		for i, rec := range r.Buffers {
			if _, err := message.CheckRecord(rec); err != nil {
				t.Fatalf("offset %d: returned a bad record: %v", r.QueueOffsets[i], err)
			}
			ext, _ := message.DecodeRecord(rec)
			qo := r.QueueOffsets[i]
			if ext.QueueOffset != qo {
				t.Fatalf("entry %d points at a record of queue offset %d", qo, ext.QueueOffset)
			}
			if w, ok := want[qo]; ok && w != string(ext.Body) {
				t.Fatalf("offset %d: body %q want %q", qo, ext.Body, w)
			}
			seen[qo] = true
		}
		off = r.NextBeginOffset
		r.Release()
	}
	for qo := range want {
		if !seen[qo] {
			t.Fatalf("acknowledged offset %d missing (queue max %d)", qo, max)
		}
	}
}

func TestRecoverAfterKill(t *testing.T) {
	cfg := testConfig(t)
	cfg.FlushDiskType = SyncFlush
	st := openStarted(t, cfg, vfs.OS())
	want := map[int64]string{}
	for i := 0; i < 600; i++ {
		r := mustPut(t, st, testMsg("K", 0, fmt.Sprint("k", i), ""))
		want[r.QueueOffset] = fmt.Sprint("k", i)
	}
	crash(st)
	// Lose the consume queues and the checkpoint: recovery must rebuild
	// the queues from the whole CommitLog.
	if err := os.RemoveAll(filepath.Join(cfg.StorePathRootDir, "consumequeue")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(cfg.StorePathRootDir, "checkpoint"))
	st = openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	if got := st.MaxOffsetInQueue("K", 0); got != 600 {
		t.Fatalf("queue max %d", got)
	}
	checkAll(t, st, "K", 0, want)
	if r := mustPut(t, st, testMsg("K", 0, "next", "")); r.QueueOffset != 600 {
		t.Fatalf("next queue offset %d", r.QueueOffset)
	}
}

func TestCrashModelKeepsSyncAcks(t *testing.T) {
	for round := 0; round < 5; round++ {
		cfg := testConfig(t)
		cfg.FlushDiskType = SyncFlush
		fs := vfs.NewFaultFS(vfs.OS())
		fs.SkipRealSync(true)
		st := openStarted(t, cfg, fs)
		want := map[int64]string{}
		for i := 0; i < 300+round*97; i++ {
			m := testMsg("C", 0, fmt.Sprint("c", i), "")
			if i%3 == 2 {
				m.Properties[message.PropertyWaitStoreMsgOK] = "false" // not acknowledged durable
				mustPut(t, st, m)
				continue
			}
			r := mustPut(t, st, m)
			want[r.QueueOffset] = fmt.Sprint("c", i)
		}
		crash(st)
		if err := fs.Crash(cfg.StorePathRootDir, vfs.CrashOptions{Garbage: round%2 == 1, Rand: rand.New(rand.NewPCG(uint64(round), 9))}); err != nil {
			t.Fatal(err)
		}
		st = openStarted(t, cfg, vfs.NewFaultFS(vfs.OS()))
		checkAll(t, st, "C", 0, want)
		st.Shutdown()
	}
}

// Consume queues are synced lazily (flushConsumeQueueLeastPages), while
// checkpoints are written every 10 ms: a power cut after many checkpoints
// loses the unsynced entries, and recovery must dispatch them again
// because no checkpoint claimed them.
func TestCrashAfterLazyQueueSyncsKeepsEntries(t *testing.T) {
	for round := 0; round < 3; round++ {
		cfg := testConfig(t)
		cfg.FlushDiskType = SyncFlush
		cfg.FlushIntervalConsumeQueue = 10
		cfg.FlushConsumeQueueThoroughInterval = hour
		fs := vfs.NewFaultFS(vfs.OS())
		fs.SkipRealSync(true)
		st, written := openSignallingCheckpoints(t, cfg, fs)
		const queues = 4
		want := make([]map[int64]string, queues)
		for q := range want {
			want[q] = map[int64]string{}
		}
		for batch := 0; batch < 8; batch++ {
			for i := 0; i < 60+round*41; i++ {
				q := int32(i % queues)
				body := fmt.Sprint("b", batch, "-", i)
				r := mustPut(t, st, testMsg("Z", q, body, ""))
				want[q][r.QueueOffset] = body
			}
			for range 2 { // checkpoints after the batch was dispatched
				select {
				case <-written:
				case <-time.After(10 * time.Second):
					t.Fatal("no checkpoint within 10 s at a 10 ms interval")
				}
			}
		}
		crash(st)
		if err := fs.Crash(cfg.StorePathRootDir, vfs.CrashOptions{Garbage: round%2 == 1, Rand: rand.New(rand.NewPCG(uint64(round), 11))}); err != nil {
			t.Fatal(err)
		}
		st = openStarted(t, cfg, vfs.NewFaultFS(vfs.OS()))
		for q := range want {
			checkAll(t, st, "Z", int32(q), want[q])
		}
		st.Shutdown()
	}
}

// copyDir copies a store directory (flat two levels are enough here).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepathWalk(src, func(p string, fi os.FileInfo) error {
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, in)
		return errors.Join(err, out.Close())
	})
	if err != nil {
		t.Fatal(err)
	}
}

func filepathWalk(root string, fn func(string, os.FileInfo) error) error {
	return filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return fn(p, fi)
	})
}

func TestTornTailsAndBitFlips(t *testing.T) {
	base := testConfig(t)
	base.FlushDiskType = AsyncFlush
	base.FlushIntervalCommitLog = 1 << 30 // only the explicit flush below
	base.FlushCommitLogThoroughInterval = 1 << 30
	st := openStarted(t, base, vfs.OS())
	type span struct{ off, size int64 }
	var recs []span
	for i := 0; i < 400; i++ {
		r := mustPut(t, st, testMsg("F", 0, strings.Repeat("x", i%50)+fmt.Sprint(i), ""))
		recs = append(recs, span{r.WroteOffset, int64(r.WroteBytes)})
	}
	// Flush and checkpoint the first part, then write an unflushed tail.
	if err := st.commitLog.flusher.flushToNow(st.commitLog.visible.Load()); err != nil {
		t.Fatal(err)
	}
	waitDispatched(t, st, "F", 0, 400)
	if err := st.checkpointWith(st.disp.reputFrom.Load(), cqFlushAll, false); err != nil {
		t.Fatal(err)
	}
	flushed := st.commitLog.flushedWhere.Load()
	for i := 0; i < 200; i++ {
		r := mustPut(t, st, testMsg("F", 0, fmt.Sprint("tail", i), ""))
		recs = append(recs, span{r.WroteOffset, int64(r.WroteBytes)})
	}
	end := st.commitLog.visible.Load()
	_ = end
	fileSize := base.MappedFileSizeCommitLog
	crash(st)

	rnd := rand.New(rand.NewPCG(7, 7))
	for iter := 0; iter < 200; iter++ {
		cfg := base
		cfg.StorePathRootDir = t.TempDir()
		cfg.StorePathCommitLog = filepath.Join(cfg.StorePathRootDir, "commitlog")
		copyDir(t, base.StorePathRootDir, cfg.StorePathRootDir)
		os.Remove(filepath.Join(cfg.StorePathRootDir, "lock"))
		before := iter%2 == 0
		var rec span
		for {
			rec = recs[rnd.IntN(len(recs))]
			if (rec.off+rec.size <= flushed) == before && (rec.off >= flushed) == !before {
				break
			}
		}
		// Flip a byte the record checks cover: size, magic, physical
		// offset, body length or body. (The body CRC does not cover the
		// other header fields, the topic or the properties.)
		bodyEnd := rec.size - 2 - 1 - 1 // properties length, topic length, 1-byte topic "F"
		var covered []int64
		for p := int64(0); p < rec.size; p++ {
			if p < 8 || (p >= 28 && p < 36) || (p >= 84 && p < bodyEnd) {
				covered = append(covered, p)
			}
		}
		off := rec.off + covered[rnd.IntN(len(covered))]
		name := filepath.Join(cfg.StorePathCommitLog, fileName(off/fileSize*fileSize))
		f, err := os.OpenFile(name, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !before && iter%4 == 1 {
			// A torn write: the tail of the file from inside a record on
			// is lost (zeros).
			f.WriteAt(make([]byte, fileSize-off%fileSize), off%fileSize)
		} else {
			var b [1]byte
			f.ReadAt(b[:], off%fileSize)
			b[0] ^= byte(1 << rnd.IntN(8))
			f.WriteAt(b[:], off%fileSize)
		}
		f.Close()

		ffs := vfs.NewFaultFS(vfs.OS())
		ffs.SkipRealSync(true)
		s2, err := Open(cfg, ffs, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = s2.Start()
		if before {
			// A flipped bit in a blank marker's unused zeros or in
			// padding is harmless; anything inside a record must refuse.
			if err == nil {
				s2.Shutdown()
				continue
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), filepath.Base(name)) {
				t.Fatalf("iter %d: flip at %d (flushed %d): %v", iter, off, flushed, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("iter %d: flip at %d past flushed %d: start failed: %v", iter, off, flushed, err)
		}
		if got := s2.MaxPhyOffset(); got < flushed || got > end {
			t.Fatalf("iter %d: flip at %d: recovered end %d (flushed %d)", iter, off, got, flushed)
		} else if got > off {
			// Only a flip in a field no check covers (born time, flag, ...)
			// may survive; the record must still pass every check.
			b, err := s2.commitLog.read(nil, rec.off, int(rec.size))
			if err == nil {
				var v message.RecordView
				err = checkRecordAt(&v, b, rec.off, true)
			}
			if err != nil {
				t.Fatalf("iter %d: flip at %d kept a bad record (end %d): %v", iter, off, got, err)
			}
		}
		checkAll(t, s2, "F", 0, nil)
		s2.Shutdown()
	}
}

func TestSkipCorruptedRecords(t *testing.T) {
	cfg := testConfig(t)
	st := openStarted(t, cfg, vfs.OS())
	var offs []int64
	for i := 0; i < 50; i++ {
		offs = append(offs, mustPut(t, st, testMsg("S", 0, fmt.Sprint("s", i), "")).WroteOffset)
	}
	if err := st.Shutdown(); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(cfg.StorePathCommitLog, fileName(0))
	data, _ := os.ReadFile(name)
	data[offs[10]+90] ^= 0xff // inside record 10's body: CRC fails
	os.WriteFile(name, data, 0o644)

	st2, _ := Open(cfg, vfs.OS(), nil)
	if err := st2.Start(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprint(offs[10])) {
		t.Fatalf("expected refusal naming offset %d: %v", offs[10], err)
	}
	cfg.SkipCorruptedRecords = true
	st3 := openStarted(t, cfg, vfs.OS())
	if s := st3.Stats(); s.SkippedCorrupt != 1 {
		t.Fatalf("skipped %d", s.SkippedCorrupt)
	}
	if got := st3.MaxPhyOffset(); got != st3.commitLog.visible.Load() || got <= offs[49] {
		t.Fatalf("end %d", got)
	}
	n := 0
	for off := int64(0); off < st3.MaxOffsetInQueue("S", 0); {
		r := st3.GetMessage("g", "S", 0, off, 64, 1<<20, nil)
		for _, rec := range r.Buffers {
			ext, err := message.DecodeRecord(rec)
			if err != nil || string(ext.Body) == "s10" || bytes.Equal(ext.Body, nil) {
				t.Fatalf("bad or corrupted record returned: %v", err)
			}
			n++
		}
		off = r.NextBeginOffset
		r.Release()
	}
	if n != 49 {
		t.Fatalf("read %d records, want 49 (one skipped)", n)
	}
	// The skipped bytes were replaced by a filler record: a restart
	// without the option starts.
	st3.Shutdown()
	cfg.SkipCorruptedRecords = false
	os.Remove(filepath.Join(cfg.StorePathRootDir, "checkpoint")) // force a full validating scan
	os.WriteFile(filepath.Join(cfg.StorePathRootDir, "abort"), nil, 0o644)
	st4 := openStarted(t, cfg, vfs.OS())
	defer st4.Shutdown()
	if got := st4.MaxOffsetInQueue("S", 0); got != 50 {
		t.Fatalf("queue max after restart %d", got)
	}
	n = 0
	for off := int64(0); off < 50; {
		r := st4.GetMessage("g", "S", 0, off, 64, 1<<20, nil)
		n += len(r.Buffers)
		off = r.NextBeginOffset
		r.Release()
	}
	if n != 49 {
		t.Fatalf("after the rebuild: %d records, want 49 (a hole at offset 10)", n)
	}
}
