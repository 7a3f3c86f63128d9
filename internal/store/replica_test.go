package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

// fillMaster puts n messages of mixed sizes over two queues.
func fillMaster(t *testing.T, st *DefaultMessageStore, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		body := fmt.Sprintf("body-%d-%s", i, bytes.Repeat([]byte{'x'}, i%300))
		mustPut(t, st, testMsg("T", int32(i%2), body, "A"))
	}
}

// replicate copies the master's log into the slave in pieces of random
// sizes, each within one file, as the HA stream does.
func replicate(t *testing.T, m, s *ReplicaLog, rng *rand.Rand, upto int64) {
	t.Helper()
	buf := make([]byte, 4096)
	for off := s.MaxOffset(); off < upto; {
		k := int(min(int64(1+rng.Intn(len(buf))), upto-off))
		n, err := m.ReadAt(buf[:k], off)
		if err != nil {
			t.Fatalf("ReadAt(%d): %v", off, err)
		}
		if n == 0 {
			t.Fatalf("ReadAt(%d) read nothing below %d", off, upto)
		}
		if err := s.AppendReplicated(off, buf[:n]); err != nil {
			t.Fatalf("AppendReplicated(%d, %d bytes): %v", off, n, err)
		}
		off += int64(n)
	}
}

func sameLog(t *testing.T, m, s *ReplicaLog) {
	t.Helper()
	if m.MaxOffset() != s.MaxOffset() {
		t.Fatalf("master ends at %d, slave at %d", m.MaxOffset(), s.MaxOffset())
	}
	a, b := make([]byte, 8192), make([]byte, 8192)
	for off := int64(0); off < m.MaxOffset(); {
		n, err := m.ReadAt(a, off)
		if err != nil {
			t.Fatal(err)
		}
		k, err := s.ReadAt(b[:n], off)
		if err != nil || k != n {
			t.Fatalf("slave ReadAt(%d): %d bytes, %v; want %d", off, k, err, n)
		}
		if !bytes.Equal(a[:n], b[:n]) {
			t.Fatalf("logs differ in [%d, %d)", off, off+int64(n))
		}
		off += int64(n)
	}
}

// sameQueues compares the consume-queue files of two stopped stores.
func sameQueues(t *testing.T, mdir, sdir string) {
	t.Helper()
	files := 0
	err := filepath.Walk(filepath.Join(mdir, "consumequeue"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(mdir, p)
		want, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		got, err := os.ReadFile(filepath.Join(sdir, rel))
		if err != nil {
			return fmt.Errorf("slave lacks %s: %w", rel, err)
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("%s differs", rel)
		}
		files++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no consume-queue files compared")
	}
}

func TestReplicaLogCopiesTheLogAndBuildsTheQueues(t *testing.T) {
	mcfg, scfg := testConfig(t), testConfig(t)
	ms := openStarted(t, mcfg, vfs.OS())
	ss := openStarted(t, scfg, vfs.OS())
	fillMaster(t, ms, 1500) // several 64 KiB files
	m, s := NewReplicaLog(ms), NewReplicaLog(ss)
	rng := rand.New(rand.NewSource(1))
	replicate(t, m, s, rng, m.MaxOffset())
	sameLog(t, m, s)
	waitDispatched(t, ss, "T", 0, 750)
	waitDispatched(t, ss, "T", 1, 750)
	if ms.commitLog.mfq.count() < 3 {
		t.Fatalf("only %d CommitLog files: the rolls were not exercised", ms.commitLog.mfq.count())
	}
	if err := ms.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := ss.Shutdown(); err != nil {
		t.Fatal(err)
	}
	sameQueues(t, mcfg.StorePathRootDir, scfg.StorePathRootDir)
}

func TestReplicaLogWaitsForAPartialRecord(t *testing.T) {
	ms := openStarted(t, testConfig(t), vfs.OS())
	defer ms.Shutdown()
	ss := openStarted(t, testConfig(t), vfs.OS())
	defer ss.Shutdown()
	fillMaster(t, ms, 10)
	m, s := NewReplicaLog(ms), NewReplicaLog(ss)
	end := m.MaxOffset()
	all := make([]byte, end)
	if n, err := m.ReadAt(all, 0); err != nil || int64(n) != end {
		t.Fatalf("ReadAt: %d, %v", n, err)
	}
	// Everything but the last 5 bytes: nine records and part of the tenth.
	if err := s.AppendReplicated(0, all[:end-5]); err != nil {
		t.Fatal(err)
	}
	if s.MaxOffset() != end-5 {
		t.Fatalf("slave reports %d, want %d", s.MaxOffset(), end-5)
	}
	// The dispatcher indexes the nine complete records and waits for the
	// tenth; it does not fail on the partial one.
	deadline := time.Now().Add(20 * time.Second)
	for ss.MaxOffsetInQueue("T", 0) < 5 || ss.MaxOffsetInQueue("T", 1) < 4 {
		if p := ss.disp.failing.Load(); p != nil {
			t.Fatalf("a partial trailing record failed dispatch: %s", *p)
		}
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for dispatch")
		}
		time.Sleep(time.Millisecond)
	}
	if p := ss.disp.failing.Load(); p != nil {
		t.Fatalf("a partial trailing record failed dispatch: %s", *p)
	}
	if got := ss.MaxOffsetInQueue("T", 1); got != 4 {
		t.Fatalf("queue 1 has %d entries before its last record is complete, want 4", got)
	}
	if err := s.AppendReplicated(end-5, all[end-5:]); err != nil {
		t.Fatal(err)
	}
	waitDispatched(t, ss, "T", 1, 5)
}

func TestReplicaLogRefusesAWrongOffsetAndGarbage(t *testing.T) {
	ms := openStarted(t, testConfig(t), vfs.OS())
	defer ms.Shutdown()
	ss := openStarted(t, testConfig(t), vfs.OS())
	defer ss.Shutdown()
	fillMaster(t, ms, 3)
	m, s := NewReplicaLog(ms), NewReplicaLog(ss)
	all := make([]byte, m.MaxOffset())
	if _, err := m.ReadAt(all, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendReplicated(100, all[100:]); !errors.Is(err, ErrReplicaOffset) {
		t.Fatalf("append at 100 of an empty log: %v, want ErrReplicaOffset", err)
	}
	garbage := bytes.Repeat([]byte{0xAB}, 64)
	if err := s.AppendReplicated(0, garbage); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("garbage: %v, want ErrCorrupt", err)
	}
	if s.MaxOffset() != 0 {
		t.Fatalf("refused bytes moved the end to %d", s.MaxOffset())
	}
	if err := s.AppendReplicated(0, all); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendReplicated(10, all[:10]); !errors.Is(err, ErrReplicaOffset) || !bytes.Contains([]byte(err.Error()), []byte("at 10")) {
		t.Fatalf("append behind the end: %v", err)
	}
}

// A slave killed with a partial record at its end restarts at its last
// complete record, and the master's resent bytes continue from there.
func TestReplicaLogRecoversToTheLastCompleteRecord(t *testing.T) {
	ms := openStarted(t, testConfig(t), vfs.OS())
	defer ms.Shutdown()
	scfg := testConfig(t)
	ss := openStarted(t, scfg, vfs.OS())
	fillMaster(t, ms, 700)
	m, s := NewReplicaLog(ms), NewReplicaLog(ss)
	end := m.MaxOffset()
	rng := rand.New(rand.NewSource(2))
	replicate(t, m, s, rng, end-300)
	for _, mf := range ss.commitLog.mfq.snapshot() { // the partial tail reaches the disk
		if _, err := mf.flush(); err != nil {
			t.Fatal(err)
		}
	}
	complete := ss.commitLog.visible.Load()
	if complete == s.MaxOffset() {
		t.Fatal("the cut did not leave a partial record")
	}
	if err := ss.writeCheckpoint(); err != nil {
		t.Fatal(err)
	}
	crash(ss)

	ss = openStarted(t, scfg, vfs.OS())
	defer ss.Shutdown()
	s = NewReplicaLog(ss)
	if s.MaxOffset() != complete {
		t.Fatalf("after the crash the slave ends at %d, want its last complete record's end %d", s.MaxOffset(), complete)
	}
	replicate(t, m, s, rng, end)
	sameLog(t, m, s)
	waitDispatched(t, ss, "T", 0, 350)
	waitDispatched(t, ss, "T", 1, 350)
}

// A new slave of a master whose first files are gone begins at the
// master's first file; its queues begin at the logical offsets found
// there, and a restart keeps it.
func TestReplicaLogStartsAnEmptyLogAtTheMastersFirstFile(t *testing.T) {
	ms := openStarted(t, testConfig(t), vfs.OS())
	defer ms.Shutdown()
	scfg := testConfig(t)
	ss := openStarted(t, scfg, vfs.OS())
	fillMaster(t, ms, 1000)
	m, s := NewReplicaLog(ms), NewReplicaLog(ss)
	from := 2 * scfg.MappedFileSizeCommitLog
	if err := s.AppendReplicated(from+100, make([]byte, 10)); !errors.Is(err, ErrReplicaOffset) {
		t.Fatalf("a start inside a file: %v, want ErrReplicaOffset", err)
	}
	if err := s.AppendReplicated(from, nil); err != nil {
		t.Fatalf("a heartbeat before the first bytes: %v", err)
	}
	buf := make([]byte, 4096)
	for off := from; off < m.MaxOffset(); {
		n, err := m.ReadAt(buf, off)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AppendReplicated(off, buf[:n]); err != nil {
			t.Fatalf("AppendReplicated(%d): %v", off, err)
		}
		off += int64(n)
	}
	if s.MinOffset() != from || s.MaxOffset() != m.MaxOffset() {
		t.Fatalf("slave holds [%d, %d), want [%d, %d)", s.MinOffset(), s.MaxOffset(), from, m.MaxOffset())
	}
	want := int64(500) // 1000 messages over two queues
	waitDispatched(t, ms, "T", 0, want)
	deadline := time.Now().Add(20 * time.Second)
	for ss.MaxOffsetInQueue("T", 0) != want {
		if time.Now().After(deadline) {
			t.Fatalf("slave queue 0 at %d, want %d", ss.MaxOffsetInQueue("T", 0), want)
		}
		time.Sleep(time.Millisecond)
	}
	if min := ss.MinOffsetInQueue("T", 0); min == 0 || min >= want {
		t.Fatalf("slave queue 0 begins at %d (max %d): not at the first file's records", min, want)
	}
	if err := s.AppendReplicated(0, buf[:10]); !errors.Is(err, ErrReplicaOffset) {
		t.Fatalf("a second start: %v", err)
	}
	if err := ss.Shutdown(); err != nil {
		t.Fatal(err)
	}
	ss = openStarted(t, scfg, vfs.OS())
	defer ss.Shutdown()
	if r := NewReplicaLog(ss); r.MinOffset() != from || r.MaxOffset() != m.MaxOffset() {
		t.Fatalf("after a restart the slave holds [%d, %d)", r.MinOffset(), r.MaxOffset())
	}
}

// Bytes that end inside a file's end-of-file marker leave the readable
// end at the marker and the reported end at the bytes: a slave reports
// exactly what it holds.
func TestReplicaLogEndInsideTheEndOfFileMarker(t *testing.T) {
	ms := openStarted(t, testConfig(t), vfs.OS())
	defer ms.Shutdown()
	scfg := testConfig(t)
	ss := openStarted(t, scfg, vfs.OS())
	defer ss.Shutdown()
	fillMaster(t, ms, 600)
	m, s := NewReplicaLog(ms), NewReplicaLog(ss)
	size := scfg.MappedFileSizeCommitLog
	head := make([]byte, 8)
	blank := int64(0)
	for {
		if _, err := m.ReadAt(head, blank); err != nil {
			t.Fatal(err)
		}
		if int32(binary.BigEndian.Uint32(head[4:])) == message.BlankMagicCode {
			break
		}
		blank += int64(binary.BigEndian.Uint32(head))
	}
	if size-blank < 10 {
		t.Skipf("the marker is %d bytes: too short to end inside", size-blank)
	}
	rng := rand.New(rand.NewSource(3))
	replicate(t, m, s, rng, blank+9)
	if s.MaxOffset() != blank+9 || ss.commitLog.visible.Load() != blank {
		t.Fatalf("reported end %d, readable end %d; want %d and the marker at %d", s.MaxOffset(), ss.commitLog.visible.Load(), blank+9, blank)
	}
	replicate(t, m, s, rng, size)
	if s.MaxOffset() != size || ss.commitLog.visible.Load() != size {
		t.Fatalf("at the file end: reported %d, readable %d; want %d", s.MaxOffset(), ss.commitLog.visible.Load(), size)
	}
	replicate(t, m, s, rng, m.MaxOffset())
	sameLog(t, m, s)
}
