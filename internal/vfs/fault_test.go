package vfs

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// readCounter is an FS whose files count the bytes ReadAt returns.
type readCounter struct {
	FS
	n atomic.Int64
}

func (c *readCounter) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &countedFile{File: f, n: &c.n}, nil
}

func (c *readCounter) Create(name string) (File, error) {
	return c.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

type countedFile struct {
	File
	n *atomic.Int64
}

func (f *countedFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.n.Add(int64(n))
	return n, err
}

// TestFaultSyncReadsOnlyDirtyRanges: a sync of a large file after a
// small write reads back the written range, not the file.
func TestFaultSyncReadsOnlyDirtyRanges(t *testing.T) {
	inner := &readCounter{FS: OS()}
	fs := NewFaultFS(inner)
	fs.SkipRealSync(true)
	dir := t.TempDir()
	f, err := fs.Create(filepath.Join(dir, "big"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(1 << 20); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	for i, w := range []struct{ off, n int64 }{{70000, 10}, {70005, 100}, {500, 1}, {1<<20 - 3, 3}} {
		if _, err := f.WriteAt(bytes.Repeat([]byte{byte(i + 1)}, int(w.n)), w.off); err != nil {
			t.Fatal(err)
		}
	}
	before := inner.n.Load()
	if err := f.Datasync(); err != nil {
		t.Fatal(err)
	}
	if got := inner.n.Load() - before; got != 105+1+3 {
		t.Fatalf("sync read %d bytes back, want the 109 written", got)
	}
	before = inner.n.Load()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := inner.n.Load() - before; got != 0 {
		t.Fatalf("a sync with nothing changed read %d bytes", got)
	}
}

// TestFaultCrashMatchesMemFS runs the same random writes (pwrite, mapped
// writes, truncates) and syncs on FaultFS over a real disk and on MemFS,
// crashes both and compares what survived: the two crash models agree.
func TestFaultCrashMatchesMemFS(t *testing.T) {
	const maxSize = 64 << 10
	for seed := range uint64(20) {
		rnd := rand.New(rand.NewPCG(seed, 7))
		dir := t.TempDir()
		ffs := NewFaultFS(OS())
		ffs.SkipRealSync(true)
		mfs := NewMemFS()
		mfs.MkdirAll(dir, 0o755)
		type pair struct {
			f, m File
			fm   []byte // mapping of f
			mm   []byte // mapping of m
		}
		open := func() pair {
			var p pair
			var err error
			name := filepath.Join(dir, "f")
			if p.f, err = ffs.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644); err != nil {
				t.Fatal(err)
			}
			if p.m, err = mfs.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		p := open()
		for _, f := range []File{p.f, p.m} {
			f.Truncate(maxSize)
			f.Sync()
		}
		ffs.SyncDir(dir)
		mfs.SyncDir(dir)
		size := int64(maxSize)
		var err error
		if p.fm, err = p.f.Mmap(0, maxSize); err != nil {
			t.Fatal(err)
		}
		if p.mm, err = p.m.Mmap(0, maxSize); err != nil {
			t.Fatal(err)
		}
		for range 200 {
			switch op := rnd.IntN(10); {
			case op < 4: // pwrite within the reserve
				off := rnd.Int64N(maxSize - 1)
				b := bytes.Repeat([]byte{byte(rnd.IntN(255) + 1)}, 1+rnd.IntN(int(min(maxSize-off, 9000))))
				p.f.WriteAt(b, off)
				p.m.WriteAt(b, off)
				size = max(size, off+int64(len(b)))
			case op < 6: // a write through the mapping, within the size
				off := rnd.Int64N(size)
				n := 1 + rnd.Int64N(min(size-off, 5000))
				v := byte(rnd.IntN(255) + 1)
				for i := off; i < off+n; i++ {
					p.fm[i], p.mm[i] = v, v
				}
			case op < 7:
				n := maxSize/2 + rnd.Int64N(maxSize/2+1)
				p.f.Truncate(n)
				p.m.Truncate(n)
				size = n
			case op < 8:
				p.f.Datasync()
				p.m.Datasync()
			default:
				p.f.Sync()
				p.m.Sync()
			}
		}
		p.f.Munmap(p.fm)
		p.m.Munmap(p.mm)
		p.f.Close()
		p.m.Close()
		if err := ffs.Crash(dir, CrashOptions{}); err != nil {
			t.Fatal(err)
		}
		mfs.Crash(dir, CrashOptions{})
		got, _ := memRead(t, OS(), filepath.Join(dir, "f"))
		want, _ := memRead(t, mfs, filepath.Join(dir, "f"))
		if !bytes.Equal(got, want) {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Fatalf("seed %d: FaultFS kept %d bytes, MemFS %d; first difference at %d", seed, len(got), len(want), i)
		}
	}
}

// grown keeps the bytes it had, zeroes the rest, also where a cut-off
// tail is still in the capacity, and across pieces.
func TestGrownZeroesTheExtension(t *testing.T) {
	for _, tc := range []struct {
		name      string
		have, cut int // bytes written, then kept
		n         int64
	}{
		{"empty", 0, 0, 10},
		{"new backing", 5, 5, 3*syncReadChunk + 7},
		{"new backing, old bytes over pieces", 2*syncReadChunk + 9, 2*syncReadChunk + 9, 3*syncReadChunk + 7},
		{"in the capacity after a cut", 2*syncReadChunk + 9, 3, 2*syncReadChunk + 1},
		{"same length", 4, 4, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := make([]byte, tc.have)
			for i := range b {
				b[i] = byte(i%251 + 1)
			}
			got := grown(b[:tc.cut], tc.n)
			if int64(len(got)) != tc.n {
				t.Fatalf("len %d, want %d", len(got), tc.n)
			}
			for i, c := range got {
				want := byte(0)
				if i < tc.cut {
					want = byte(i%251 + 1)
				}
				if c != want {
					t.Fatalf("byte %d is %d, want %d", i, c, want)
				}
			}
		})
	}
}
