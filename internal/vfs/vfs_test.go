package vfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
)

func TestOSFileBasics(t *testing.T) {
	fs := OS()
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	f, err := fs.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Fallocate(0, 0, 1<<16); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.Size(); n != 1<<16 {
		t.Fatalf("size %d", n)
	}
	m, err := f.Mmap(0, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	copy(m[5000:], "hello")
	if err := f.Msync(m[5000:5005]); err != nil {
		t.Fatal(err)
	}
	if err := f.Madvise(m[4096:8192], MadvWillNeed); err != nil {
		t.Fatal(err)
	}
	if r, err := f.Resident(m); err != nil || r <= 0 {
		t.Fatalf("resident %d %v", r, err)
	}
	got := make([]byte, 5)
	if _, err := f.ReadAt(got, 5000); err != nil || string(got) != "hello" {
		t.Fatalf("read %q %v", got, err)
	}
	if err := f.Munmap(m); err != nil {
		t.Fatal(err)
	}
	if err := f.Datasync(); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if u, err := fs.Statfs(dir); err != nil || u.Total == 0 {
		t.Fatalf("statfs %+v %v", u, err)
	}
	names, _ := fs.ReadDir(dir)
	if len(names) != 1 || names[0] != "f" {
		t.Fatalf("readdir %v", names)
	}
}

func TestLockExclusive(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lock")
	l, err := OS().Lock(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OS().Lock(p); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v", err)
	}
	l.Close()
	l2, err := OS().Lock(p)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	l2.Close()
}

func writeFile(t *testing.T, fs FS, p string, data []byte, sync bool) {
	t.Helper()
	f, err := fs.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
}

func TestFaultCrashModel(t *testing.T) {
	dir := t.TempDir()
	fs := NewFaultFS(OS())
	// Synced file and synced entry: survives.
	writeFile(t, fs, filepath.Join(dir, "a"), []byte("durable"), true)
	// Synced contents but the entry never synced: disappears.
	writeFile(t, fs, filepath.Join(dir, "b"), []byte("no entry"), true)
	if err := fs.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fs, filepath.Join(dir, "c"), []byte("late"), true)
	// Unsynced overwrite of a: lost.
	f, _ := fs.OpenFile(filepath.Join(dir, "a"), os.O_RDWR, 0)
	f.WriteAt([]byte("XXXX"), 0)
	f.Close()
	// Removal of b not synced: b comes back.
	if err := fs.Remove(filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	if err := fs.Crash(dir, CrashOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "durable" {
		t.Fatalf("a = %q", b)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "b")); err != nil || string(b) != "no entry" {
		t.Fatalf("b = %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "c")); !os.IsNotExist(err) {
		t.Fatalf("c survived: %v", err)
	}
}

func TestFaultMsyncRanges(t *testing.T) {
	dir := t.TempDir()
	fs := NewFaultFS(OS())
	p := filepath.Join(dir, "m")
	f, _ := fs.Create(p)
	f.Fallocate(0, 0, 8192)
	f.Sync()
	fs.SyncDir(dir)
	m, err := f.Mmap(0, 8192)
	if err != nil {
		t.Fatal(err)
	}
	copy(m[100:], "synced")
	copy(m[5000:], "lost")
	if err := f.Msync(m[100:106]); err != nil {
		t.Fatal(err)
	}
	f.Munmap(m)
	f.Close()
	fs.Crash(dir, CrashOptions{})
	b, _ := os.ReadFile(p)
	if len(b) != 8192 || string(b[100:106]) != "synced" || !bytes.Equal(b[5000:5004], make([]byte, 4)) {
		t.Fatalf("image wrong: len %d %q %q", len(b), b[100:106], b[5000:5004])
	}
}

func TestFaultInjection(t *testing.T) {
	dir := t.TempDir()
	fs := NewFaultFS(OS())
	f, _ := fs.Create(filepath.Join(dir, "x"))
	defer f.Close()
	fs.FailSync(2, nil, false)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) || !errors.Is(err, ErrInjected) {
		t.Fatalf("second sync: %v", err)
	}
	if err := f.Datasync(); err != nil {
		t.Fatalf("third sync: %v", err)
	}
	fs.SetENOSPC(true, true)
	if _, err := f.WriteAt([]byte("x"), 0); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write: %v", err)
	}
	if err := f.Fallocate(0, 0, 4096); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("fallocate: %v", err)
	}
	fs.SetUsage(0.93)
	if u, _ := fs.Statfs(dir); u.UsedRatio() < 0.92 || u.UsedRatio() > 0.94 {
		t.Fatalf("usage %v", u.UsedRatio())
	}
	at := time.Unix(1000, 0)
	fs.SetClock(clock.NewManual(at))
	if !fs.Now().Equal(at) {
		t.Fatal("clock")
	}
	if fs.Count(OpSync) != 3 || fs.Count(OpWrite) != 1 {
		t.Fatalf("counts sync %d write %d", fs.Count(OpSync), fs.Count(OpWrite))
	}
}
