package index

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
)

const fuzzSlots, fuzzNum = 4, 8

// noSyncFS skips fsync and directory syncs, which only slow fuzzing down.
type noSyncFS struct{ stepClock }

type noSyncFile struct{ vfs.File }

func (noSyncFile) Datasync() error { return nil }
func (noSyncFile) Sync() error     { return nil }

func (n *noSyncFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := n.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

func (*noSyncFS) SyncDir(string) error { return nil }

func newNoSyncFS() *noSyncFS {
	return &noSyncFS{stepClock{FS: vfs.OS(), t: time.UnixMilli(baseTs)}}
}

// validFileBytes builds an index file with a few records for the seeds.
func validFileBytes(tb testing.TB, records int) []byte {
	tb.Helper()
	dir := tb.TempDir()
	s, err := Open(Config{Dir: dir, MaxHashSlotNum: fuzzSlots, MaxIndexNum: fuzzNum, Logger: quiet,
		FS: &stepClock{FS: vfs.OS(), t: time.UnixMilli(baseTs)}})
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < records; i++ {
		if err := s.Put("T", []string{"k"}, "", int64(i*100), baseTs+int64(i)*1500); err != nil {
			tb.Fatal(err)
		}
	}
	s.Close()
	names, _ := os.ReadDir(dir)
	b, err := os.ReadFile(filepath.Join(dir, names[0].Name()))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// FuzzOpenIndexFile opens arbitrary bytes as an index file, directly and
// through a Service, and queries, repairs, extends and truncates it. Nothing
// may panic or loop.
func FuzzOpenIndexFile(f *testing.F) {
	f.Add(validFileBytes(f, 5))
	f.Add(make([]byte, FileSize(fuzzSlots, fuzzNum)))
	f.Add([]byte("not an index file"))
	f.Fuzz(func(t *testing.T, data []byte) {
		size := int(FileSize(fuzzSlots, fuzzNum))
		if len(data) > 4*size {
			return // longer inputs add nothing but time
		}
		exact := make([]byte, size)
		copy(exact, data)
		for _, content := range [][]byte{data, exact} {
			dir := t.TempDir()
			path := filepath.Join(dir, "20260101000000000")
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			// Direct: pread path of an older file, then slot load and repair.
			fh, err := vfs.OS().OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if x, err := openIndexFile(fh, "20260101000000000", fuzzSlots, fuzzNum); err == nil {
				for _, kh := range []int32{0, 1, 2, 3, KeyHash("T#k"), 1 << 30} {
					out, _ := x.selectPhyOffsets(nil, kh, 100, 0, 1<<62)
					if len(out) > fuzzNum {
						t.Fatalf("%d results from %d entries", len(out), fuzzNum)
					}
				}
				if _, err := x.loadSlots(); err == nil {
					_, _ = x.repair(1 << 62)
				}
			}
			fh.Close()

			// Through the service.
			s, err := Open(Config{Dir: dir, MaxHashSlotNum: fuzzSlots, MaxIndexNum: fuzzNum, Logger: quiet,
				FS: newNoSyncFS()})
			if err != nil {
				continue
			}
			_, _ = s.Query("T", "k", 100, 0, 1<<62)
			for i := int64(0); i < 4; i++ {
				_ = s.Put("T", []string{"k", "z"}, "u", 1<<40+i, baseTs+i*1000)
			}
			if err := s.Truncate(1<<40 + 2); err != nil {
				t.Fatalf("truncate: %v", err)
			}
			r, err := s.Query("T", "k", 100, 0, 1<<62)
			if err != nil {
				t.Fatalf("query: %v", err)
			}
			for _, off := range r.PhyOffsets {
				if off >= 1<<40+2 {
					t.Fatalf("offset %d survived truncate", off)
				}
			}
			_, _ = s.DeleteExpired(1 << 41)
			_ = s.Close()
		}
	})
}
