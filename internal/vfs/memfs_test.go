package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"
	"testing"
)

func memRead(t *testing.T, fs FS, p string) ([]byte, bool) {
	t.Helper()
	f, err := fs.OpenFile(p, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, _ := f.Size()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return b, true
}

func memWrite(t *testing.T, fs FS, p, data string, sync bool) File {
	t.Helper()
	f, err := fs.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := f.Size()
	if _, err := f.WriteAt([]byte(data), n); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestMemFSDurabilityMatrix checks, case by case, what survives a crash.
func TestMemFSDurabilityMatrix(t *testing.T) {
	type result struct {
		data   string
		exists bool
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, fs *MemFS)
		want  map[string]result
	}{
		{"written not synced, entry not synced", func(t *testing.T, fs *MemFS) {
			memWrite(t, fs, "/d/a", "x", false).Close()
		}, map[string]result{"/d/a": {}}},
		{"synced but entry not synced", func(t *testing.T, fs *MemFS) {
			memWrite(t, fs, "/d/a", "x", true).Close()
		}, map[string]result{"/d/a": {}}},
		{"entry synced, bytes not", func(t *testing.T, fs *MemFS) {
			memWrite(t, fs, "/d/a", "x", false).Close()
			fs.SyncDir("/d")
		}, map[string]result{"/d/a": {"", true}}},
		{"both synced", func(t *testing.T, fs *MemFS) {
			memWrite(t, fs, "/d/a", "x", true).Close()
			fs.SyncDir("/d")
		}, map[string]result{"/d/a": {"x", true}}},
		{"append after sync lost", func(t *testing.T, fs *MemFS) {
			memWrite(t, fs, "/d/a", "x", true).Close()
			fs.SyncDir("/d")
			memWrite(t, fs, "/d/a", "yz", false).Close()
		}, map[string]result{"/d/a": {"x", true}}},
		{"datasync after dir sync kept", func(t *testing.T, fs *MemFS) {
			memWrite(t, fs, "/d/a", "x", false).Close()
			fs.SyncDir("/d")
			f := memWrite(t, fs, "/d/a", "yz", false)
			f.Datasync()
			f.Close()
		}, map[string]result{"/d/a": {"xyz", true}}},
		{"renamed not dir-synced", func(t *testing.T, fs *MemFS) {
			memWrite(t, fs, "/d/a", "x", true).Close()
			fs.SyncDir("/d")
			fs.Rename("/d/a", "/d/b")
		}, map[string]result{"/d/a": {"x", true}, "/d/b": {}}},
		{"renamed and dir-synced", func(t *testing.T, fs *MemFS) {
			memWrite(t, fs, "/d/a", "x", true).Close()
			fs.SyncDir("/d")
			fs.Rename("/d/a", "/d/b")
			fs.SyncDir("/d")
		}, map[string]result{"/d/a": {}, "/d/b": {"x", true}}},
		{"rename over an old file not dir-synced", func(t *testing.T, fs *MemFS) {
			memWrite(t, fs, "/d/a", "old", true).Close()
			memWrite(t, fs, "/d/a.tmp", "new", true).Close()
			fs.SyncDir("/d")
			fs.Rename("/d/a.tmp", "/d/a")
		}, map[string]result{"/d/a": {"old", true}, "/d/a.tmp": {"new", true}}},
		{"removed not dir-synced comes back", func(t *testing.T, fs *MemFS) {
			memWrite(t, fs, "/d/a", "x", true).Close()
			fs.SyncDir("/d")
			fs.Remove("/d/a")
		}, map[string]result{"/d/a": {"x", true}}},
		{"removed and dir-synced", func(t *testing.T, fs *MemFS) {
			memWrite(t, fs, "/d/a", "x", true).Close()
			fs.SyncDir("/d")
			fs.Remove("/d/a")
			fs.SyncDir("/d")
		}, map[string]result{"/d/a": {}}},
		{"synced after removal keeps durable image of the other name", func(t *testing.T, fs *MemFS) {
			f := memWrite(t, fs, "/d/a", "x", true)
			fs.SyncDir("/d")
			fs.Rename("/d/a", "/d/b")
			f.WriteAt([]byte("y"), 1)
			f.Sync() // the inode is the same: its bytes are durable under the old name
			f.Close()
		}, map[string]result{"/d/a": {"xy", true}, "/d/b": {}}},
		{"truncate not synced", func(t *testing.T, fs *MemFS) {
			f := memWrite(t, fs, "/d/a", "abcdef", true)
			fs.SyncDir("/d")
			f.Truncate(2)
			f.Close()
		}, map[string]result{"/d/a": {"abcdef", true}}},
		{"truncate synced then grown", func(t *testing.T, fs *MemFS) {
			f := memWrite(t, fs, "/d/a", "abcdef", true)
			fs.SyncDir("/d")
			f.Truncate(2)
			f.Truncate(4)
			f.Sync()
			f.Close()
		}, map[string]result{"/d/a": {"ab\x00\x00", true}}},
		{"punched hole synced", func(t *testing.T, fs *MemFS) {
			f := memWrite(t, fs, "/d/a", "abcdef", true)
			fs.SyncDir("/d")
			f.Fallocate(FallocPunchHole|FallocKeepSize, 1, 2)
			f.Sync()
			f.Close()
		}, map[string]result{"/d/a": {"a\x00\x00def", true}}},
		{"other directory's sync does not help", func(t *testing.T, fs *MemFS) {
			memWrite(t, fs, "/d/a", "x", true).Close()
			fs.SyncDir("/e")
		}, map[string]result{"/d/a": {}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := NewMemFS()
			fs.MkdirAll("/d", 0o755)
			fs.MkdirAll("/e", 0o755)
			c.setup(t, fs)
			fs.Crash("/", CrashOptions{})
			for p, w := range c.want {
				got, ok := memRead(t, fs, p)
				if ok != w.exists || ok && string(got) != w.data {
					t.Errorf("%s: exists %v %q, want exists %v %q", p, ok, got, w.exists, w.data)
				}
			}
		})
	}
}

func TestMemFSMmapCoherentWithPread(t *testing.T) {
	fs := NewMemFS()
	fs.MkdirAll("/d", 0o755)
	f, err := fs.Create("/d/m")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3 * memPage); err != nil {
		t.Fatal(err)
	}
	f.Sync()
	fs.SyncDir("/d")
	m, err := f.Mmap(0, 3*memPage)
	if err != nil {
		t.Fatal(err)
	}
	copy(m[5000:], "mapped")
	got := make([]byte, 6)
	if _, err := f.ReadAt(got, 5000); err != nil || string(got) != "mapped" {
		t.Fatalf("pread after mapped write: %q %v", got, err)
	}
	f.WriteAt([]byte("pwrite"), 100)
	if string(m[100:106]) != "pwrite" {
		t.Fatalf("mapping after pwrite: %q", m[100:106])
	}
	if err := f.Truncate(1 << 20); !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("growing a mapped file beyond its reservation: %v", err)
	}
	// Msync of a range makes exactly that range durable.
	copy(m[9000:], "later")
	if err := f.Msync(m[5000:5006]); err != nil {
		t.Fatal(err)
	}
	if err := f.Msync([]byte("not mapped")); !errors.Is(err, ErrNotMapped) {
		t.Fatalf("msync of a foreign slice: %v", err)
	}
	if r, err := f.Resident(m); err != nil || r != 3*memPage {
		t.Fatalf("resident %d %v", r, err)
	}
	fs.Crash("/", CrashOptions{})
	b, _ := memRead(t, fs, "/d/m")
	if len(b) != 3*memPage || string(b[5000:5006]) != "mapped" || !bytes.Equal(b[9000:9005], make([]byte, 5)) ||
		!bytes.Equal(b[100:106], make([]byte, 6)) {
		t.Fatalf("image: len %d %q %q %q", len(b), b[5000:5006], b[9000:9005], b[100:106])
	}
	// The handle outlives the crash on a detached copy; Sync of a mapped
	// file takes the mapped bytes too.
	copy(m[200:], "after")
	if err := f.Munmap(m); err != nil {
		t.Fatal(err)
	}
	f.Close()
	f2, _ := fs.OpenFile("/d/m", os.O_RDWR, 0)
	m2, _ := f2.Mmap(0, 3*memPage)
	copy(m2[8000:], "whole")
	f2.Sync()
	f2.Munmap(m2)
	f2.Close()
	fs.Crash("/", CrashOptions{})
	b, _ = memRead(t, fs, "/d/m")
	if string(b[8000:8005]) != "whole" || string(b[5000:5006]) != "mapped" || !bytes.Equal(b[200:205], make([]byte, 5)) {
		t.Fatalf("after second crash: %q %q %q", b[8000:8005], b[5000:5006], b[200:205])
	}
}

func TestMemFSSyncCopiesOnlyDirtyPages(t *testing.T) {
	fs := NewMemFS()
	fs.MkdirAll("/d", 0o755)
	f, _ := fs.Create("/d/big")
	defer f.Close()
	f.Truncate(1 << 20)
	f.WriteAt(bytes.Repeat([]byte{1}, 1<<20), 0)
	f.Sync()
	n := f.(*memFile).node
	f.WriteAt([]byte{2}, 70000)
	if len(n.dirty) != 1 {
		t.Fatalf("dirty pages %d, want 1", len(n.dirty))
	}
	before := &n.durPages[0][0]
	f.Sync()
	if len(n.dirty) != 0 || &n.durPages[0][0] != before || n.durPages[70000/memPage][70000%memPage] != 2 {
		t.Fatal("sync rewrote clean pages or lost the dirty one")
	}
}

func TestMemFSGarbageAfterSyncedLength(t *testing.T) {
	fs := NewMemFS()
	fs.MkdirAll("/d", 0o755)
	f := memWrite(t, fs, "/d/a", "synced", true)
	fs.SyncDir("/d")
	f.WriteAt([]byte("unsynced tail"), 6)
	f.Close()
	fs.Crash("/", CrashOptions{Garbage: true, Rand: rand.New(rand.NewPCG(3, 4))})
	b, _ := memRead(t, fs, "/d/a")
	if len(b) != 19 || string(b[:6]) != "synced" || string(b[6:]) == "unsynced tail" {
		t.Fatalf("garbage image %q", b)
	}
}

func TestMemFSNamespace(t *testing.T) {
	fs := NewMemFS()
	if _, err := fs.Create("/no/dir/f"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("create in a missing directory: %v", err)
	}
	fs.MkdirAll("/a/b", 0o755)
	memWrite(t, fs, "/a/f", "1", false).Close()
	if _, err := fs.OpenFile("/a/f", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, os.ErrExist) {
		t.Fatalf("O_EXCL: %v", err)
	}
	names, err := fs.ReadDir("/a")
	if err != nil || fmt.Sprint(names) != "[b f]" {
		t.Fatalf("readdir %v %v", names, err)
	}
	if err := fs.Remove("/a"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("remove non-empty dir: %v", err)
	}
	if st, err := fs.Stat("/a/f"); err != nil || st.Size() != 1 || st.IsDir() {
		t.Fatalf("stat %v %v", st, err)
	}
	l, err := fs.Lock("/a/lock")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Lock("/a/lock"); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v", err)
	}
	l.Close()
	l2, err := fs.Lock("/a/lock")
	if err != nil {
		t.Fatal(err)
	}
	l2.Close()
	fs.SetCapacity(1000)
	if u, _ := fs.Statfs("/a"); u.Total != 1000 || u.Free != 999 {
		t.Fatalf("statfs %+v", u)
	}
	ro, _ := fs.OpenFile("/a/f", os.O_RDONLY, 0)
	if _, err := ro.WriteAt([]byte("x"), 0); err == nil {
		t.Fatal("write through a read-only handle")
	}
	ro.Close()
	if _, err := ro.ReadAt(make([]byte, 1), 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
}

// TestMemFSConcurrent runs writers, readers, syncs and directory syncs at
// once; -race checks the locking, the end state checks no write was lost.
func TestMemFSConcurrent(t *testing.T) {
	fs := NewMemFS()
	fs.MkdirAll("/d", 0o755)
	const workers, writes = 4, 200
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := fmt.Sprintf("/d/f%d", w)
			f, err := fs.Create(p)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			for i := 0; i < writes; i++ {
				f.WriteAt([]byte{byte(i)}, int64(i))
				if i%10 == 0 {
					f.Datasync()
					fs.SyncDir("/d")
					fs.ReadDir("/d")
					fs.Statfs("/d")
				}
				b := make([]byte, 1)
				f.ReadAt(b, int64(i))
				if b[0] != byte(i) {
					t.Errorf("%s[%d] = %d", p, i, b[0])
				}
			}
			f.Sync()
		}()
	}
	wg.Wait()
	fs.SyncDir("/d")
	fs.Crash("/", CrashOptions{})
	for w := 0; w < workers; w++ {
		b, _ := memRead(t, fs, fmt.Sprintf("/d/f%d", w))
		if len(b) != writes {
			t.Fatalf("f%d has %d bytes", w, len(b))
		}
	}
}

// TestInjectorOverMemFS: the injector's faults work over any FS.
func TestInjectorOverMemFS(t *testing.T) {
	mem := NewMemFS()
	mem.MkdirAll("/d", 0o755)
	fs := NewInjector(mem)
	f, _ := fs.Create("/d/x")
	defer f.Close()
	fs.FailSyncOn("/d/x", 1, nil, false)
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync: %v", err)
	}
	fs.SetENOSPCOn("other", true, true)
	if _, err := f.WriteAt([]byte("ok"), 0); err != nil {
		t.Fatalf("write outside the filter: %v", err)
	}
	fs.SetENOSPCOn("/d/x", true, true)
	if _, err := f.WriteAt([]byte("no"), 0); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write: %v", err)
	}
	if err := f.Fallocate(0, 0, 10); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("fallocate: %v", err)
	}
	fs.SetDiskSize(1000, 100)
	if u, _ := fs.Statfs("/d"); u.Total != 1000 || u.Free != 100 {
		t.Fatalf("statfs %+v", u)
	}
	if fs.Count(OpSync) != 1 || fs.Count(OpWrite) != 2 || fs.Count(OpCreate) != 1 {
		t.Fatalf("counts sync %d write %d create %d", fs.Count(OpSync), fs.Count(OpWrite), fs.Count(OpCreate))
	}
}
