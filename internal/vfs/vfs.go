// Package vfs is the file-system seam of the store: every open, pread,
// pwrite, fsync, fdatasync, msync, fallocate, mmap, rename, remove,
// directory sync, statfs and clock reading the store does goes through an
// FS, so that tests can slow operations down, make them fail and model
// what survives a crash.
//
// The package owns the OS implementation (OS, built on golang.org/x/sys/unix,
// whose syncs run on io_uring rings when the kernel has them: sync_ring.go),
// the in-memory implementation with the crash model (MemFS), the fault
// injector that wraps any FS (Injector: latency, EIO on the Nth sync,
// ENOSPC, disk usage, clock) and FaultFS, an Injector over a crash tracker
// of a real disk. It must never buffer writes on its own, retry a failed
// sync, or hide an error from the caller: the store decides what an error
// means.
//
// Crash model of MemFS.Crash and FaultFS.Crash:
//
//	file contents  : only bytes covered by a successful Sync/Datasync of the
//	                 file (pwrite and mapped writes alike) or by a Msync of the
//	                 mapped range survive; everything else reverts to what the
//	                 last sync saw (optionally followed by garbage up to the
//	                 file's size at the crash)
//	directory      : a created or renamed entry survives only if SyncDir of
//	                 its parent ran after the operation; a removed entry whose
//	                 removal was not followed by SyncDir comes back with its
//	                 last synced contents
package vfs

import (
	"errors"
	"io"
	"os"
	"time"
)

// Sentinel errors of the package.
var (
	// ErrInjected marks an error produced by an Injector.
	ErrInjected = errors.New("vfs: injected fault")
	// ErrLocked is returned by Lock when another process holds the lock.
	ErrLocked = errors.New("vfs: lock held by another process")
	// ErrNotMapped is returned by mapping calls on a slice that is not part
	// of a mapping of the file.
	ErrNotMapped = errors.New("vfs: slice is not a mapping of this file")
)

// Clock is the time source of the store: the wall clock for OS, and the
// clock.Clock given to SetClock for MemFS and an Injector.
type Clock interface {
	Now() time.Time
}

// Usage is what Statfs reports about a file system.
type Usage struct {
	Total uint64 // bytes
	Free  uint64 // bytes available to an unprivileged writer
	// Used is the bytes in use (blocks less free blocks); 0 when unknown,
	// then Total-Free stands for it.
	Used uint64
}

// UsedBytes is Used, or Total-Free when Used is unknown.
func (u Usage) UsedBytes() uint64 {
	if u.Used > 0 {
		return u.Used
	}
	return u.Total - min(u.Free, u.Total)
}

// UsedRatio is the used fraction of the file system in [0, 1], as df and
// RocketMQ count it: used / (used + available), so blocks reserved for
// root (or held back by the file system) count as neither.
func (u Usage) UsedRatio() float64 {
	used := u.UsedBytes()
	if used+u.Free == 0 {
		return 0
	}
	return float64(used) / float64(used+u.Free)
}

// FS is the file-system seam.
type FS interface {
	Clock
	// OpenFile opens name with os.O_* flags.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Create creates or truncates name for reading and writing.
	Create(name string) (File, error)
	Remove(name string) error
	Rename(oldname, newname string) error
	MkdirAll(dir string, perm os.FileMode) error
	// ReadDir lists the names in dir, sorted.
	ReadDir(dir string) ([]string, error)
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the directory entries of dir durable.
	SyncDir(dir string) error
	// Statfs reports the usage of the file system holding path.
	Statfs(path string) (Usage, error)
	// Lock takes an exclusive advisory lock on name (creating it); it fails
	// at once with ErrLocked when another process holds it.
	Lock(name string) (io.Closer, error)
}

// DirectDatasyncer is a File whose fdatasync can be the system call on the
// calling goroutine's thread, never a sync ring: for a goroutine that
// syncs briefly and often and would pay more for parking on the ring's
// eventfd and being woken than for the call (an event loop's group
// commit). Files of other file systems (memory, fault injection) lack it;
// callers fall back to Datasync.
type DirectDatasyncer interface {
	DatasyncDirect() error
}

// Fallocate modes (Linux values).
const (
	FallocKeepSize  = 0x01
	FallocPunchHole = 0x02
	FallocZeroRange = 0x10
)

// Madvise and fadvise advice values (Linux values).
const (
	MadvNormal     = 0
	MadvSequential = 2
	MadvWillNeed   = 3
	MadvDontNeed   = 4
	MadvPageOut    = 21
	FadvDontNeed   = 4
	FadvWillNeed   = 3
)

// File is an open file.
type File interface {
	io.ReaderAt
	io.WriterAt
	Name() string
	// Sync is fsync; Datasync is fdatasync.
	Sync() error
	Datasync() error
	// Fallocate allocates (mode 0), zeroes (FallocZeroRange) or punches
	// blocks of the file.
	Fallocate(mode uint32, off, n int64) error
	Truncate(n int64) error
	// Mmap maps length bytes from off, shared, read and write.
	Mmap(off int64, length int) ([]byte, error)
	// Munmap unmaps a slice returned by Mmap (whole).
	Munmap(b []byte) error
	// Msync writes back part of a mapping synchronously (MS_SYNC); b must
	// lie within one mapping returned by Mmap.
	Msync(b []byte) error
	// Madvise gives advice about part of a mapping.
	Madvise(b []byte, advice int) error
	// Fadvise gives advice about a byte range of the file.
	Fadvise(off, n int64, advice int) error
	// Resident counts the bytes of a mapping that are in memory (mincore).
	Resident(b []byte) (int64, error)
	Size() (int64, error)
	Close() error
}
