package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/spoolmq/spool/internal/vfs"
)

const osPageSize = 4096

// MappedFile is one fixed-size file of a MappedFileQueue, named by the
// 20-digit zero-padded offset of its first byte. It keeps three positions:
//
//	0 ......... flushed ......... committed ......... wrote ......... size
//	  durable      |  readable, not durable |  reserved, being copied |
//
// wrote moves under the owner's write lock (space reserved), committed
// moves when the bytes up to it are in the file (readers see only
// [0, committed)), flushed when a sync covered them.
//
// A MappedFile is reference counted: the queue holds one reference, every
// reader takes one, and the file is unmapped, closed (and removed when
// destroyed) only when the last reference goes — or when a destroy has
// waited longer than destroyMapedFileIntervalForcibly.
type MappedFile struct {
	fs   vfs.FS
	path string
	from int64
	size int64
	f    vfs.File
	data []byte // the shared mapping; nil when the file is not mapped
	// rmap is the read mapping of a file written with pwrite, made by
	// the first resident read (resident_read.go).
	rmap       atomic.Pointer[[]byte]
	rmapMu     sync.Mutex
	rmapFailed atomic.Bool
	// seen holds, per residentChunk of the file, when mincore last found
	// the whole chunk in memory (resident_read.go); made on first use.
	seen atomic.Pointer[[]atomic.Int64]
	// spill, when set, is the in-memory stand-in for a file the allocator
	// has not delivered yet: f and data are nil, writes and reads go here.
	spill []byte
	// wbuf, when set, is the transient-pool write buffer: writes land here
	// (filled) and the committer moves them into the file (committed).
	wbuf   []byte
	filled atomic.Int64

	wrote     atomic.Int64
	committed atomic.Int64
	flushed   atomic.Int64

	// lastStoreTs is the store time of the last record written (or found
	// by recovery); used by retention.
	lastStoreTs atomic.Int64

	refs      atomic.Int64
	destroyed atomic.Bool // no new references
	remove    atomic.Bool // remove the file at cleanup
	cleanOnce sync.Once
	destroyAt atomic.Int64 // unix ms of the first destroy request
	cleanErr  error

	// unsynced is set by createUnsynced until syncName has made the
	// file's size and directory entry durable.
	unsynced atomic.Bool
}

// fileName is the 20-digit name of the file starting at off.
func fileName(off int64) string { return fmt.Sprintf("%020d", off) }

// parseFileName returns the offset a 20-digit name stands for.
func parseFileName(name string) (int64, bool) {
	if len(name) != 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(name, 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// allocateFile gives f its blocks over [0, size) with the chosen method.
func allocateFile(f vfs.File, size int64, method string) error {
	switch method {
	case allocSparse:
		return nil // the Truncate that follows sizes the file without blocks
	case AllocZeros:
		buf := make([]byte, 1<<20)
		for off := int64(0); off < size; off += int64(len(buf)) {
			n := int64(len(buf))
			if size-off < n {
				n = size - off
			}
			if _, err := f.WriteAt(buf[:n], off); err != nil {
				return err
			}
		}
		return f.Datasync()
	case AllocZeroRange:
		if err := f.Fallocate(0, 0, size); err != nil {
			return err
		}
		return f.Fallocate(vfs.FallocZeroRange, 0, size)
	default:
		return f.Fallocate(0, 0, size)
	}
}

// createMappedFile creates, allocates and (when mmapped) maps a new file.
// The directory entry is synced before it returns.
func createMappedFile(fs vfs.FS, dir string, from, size int64, method string, mmapped bool) (*MappedFile, error) {
	mf, err := createUnsynced(fs, dir, from, size, method, mmapped)
	if err != nil {
		return nil, err
	}
	if err := mf.syncName(); err != nil {
		mf.destroy(true, 0, 0)
		return nil, fmt.Errorf("store: allocate %s (%d bytes, %s): %w", mf.path, size, method, err)
	}
	return mf, nil
}

// createUnsynced is createMappedFile without the syncs: a crash may leave
// the file absent or short, so nothing may rely on what is written to it
// until syncName has returned. Consume queues make their files this way on
// the dispatcher and sync them with their first entries.
func createUnsynced(fs vfs.FS, dir string, from, size int64, method string, mmapped bool) (*MappedFile, error) {
	path := filepath.Join(dir, fileName(from))
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: create %s: %w", path, err)
	}
	fail := func(err error) (*MappedFile, error) {
		f.Close()
		fs.Remove(path)
		return nil, fmt.Errorf("store: allocate %s (%d bytes, %s): %w", path, size, method, err)
	}
	if err := allocateFile(f, size, method); err != nil {
		return fail(err)
	}
	if err := f.Truncate(size); err != nil {
		return fail(err)
	}
	mf := &MappedFile{fs: fs, path: path, from: from, size: size, f: f}
	mf.unsynced.Store(true)
	mf.lastStoreTs.Store(fs.Now().UnixMilli())
	if mmapped {
		if mf.data, err = f.Mmap(0, int(size)); err != nil {
			return fail(err)
		}
	}
	mf.refs.Store(1)
	return mf, nil
}

// syncName makes a file created by createUnsynced durable, size and
// allocation first and then its name (a crash must never leave a short
// file that looks like a whole one). It does nothing for a file already
// synced or opened from disk.
func (mf *MappedFile) syncName() error {
	if !mf.unsynced.Load() {
		return nil
	}
	if err := mf.f.Sync(); err != nil {
		return err
	}
	if err := mf.fs.SyncDir(filepath.Dir(mf.path)); err != nil {
		return err
	}
	mf.unsynced.Store(false)
	return nil
}

// newSpillFile is an in-memory stand-in for the file at from, holding at
// most capacity bytes until the real file replaces it.
func newSpillFile(dir string, from, size int64, buf []byte) *MappedFile {
	mf := &MappedFile{path: filepath.Join(dir, fileName(from)) + " (in-memory spill)", from: from, size: size,
		spill: buf[:min(int64(len(buf)), size)]}
	mf.refs.Store(1)
	return mf
}

// openMappedFile opens an existing file of the given size.
func openMappedFile(fs vfs.FS, path string, from, size int64, mmapped bool) (*MappedFile, error) {
	f, err := fs.OpenFile(path, os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	got, err := f.Size()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store: stat %s: %w", path, err)
	}
	if got != size {
		f.Close()
		return nil, fmt.Errorf("%w: %s is %d bytes, expected %d", ErrCorrupt, path, got, size)
	}
	mf := &MappedFile{fs: fs, path: path, from: from, size: size, f: f}
	if mmapped {
		if mf.data, err = f.Mmap(0, int(size)); err != nil {
			f.Close()
			return nil, fmt.Errorf("store: mmap %s: %w", path, err)
		}
	}
	mf.refs.Store(1)
	return mf, nil
}

// From is the offset of the file's first byte.
func (mf *MappedFile) From() int64 { return mf.from }

// Size is the file size.
func (mf *MappedFile) Size() int64 { return mf.size }

// Path is the file's path.
func (mf *MappedFile) Path() string { return mf.path }

// Wrote, Committed and Flushed are the file-relative positions.
func (mf *MappedFile) Wrote() int64     { return mf.wrote.Load() }
func (mf *MappedFile) Committed() int64 { return mf.committed.Load() }
func (mf *MappedFile) Flushed() int64   { return mf.flushed.Load() }

// setPositions sets all three positions (recovery, truncation).
func (mf *MappedFile) setPositions(pos int64) {
	mf.filled.Store(pos)
	mf.wrote.Store(pos)
	mf.committed.Store(pos)
	mf.flushed.Store(pos)
}

// setWrote moves the written and committed positions forward (single
// writer files such as consume queues).
func (mf *MappedFile) setWrote(pos int64) {
	mf.wrote.Store(pos)
	mf.committed.Store(pos)
}

// isFull reports whether no byte is left to reserve.
func (mf *MappedFile) isFull() bool { return mf.wrote.Load() >= mf.size }

// acquire takes a reference; false when the file is being destroyed.
func (mf *MappedFile) acquire() bool {
	if mf.destroyed.Load() {
		return false
	}
	mf.refs.Add(1)
	if mf.destroyed.Load() {
		mf.release()
		return false
	}
	return true
}

// release drops a reference, cleaning up after the last one.
func (mf *MappedFile) release() {
	if mf.refs.Add(-1) <= 0 {
		mf.cleanup()
	}
}

func (mf *MappedFile) cleanup() {
	mf.cleanOnce.Do(func() {
		if mf.f == nil {
			return // a spill: nothing to close
		}
		var errs []error
		if mf.data != nil {
			errs = append(errs, mf.f.Munmap(mf.data))
		}
		mf.rmapMu.Lock()
		if p := mf.rmap.Swap(nil); p != nil {
			errs = append(errs, mf.f.Munmap(*p))
		}
		mf.rmapFailed.Store(true) // no new mapping of a closed file
		mf.rmapMu.Unlock()
		errs = append(errs, mf.f.Close())
		if mf.remove.Load() {
			if err := mf.fs.Remove(mf.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		mf.cleanErr = errors.Join(errs...)
	})
}

// destroy drops the owner's reference: the file is closed (and removed
// when remove is set) once no reader holds it, or at once when the
// destroy was first requested more than forceAfterMs ago. It reports
// whether the cleanup happened.
func (mf *MappedFile) destroy(remove bool, nowMs, forceAfterMs int64) bool {
	if remove {
		mf.remove.Store(true)
	}
	if mf.destroyed.CompareAndSwap(false, true) {
		mf.destroyAt.Store(nowMs)
		mf.release()
	} else if nowMs-mf.destroyAt.Load() >= forceAfterMs {
		mf.cleanup()
	}
	return mf.refs.Load() <= 0 || nowMs-mf.destroyAt.Load() >= forceAfterMs
}

// close unmaps and closes without removing (shutdown).
func (mf *MappedFile) close() error {
	mf.destroy(false, 0, 0)
	mf.cleanup()
	return mf.cleanErr
}

// writeAt copies b into the file at file position pos: through the mapping
// when there is one, else with pwrite. Callers serialise per position.
func (mf *MappedFile) writeAt(b []byte, pos int64) error {
	if mf.spill != nil {
		copy(mf.spill[pos:], b)
		return nil
	}
	if mf.wbuf != nil {
		copy(mf.wbuf[pos:], b)
		return nil
	}
	if mf.data != nil {
		copy(mf.data[pos:], b)
		return nil
	}
	_, err := mf.f.WriteAt(b, pos)
	return err
}

// readAt fills p from file position pos with pread. The caller holds a
// reference and stays below committed.
func (mf *MappedFile) readAt(p []byte, pos int64) error { return mf.readAtMaybeWait(p, pos, false) }

// readAtMaybeWait is readAt; with noWait it returns errWouldWait instead
// of waiting for the device (the bytes are not all in the page cache).
func (mf *MappedFile) readAtMaybeWait(p []byte, pos int64, noWait bool) error {
	if pos < 0 || pos+int64(len(p)) > mf.committed.Load() {
		return fmt.Errorf("%w: %s read [%d, %d) past readable %d", ErrOffsetNotFound, mf.path, pos, pos+int64(len(p)), mf.committed.Load())
	}
	if mf.spill != nil {
		copy(p, mf.spill[pos:])
		return nil
	}
	if noWait {
		if _, err := vfs.ReadAtNoWait(mf.f, p, pos); err != nil {
			return errWouldWait
		}
		return nil
	}
	n, err := mf.f.ReadAt(p, pos)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		return fmt.Errorf("%w: %s short read at %d: %d of %d bytes", ErrFileGone, mf.path, pos, n, len(p))
	}
	return fmt.Errorf("store: read %s at %d: %w", mf.path, pos, err)
}

// copyMapped copies from the mapping with page faults turned into errors;
// used only for the hot (just written) tail.
func (mf *MappedFile) copyMapped(p []byte, pos int64) (err error) {
	if mf.data == nil {
		return mf.readAt(p, pos)
	}
	if pos < 0 || pos+int64(len(p)) > mf.committed.Load() {
		return fmt.Errorf("%w: %s read [%d, %d) past readable %d", ErrOffsetNotFound, mf.path, pos, pos+int64(len(p)), mf.committed.Load())
	}
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s at %d: %v", ErrFault, mf.path, pos, r)
		}
	}()
	copy(p, mf.data[pos:pos+int64(len(p))])
	return nil
}

// flush makes [flushed, committed) durable: msync of the mapped range, or
// fdatasync when the file is written with pwrite. It returns the new
// flushed position.
func (mf *MappedFile) flush() (int64, error) { return mf.flushDirect(false) }

// flushDirect is flush; with direct, a file that can (vfs.DirectDatasyncer)
// syncs with the system call on the caller's thread, not on a ring.
func (mf *MappedFile) flushDirect(direct bool) (int64, error) {
	if mf.spill != nil {
		return mf.flushed.Load(), nil // nothing durable until the file exists
	}
	target := mf.committed.Load()
	from := mf.flushed.Load()
	if target <= from {
		return from, nil
	}
	var err error
	if mf.data != nil {
		start := from &^ (osPageSize - 1)
		err = mf.f.Msync(mf.data[start:target])
	} else if d, ok := mf.f.(vfs.DirectDatasyncer); ok && direct {
		err = d.DatasyncDirect()
	} else {
		err = mf.f.Datasync()
	}
	if err != nil {
		return from, fmt.Errorf("store: flush %s [%d, %d): %w", mf.path, from, target, err)
	}
	mf.flushed.Store(target)
	return target, nil
}

// prefault brings every page of [from, to) into memory without changing
// its contents, so that the puts writing there find it. A mapping's pages
// are mapped writable (MADV_POPULATE_WRITE, falling back to
// MADV_WILLNEED). A file written with pwrite has the range read into the
// page cache (POSIX_FADV_WILLNEED; allocated blocks not yet written read as
// zeros without disk I/O): without it each put's pwrite that reaches a new
// page allocates and zeroes it inside the system call.
func (mf *MappedFile) prefault(from, to int64) {
	if from >= to || mf.f == nil {
		return
	}
	from &^= osPageSize - 1
	if to > mf.size {
		to = mf.size
	}
	if mf.data == nil {
		_ = mf.f.Fadvise(from, to-from, vfs.FadvWillNeed)
		return
	}
	if err := mf.f.Madvise(mf.data[from:to], madvPopulateWrite); err != nil {
		_ = mf.f.Madvise(mf.data[from:to], vfs.MadvWillNeed)
	}
}

const madvPopulateWrite = 23
