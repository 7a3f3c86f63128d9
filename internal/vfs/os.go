package vfs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

type osFS struct{}

// OS returns the file system of the operating system.
func OS() FS { return osFS{} }

// Default is the file system of the operating system.
var Default = OS()

func (osFS) Now() time.Time { return time.Now() }

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f, fd: int(f.Fd())}, nil
}

func (fs osFS) Create(name string) (File, error) {
	return fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

func (osFS) Remove(name string) error               { return os.Remove(name) }
func (osFS) Rename(o, n string) error               { return os.Rename(o, n) }
func (osFS) MkdirAll(d string, p os.FileMode) error { return os.MkdirAll(d, p) }
func (osFS) Stat(name string) (os.FileInfo, error)  { return os.Stat(name) }

func (osFS) ReadDir(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (osFS) Statfs(path string) (Usage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return Usage{}, &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	return Usage{Total: st.Blocks * uint64(st.Bsize), Free: st.Bavail * uint64(st.Bsize),
		Used: (st.Blocks - st.Bfree) * uint64(st.Bsize)}, nil
}

type lockFile struct{ f *os.File }

func (l lockFile) Close() error {
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	return l.f.Close()
}

func (osFS) Lock(name string) (io.Closer, error) {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return nil, fmt.Errorf("%w: %s", ErrLocked, name)
		}
		return nil, &os.PathError{Op: "flock", Path: name, Err: err}
	}
	return lockFile{f}, nil
}

type osFile struct {
	f  *os.File
	fd int
}

func (f *osFile) Name() string                             { return f.f.Name() }
func (f *osFile) ReadAt(p []byte, off int64) (int, error)  { return f.f.ReadAt(p, off) }
func (f *osFile) WriteAt(p []byte, off int64) (int, error) { return f.f.WriteAt(p, off) }
func (f *osFile) Truncate(n int64) error                   { return f.f.Truncate(n) }
func (f *osFile) Close() error                             { return f.f.Close() }

func (f *osFile) pathErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: f.f.Name(), Err: err}
}

// Sync and Datasync run on a sync ring when one is free (sync_ring.go).
func (f *osFile) Sync() error {
	if ok, err := ringSync(f.fd, false); ok {
		return f.pathErr("fsync", err)
	}
	return f.f.Sync()
}

func (f *osFile) Datasync() error {
	if ok, err := ringSync(f.fd, true); ok {
		return f.pathErr("fdatasync", err)
	}
	return f.DatasyncDirect()
}

// DatasyncDirect is fdatasync by the system call (DirectDatasyncer).
func (f *osFile) DatasyncDirect() error {
	return f.pathErr("fdatasync", ignoringEINTR(func() error { return unix.Fdatasync(f.fd) }))
}

func (f *osFile) Fallocate(mode uint32, off, n int64) error {
	return f.pathErr("fallocate", ignoringEINTR(func() error { return unix.Fallocate(f.fd, mode, off, n) }))
}

func (f *osFile) Mmap(off int64, length int) ([]byte, error) {
	b, err := unix.Mmap(f.fd, off, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	return b, f.pathErr("mmap", err)
}

func (f *osFile) Munmap(b []byte) error { return f.pathErr("munmap", unix.Munmap(b)) }

func (f *osFile) Msync(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	// msync needs a page-aligned start; widen the range down to the page.
	return f.pathErr("msync", unix.Msync(pageAligned(b), unix.MS_SYNC))
}

func (f *osFile) Madvise(b []byte, advice int) error {
	if len(b) == 0 {
		return nil
	}
	return f.pathErr("madvise", unix.Madvise(pageAligned(b), advice))
}

func (f *osFile) Fadvise(off, n int64, advice int) error {
	return f.pathErr("fadvise", unix.Fadvise(f.fd, off, n, advice))
}

func (f *osFile) Resident(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, nil
	}
	a := pageAligned(b)
	ps := os.Getpagesize()
	vec := make([]byte, (len(a)+ps-1)/ps)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, sliceAddr(a), uintptr(len(a)), sliceAddr(vec)); e != 0 {
		return 0, f.pathErr("mincore", e)
	}
	var n int64
	for _, v := range vec {
		if v&1 != 0 {
			n += int64(ps)
		}
	}
	return n, nil
}

func (f *osFile) Size() (int64, error) {
	st, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func ignoringEINTR(fn func() error) error {
	for {
		err := fn()
		if err != unix.EINTR {
			return err
		}
	}
}
