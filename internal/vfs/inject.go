package vfs

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spoolmq/spool/internal/clock"
)

// Op names an operation kind an Injector can slow down or count.
type Op int

// Operation kinds.
const (
	OpCreate Op = iota // OpenFile with O_CREATE, Create
	OpOpen
	OpRead
	OpWrite
	OpSync // Sync, Datasync and Msync
	OpFallocate
	OpTruncate
	OpMmap
	OpRename
	OpRemove
	OpSyncDir
	opCount
)

var opNames = [opCount]string{"create", "open", "read", "write", "sync", "fallocate", "truncate", "mmap", "rename", "remove", "syncdir"}

func (o Op) String() string {
	if o >= 0 && o < opCount {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// Injector wraps any FS and injects faults: added latency per operation
// kind, EIO on the Nth sync, ENOSPC on writes or fallocate (optionally for
// matching paths only), a settable disk usage and clock, a hook before
// every operation and a count of each kind. It keeps no state about file
// contents: what survives a crash is the business of the FS it wraps
// (MemFS, or the crash tracker of FaultFS).
type Injector struct {
	inner FS

	mu          sync.Mutex
	latency     [opCount]time.Duration
	counts      [opCount]int64
	syncN       int64 // syncs so far
	failSyncAt  int64 // 0: never; else the syncN that fails (and every later one when failSticky)
	failSticky  bool
	failMatch   string
	syncErr     error
	enospcWrite bool
	enospcAlloc bool
	enospcOn    string // when set, ENOSPC hits only paths containing it
	usage       *float64
	diskTotal   uint64
	diskFree    uint64
	clock       clock.Clock // nil: the inner FS's clock
	hook        func(op Op, name string)
}

// NewInjector wraps inner.
func NewInjector(inner FS) *Injector { return &Injector{inner: inner} }

// Inner is the wrapped FS.
func (fs *Injector) Inner() FS { return fs.inner }

// SetLatency adds d before every operation of kind op.
func (fs *Injector) SetLatency(op Op, d time.Duration) {
	fs.mu.Lock()
	fs.latency[op] = d
	fs.mu.Unlock()
}

// FailSync makes the nth sync from now fail with err (EIO when nil); with
// sticky every later one fails too.
func (fs *Injector) FailSync(n int64, err error, sticky bool) { fs.FailSyncOn("", n, err, sticky) }

// FailSyncOn is FailSync counting only syncs of paths that contain match.
func (fs *Injector) FailSyncOn(match string, n int64, err error, sticky bool) {
	if err == nil {
		err = syscall.EIO
	}
	fs.mu.Lock()
	fs.syncN = 0
	fs.failMatch = match
	fs.failSyncAt, fs.syncErr, fs.failSticky = n, err, sticky
	fs.mu.Unlock()
}

// SetENOSPC makes writes and/or fallocate fail with ENOSPC.
func (fs *Injector) SetENOSPC(write, fallocate bool) { fs.SetENOSPCOn("", write, fallocate) }

// SetENOSPCOn is SetENOSPC for the paths that contain match only (every
// path when match is empty).
func (fs *Injector) SetENOSPCOn(match string, write, fallocate bool) {
	fs.mu.Lock()
	fs.enospcWrite, fs.enospcAlloc, fs.enospcOn = write, fallocate, match
	fs.mu.Unlock()
}

// SetUsage makes Statfs report the given used ratio (0..1); negative
// restores the inner figure.
func (fs *Injector) SetUsage(ratio float64) {
	fs.mu.Lock()
	if ratio < 0 {
		fs.usage = nil
	} else {
		fs.usage = &ratio
	}
	fs.mu.Unlock()
}

// SetDiskSize makes Statfs report total and free bytes (total 0 restores
// the inner figure; SetUsage, when set, wins).
func (fs *Injector) SetDiskSize(total, free uint64) {
	fs.mu.Lock()
	fs.diskTotal, fs.diskFree = total, free
	fs.mu.Unlock()
}

// SetClock replaces the clock (nil restores the inner one).
func (fs *Injector) SetClock(c clock.Clock) {
	fs.mu.Lock()
	fs.clock = c
	fs.mu.Unlock()
}

// SetHook installs a function called before every operation.
func (fs *Injector) SetHook(h func(op Op, name string)) {
	fs.mu.Lock()
	fs.hook = h
	fs.mu.Unlock()
}

// Count is how many operations of a kind ran.
func (fs *Injector) Count(op Op) int64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.counts[op]
}

// before counts op, runs the hook and sleeps the configured latency.
func (fs *Injector) before(op Op, name string) {
	fs.mu.Lock()
	fs.counts[op]++
	d, h := fs.latency[op], fs.hook
	fs.mu.Unlock()
	if h != nil {
		h(op, name)
	}
	if d > 0 {
		time.Sleep(d)
	}
}

func (fs *Injector) syncFault(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.failMatch != "" && !strings.Contains(name, fs.failMatch) {
		return nil
	}
	fs.syncN++
	if fs.failSyncAt > 0 && (fs.syncN == fs.failSyncAt || (fs.failSticky && fs.syncN > fs.failSyncAt)) {
		return &os.PathError{Op: "fsync", Path: name, Err: fmt.Errorf("%w: %w", ErrInjected, fs.syncErr)}
	}
	return nil
}

// full reports whether a write (or a fallocate) of name must fail.
func (fs *Injector) full(name string, alloc bool) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	on := fs.enospcWrite
	if alloc {
		on = fs.enospcAlloc
	}
	return on && strings.Contains(name, fs.enospcOn)
}

func enospc(op, name string) error {
	return &os.PathError{Op: op, Path: name, Err: fmt.Errorf("%w: %w", ErrInjected, syscall.ENOSPC)}
}

// Now is the settable clock.
func (fs *Injector) Now() time.Time {
	fs.mu.Lock()
	c := fs.clock
	fs.mu.Unlock()
	if c != nil {
		return c.Now()
	}
	return fs.inner.Now()
}

// OpenFile opens name through the inner FS.
func (fs *Injector) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	op := OpOpen
	if flag&os.O_CREATE != 0 {
		op = OpCreate
	}
	fs.before(op, name)
	f, err := fs.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &injFile{fs: fs, f: f, name: name}, nil
}

// Create creates or truncates name.
func (fs *Injector) Create(name string) (File, error) {
	return fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// Remove removes name.
func (fs *Injector) Remove(name string) error {
	fs.before(OpRemove, name)
	return fs.inner.Remove(name)
}

// Rename renames oldname.
func (fs *Injector) Rename(oldname, newname string) error {
	fs.before(OpRename, oldname)
	return fs.inner.Rename(oldname, newname)
}

func (fs *Injector) MkdirAll(dir string, perm os.FileMode) error { return fs.inner.MkdirAll(dir, perm) }
func (fs *Injector) ReadDir(dir string) ([]string, error)        { return fs.inner.ReadDir(dir) }
func (fs *Injector) Stat(name string) (os.FileInfo, error)       { return fs.inner.Stat(name) }
func (fs *Injector) Lock(name string) (io.Closer, error)         { return fs.inner.Lock(name) }

// SyncDir syncs dir unless the sync is to fail.
func (fs *Injector) SyncDir(dir string) error {
	fs.before(OpSyncDir, dir)
	if err := fs.syncFault(dir); err != nil {
		return err
	}
	return fs.inner.SyncDir(dir)
}

// Statfs reports the settable usage, or the inner one.
func (fs *Injector) Statfs(path string) (Usage, error) {
	fs.mu.Lock()
	u, total, free := fs.usage, fs.diskTotal, fs.diskFree
	fs.mu.Unlock()
	if u == nil && total > 0 {
		return Usage{Total: total, Free: min(free, total)}, nil
	}
	if u != nil {
		const total = 100 << 30
		return Usage{Total: total, Free: uint64(float64(total) * (1 - *u))}, nil
	}
	return fs.inner.Statfs(path)
}

type injFile struct {
	fs   *Injector
	f    File
	name string
}

func (f *injFile) Name() string { return f.name }

func (f *injFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.before(OpRead, f.name)
	return f.f.ReadAt(p, off)
}

func (f *injFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.before(OpWrite, f.name)
	if f.fs.full(f.name, false) {
		return 0, enospc("pwrite", f.name)
	}
	return f.f.WriteAt(p, off)
}

func (f *injFile) Sync() error {
	f.fs.before(OpSync, f.name)
	if err := f.fs.syncFault(f.name); err != nil {
		return err
	}
	return f.f.Sync()
}

func (f *injFile) Datasync() error {
	f.fs.before(OpSync, f.name)
	if err := f.fs.syncFault(f.name); err != nil {
		return err
	}
	return f.f.Datasync()
}

func (f *injFile) Msync(b []byte) error {
	f.fs.before(OpSync, f.name)
	if err := f.fs.syncFault(f.name); err != nil {
		return err
	}
	return f.f.Msync(b)
}

func (f *injFile) Fallocate(mode uint32, off, n int64) error {
	f.fs.before(OpFallocate, f.name)
	if f.fs.full(f.name, true) {
		return enospc("fallocate", f.name)
	}
	return f.f.Fallocate(mode, off, n)
}

func (f *injFile) Truncate(n int64) error {
	f.fs.before(OpTruncate, f.name)
	return f.f.Truncate(n)
}

func (f *injFile) Mmap(off int64, length int) ([]byte, error) {
	f.fs.before(OpMmap, f.name)
	return f.f.Mmap(off, length)
}

func (f *injFile) Munmap(b []byte) error                  { return f.f.Munmap(b) }
func (f *injFile) Madvise(b []byte, advice int) error     { return f.f.Madvise(b, advice) }
func (f *injFile) Fadvise(off, n int64, advice int) error { return f.f.Fadvise(off, n, advice) }
func (f *injFile) Resident(b []byte) (int64, error)       { return f.f.Resident(b) }
func (f *injFile) Size() (int64, error)                   { return f.f.Size() }
func (f *injFile) Close() error                           { return f.f.Close() }
