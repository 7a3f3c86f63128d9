package store

import (
	"bytes"
	"math/rand"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
)

// sameBytes compares the master's and the slave's readable bytes in
// [from, to).
func sameBytes(t *testing.T, m, s *ReplicaLog, from, to int64) {
	t.Helper()
	a, b := make([]byte, 8192), make([]byte, 8192)
	for off := from; off < to; {
		k := int(min(int64(len(a)), to-off))
		n, err := m.ReadAt(a[:k], off)
		if err != nil || n == 0 {
			t.Fatalf("master ReadAt(%d): %d bytes, %v", off, n, err)
		}
		got, err := s.ReadAt(b[:n], off)
		if err != nil || got != n {
			t.Fatalf("slave ReadAt(%d): %d bytes, %v; want %d", off, got, err, n)
		}
		if !bytes.Equal(a[:n], b[:n]) {
			t.Fatalf("logs differ in [%d, %d)", off, off+int64(n))
		}
		off += int64(n)
	}
}

// TestReplicaLogSpillsWhileCreationLags: a slave whose next CommitLog file
// is still being created when its replicated bytes reach the file's start
// continues into the write spill, as a master's put does, instead of
// waiting for the creation. The spilled bytes are readable and equal to
// the master's, they are not acknowledged (AckOffset) until the spill is
// in its file, and the log ends equal to the master's.
func TestReplicaLogSpillsWhileCreationLags(t *testing.T) {
	mcfg, scfg := testConfig(t), testConfig(t)
	scfg.PreallocateFiles = 1
	ms := openStarted(t, mcfg, vfs.OS())
	sfs := vfs.NewFaultFS(vfs.OS())
	ss := openStarted(t, scfg, sfs)
	fillMaster(t, ms, 1500) // several 64 KiB files
	size := scfg.MappedFileSizeCommitLog
	m, s := NewReplicaLog(ms), NewReplicaLog(ss)
	if m.MaxOffset() < 3*size {
		t.Fatalf("the master holds %d bytes, want more than three files", m.MaxOffset())
	}
	sc := ss.commitLog
	eventually(t, "a file ready ahead on the slave", func() bool {
		return sc.alloc.readyCount() >= 1 && sc.spareSpill.Load() != nil
	})
	start := ss.Stats()

	// File 1 is ready; the creation of file 2, begun at the roll into
	// file 1, takes 2 s.
	sfs.SetLatency(vfs.OpCreate, 2*time.Second)
	rng := rand.New(rand.NewSource(7))
	mid := 2*size + size/2
	replicate(t, m, s, rng, mid)
	st := ss.Stats()
	if st.Spills == start.Spills || st.SpillWrites == start.SpillWrites {
		t.Fatalf("no spill: spills %d, spill writes %d", st.Spills-start.Spills, st.SpillWrites-start.SpillWrites)
	}
	if st.PutWaitedOnCreate != start.PutWaitedOnCreate {
		t.Fatalf("the append waited %d times for a file creation", st.PutWaitedOnCreate-start.PutWaitedOnCreate)
	}
	if got := s.MaxOffset(); got != mid {
		t.Fatalf("the slave's log ends at %d, want %d", got, mid)
	}
	// Readable from the spill, byte for byte the master's.
	sameBytes(t, m, s, 0, sc.visible.Load())
	if sc.visible.Load() <= 2*size {
		t.Fatalf("nothing readable from the spill: readable end %d", sc.visible.Load())
	}
	// Acknowledged only up to the file the spill stands in for, until the
	// spill is in it.
	if sp := sc.spilling.Load(); sp != nil {
		if got := s.AckOffset(); got != 2*size {
			t.Fatalf("AckOffset %d while [%d, %d) is only in the spill, want %d", got, 2*size, mid, 2*size)
		}
	}
	eventually(t, "the spill's adoption", func() bool { return s.AckOffset() == mid })
	sfs.SetLatency(vfs.OpCreate, 0)
	eventually(t, "a file ready ahead on the slave again", func() bool {
		return sc.alloc.readyCount() >= 1 && sc.spareSpill.Load() != nil
	})

	// The rest at memory speed: the next spill may fill before its file
	// exists, and then waits (TestReplicaLogSpillFullWaitsForTheFile).
	replicate(t, m, s, rng, m.MaxOffset())
	sameLog(t, m, s)
	// The last records may be in a new spill whose file is still being
	// made: acknowledged once it is adopted.
	eventually(t, "the whole log acknowledged", func() bool { return s.AckOffset() == m.MaxOffset() })
	waitDispatched(t, ss, "T", 0, 750)
	waitDispatched(t, ss, "T", 1, 750)
	if err := ms.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := ss.Shutdown(); err != nil {
		t.Fatal(err)
	}
	sameQueues(t, mcfg.StorePathRootDir, scfg.StorePathRootDir)

	// A restart reads the same bytes back from the files.
	ms = openStarted(t, mcfg, vfs.OS())
	defer ms.Shutdown()
	ss = openStarted(t, scfg, vfs.OS())
	defer ss.Shutdown()
	sameLog(t, NewReplicaLog(ms), NewReplicaLog(ss))
}

// TestReplicaLogSpillFullWaitsForTheFile: bytes that do not fit the spill
// (here a spill smaller than a file) wait for the spill's file, counted,
// and land in it equal to the master's.
func TestReplicaLogSpillFullWaitsForTheFile(t *testing.T) {
	mcfg, scfg := testConfig(t), testConfig(t)
	scfg.PreallocateFiles = 1
	scfg.WriteSpillSize = 8 << 10
	ms := openStarted(t, mcfg, vfs.OS())
	defer ms.Shutdown()
	sfs := vfs.NewFaultFS(vfs.OS())
	ss := openStarted(t, scfg, sfs)
	defer ss.Shutdown()
	fillMaster(t, ms, 1500)
	m, s := NewReplicaLog(ms), NewReplicaLog(ss)
	sc := ss.commitLog
	eventually(t, "a file ready ahead on the slave", func() bool {
		return sc.alloc.readyCount() >= 1 && sc.spareSpill.Load() != nil
	})
	start := ss.Stats()
	sfs.SetLatency(vfs.OpCreate, 500*time.Millisecond)
	rng := rand.New(rand.NewSource(3))
	replicate(t, m, s, rng, 3*scfg.MappedFileSizeCommitLog)
	sfs.SetLatency(vfs.OpCreate, 0)
	st := ss.Stats()
	if st.Spills == start.Spills || st.PutWaitedOnCreate == start.PutWaitedOnCreate {
		t.Fatalf("spills %d, waits on creation %d: want both", st.Spills-start.Spills, st.PutWaitedOnCreate-start.PutWaitedOnCreate)
	}
	if sc.spilling.Load() != nil {
		t.Fatal("still spilling after the spill's file was waited for")
	}
	replicate(t, m, s, rng, m.MaxOffset())
	sameLog(t, m, s)
}
