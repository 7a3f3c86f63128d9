package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// needRings skips when the kernel has no io_uring or forbids it, and fails
// when the rings could not be made for any other reason.
func needRings(t *testing.T) {
	t.Helper()
	if syncRingsReady() {
		return
	}
	var se *os.SyscallError
	if os.Getenv("SPOOL_IO_URING") == "off" ||
		errors.As(rings.err, &se) && se.Syscall == "io_uring_setup" &&
			(se.Err == unix.ENOSYS || se.Err == unix.EPERM || se.Err == unix.EACCES) {
		t.Skipf("no sync rings: %s", SyncMethod())
	}
	t.Fatalf("sync rings not made: %v", rings.err)
}

// tempOSFile creates an empty file in the test's directory on the OS file
// system, closed when the test ends.
func tempOSFile(t *testing.T) File {
	t.Helper()
	f, err := OS().Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestSyncAndDatasyncRunOnRings(t *testing.T) {
	needRings(t)
	if m := SyncMethod(); m != "io_uring" {
		t.Fatalf("SyncMethod %q", m)
	}
	f := tempOSFile(t)
	before := RingSyncs()
	for i := range 3 {
		if _, err := f.WriteAt([]byte("record"), int64(i*6)); err != nil {
			t.Fatal(err)
		}
		if err := f.Datasync(); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if got := RingSyncs() - before; got != 6 {
		t.Fatalf("%d syncs on rings, want 6", got)
	}
	b := make([]byte, 18)
	if _, err := f.ReadAt(b, 0); err != nil || string(b) != "recordrecordrecord" {
		t.Fatalf("read back %q, %v", b, err)
	}
}

// A sync's error comes back from the ring as the system call's would, with
// the file's path, and the ring stays in use.
func TestRingSyncReportsTheSyncError(t *testing.T) {
	needRings(t)
	ok, err := ringSync(-1, true)
	if !ok || !errors.Is(err, unix.EBADF) {
		t.Fatalf("ringSync(-1) = %v, %v; want EBADF on a ring", err, ok)
	}
	if n := len(rings.free); n != syncRings {
		t.Fatalf("%d rings free after a failed sync, want %d", n, syncRings)
	}
	real, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	f := &osFile{f: real, fd: 1 << 20} // a descriptor number nothing has open
	var pe *os.PathError
	if err := f.Datasync(); !errors.As(err, &pe) || pe.Op != "fdatasync" || pe.Path != real.Name() || !errors.Is(err, unix.EBADF) {
		t.Fatalf("Datasync of a bad descriptor: %v", err)
	}
	if err := f.Sync(); !errors.As(err, &pe) || pe.Op != "fsync" || !errors.Is(err, unix.EBADF) {
		t.Fatalf("Sync of a bad descriptor: %v", err)
	}
}

// With every ring busy a sync runs the system call itself.
func TestSyncWithoutAFreeRingRunsTheSystemCall(t *testing.T) {
	needRings(t)
	var taken []*syncRing
	for range syncRings {
		taken = append(taken, <-rings.free)
	}
	defer func() {
		for _, r := range taken {
			rings.free <- r
		}
	}()
	f := tempOSFile(t)
	before := RingSyncs()
	if err := f.Datasync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := RingSyncs() - before; n != 0 {
		t.Fatalf("%d syncs on rings with none free", n)
	}
}

// Many goroutines syncing at once share the rings; the ones that find none
// free sync themselves, and every sync succeeds.
func TestConcurrentSyncsShareTheRings(t *testing.T) {
	needRings(t)
	dir := t.TempDir()
	before := RingSyncs()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := OS().Create(filepath.Join(dir, string(rune('a'+g))))
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			for i := range 20 {
				if _, err := f.WriteAt([]byte{byte(i)}, int64(i)); err != nil {
					errs <- err
					return
				}
				if err := f.Datasync(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if RingSyncs() == before {
		t.Fatal("no sync ran on a ring")
	}
	if n := len(rings.free); n != syncRings {
		t.Fatalf("%d rings free afterwards, want %d", n, syncRings)
	}
}

func TestRingOutcome(t *testing.T) {
	for _, c := range []struct {
		err           error
		retry, refuse bool
	}{
		{nil, false, false},
		{unix.EIO, false, false},
		{unix.ENOSPC, false, false},
		{unix.EBADF, false, false},
		{unix.EINVAL, true, true},
		{unix.EOPNOTSUPP, true, true},
		{unix.ENOSYS, true, true},
		{unix.ECANCELED, true, false},
		{unix.EINTR, true, false},
		{unix.EAGAIN, true, false},
	} {
		retry, refuse := ringOutcome(c.err)
		if retry != c.retry || refuse != c.refuse {
			t.Errorf("ringOutcome(%v) = %v, %v; want %v, %v", c.err, retry, refuse, c.retry, c.refuse)
		}
	}
}

// Once a ring refused a sync, syncs run the system call and the method
// says why.
func TestRefusedRingsAreNotUsedAgain(t *testing.T) {
	needRings(t)
	err := error(unix.EOPNOTSUPP)
	rings.refused.Store(&err)
	defer rings.refused.Store(nil)
	f := tempOSFile(t)
	before := RingSyncs()
	if err := f.Datasync(); err != nil {
		t.Fatal(err)
	}
	if n := RingSyncs() - before; n != 0 {
		t.Fatalf("%d syncs on refused rings", n)
	}
	if m := SyncMethod(); m != "fsync (io_uring refused a sync: operation not supported)" {
		t.Fatalf("SyncMethod %q", m)
	}
}

// A direct fdatasync is the system call itself: no ring counts it. Files
// of the memory file system have none (their callers fall back to
// Datasync).
func TestDatasyncDirect(t *testing.T) {
	f := tempOSFile(t)
	h, ok := f.(DirectDatasyncer)
	if !ok {
		t.Fatal("an OS file has no DatasyncDirect")
	}
	if _, err := f.WriteAt([]byte("record"), 0); err != nil {
		t.Fatal(err)
	}
	before := RingSyncs()
	if err := h.DatasyncDirect(); err != nil {
		t.Fatal(err)
	}
	if got := RingSyncs() - before; got != 0 {
		t.Fatalf("%d syncs on rings, want none", got)
	}
	m, err := NewMemFS().Create("f")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(DirectDatasyncer); ok {
		t.Fatal("a memory file claims DatasyncDirect")
	}
}
