package store

import (
	"fmt"
	"path/filepath"
	"sort"
	"sync"

	"github.com/spoolmq/spool/internal/vfs"
)

// MappedFileQueue is a directory of contiguous fixed-size MappedFiles.
type MappedFileQueue struct {
	fs       vfs.FS
	dir      string
	fileSize int64
	mmapped  bool
	// sparse files (consume queues) have their cut tails punched out
	// instead of overwritten with zeros.
	sparse bool

	mu    sync.RWMutex
	files []*MappedFile // ascending, contiguous
}

func newMappedFileQueue(fs vfs.FS, dir string, fileSize int64, mmapped bool) *MappedFileQueue {
	return &MappedFileQueue{fs: fs, dir: dir, fileSize: fileSize, mmapped: mmapped}
}

// load opens the files present in the directory. Files whose size is not
// fileSize are refused unless they are the last one and entirely beyond
// the data (a creation cut short by a crash), which is removed.
func (q *MappedFileQueue) load() error {
	if err := q.fs.MkdirAll(q.dir, 0o755); err != nil {
		return fmt.Errorf("store: mkdir %s: %w", q.dir, err)
	}
	names, err := q.fs.ReadDir(q.dir)
	if err != nil {
		return fmt.Errorf("store: list %s: %w", q.dir, err)
	}
	type ent struct {
		name string
		off  int64
	}
	var ents []ent
	for _, n := range names {
		if off, ok := parseFileName(n); ok {
			ents = append(ents, ent{n, off})
		}
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].off < ents[j].off })
	for i, e := range ents {
		path := filepath.Join(q.dir, e.name)
		if e.off%q.fileSize != 0 {
			return fmt.Errorf("%w: %s: name is not a multiple of the file size %d", ErrCorrupt, path, q.fileSize)
		}
		if n := len(q.files); n > 0 && q.files[n-1].from+q.fileSize != e.off {
			return fmt.Errorf("%w: %s: gap after %s", ErrCorrupt, path, q.files[n-1].path)
		}
		st, err := q.fs.Stat(path)
		if err != nil {
			return fmt.Errorf("store: stat %s: %w", path, err)
		}
		if st.Size() != q.fileSize {
			if i == len(ents)-1 {
				// A file whose creation was cut short holds no acknowledged
				// data: every write goes to a file that has its full size
				// (allocated, or sparse for consume queues) and is named.
				if err := q.fs.Remove(path); err != nil {
					return fmt.Errorf("store: remove partial %s: %w", path, err)
				}
				continue
			}
			return fmt.Errorf("%w: %s is %d bytes, expected %d", ErrCorrupt, path, st.Size(), q.fileSize)
		}
		mf, err := openMappedFile(q.fs, path, e.off, q.fileSize, q.mmapped)
		if err != nil {
			return err
		}
		mf.setPositions(q.fileSize)
		mf.lastStoreTs.Store(st.ModTime().UnixMilli())
		q.files = append(q.files, mf)
	}
	return nil
}

// snapshot returns the current files (not acquired).
func (q *MappedFileQueue) snapshot() []*MappedFile {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return append([]*MappedFile(nil), q.files...)
}

// count is the number of files.
func (q *MappedFileQueue) count() int {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return len(q.files)
}

// first and last return the first/last file (not acquired), or nil.
func (q *MappedFileQueue) first() *MappedFile {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if len(q.files) == 0 {
		return nil
	}
	return q.files[0]
}

func (q *MappedFileQueue) last() *MappedFile {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if len(q.files) == 0 {
		return nil
	}
	return q.files[len(q.files)-1]
}

// find returns the file holding offset, acquired, or nil.
func (q *MappedFileQueue) find(offset int64) *MappedFile {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if len(q.files) == 0 {
		return nil
	}
	i := int((offset - q.files[0].from) / q.fileSize)
	if offset < q.files[0].from || i >= len(q.files) {
		return nil
	}
	mf := q.files[i]
	if !mf.acquire() {
		return nil
	}
	return mf
}

// appendFile adds mf after the last file.
func (q *MappedFileQueue) appendFile(mf *MappedFile) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if n := len(q.files); n > 0 && q.files[n-1].from+q.fileSize != mf.from {
		return fmt.Errorf("store: %s does not follow %s", mf.path, q.files[n-1].path)
	}
	q.files = append(q.files, mf)
	return nil
}

// replace swaps old for new in place.
func (q *MappedFileQueue) replace(old, new *MappedFile) {
	q.mu.Lock()
	for i, mf := range q.files {
		if mf == old {
			q.files[i] = new
		}
	}
	q.mu.Unlock()
}

// minOffset is the offset of the first byte kept.
func (q *MappedFileQueue) minOffset() int64 {
	if f := q.first(); f != nil {
		return f.from
	}
	return 0
}

// maxCommitted is the end of the readable data.
func (q *MappedFileQueue) maxCommitted() int64 {
	if f := q.last(); f != nil {
		return f.from + f.committed.Load()
	}
	return 0
}

// truncateFrom drops everything at and after offset: later files are
// removed, the file holding offset gets its positions set there. The
// bytes past offset in that file are zeroed so that stale data is never
// taken for records.
func (q *MappedFileQueue) truncateFrom(offset int64) error { return q.truncate(offset, true) }

// truncateNoZero is truncateFrom without zeroing the cut file's tail.
func (q *MappedFileQueue) truncateNoZero(offset int64) error { return q.truncate(offset, false) }

func (q *MappedFileQueue) truncate(offset int64, zero bool) error {
	q.mu.Lock()
	keep := q.files[:0]
	var drop []*MappedFile
	for _, mf := range q.files {
		switch {
		case mf.from+q.fileSize <= offset:
			keep = append(keep, mf)
		case mf.from <= offset:
			keep = append(keep, mf)
		default:
			drop = append(drop, mf)
		}
	}
	q.files = keep
	var cut *MappedFile
	if n := len(keep); n > 0 && keep[n-1].from <= offset && offset < keep[n-1].from+q.fileSize {
		cut = keep[n-1]
	}
	q.mu.Unlock()
	for _, mf := range drop {
		mf.destroy(true, 0, 0)
	}
	if cut != nil {
		pos := offset - cut.from
		if zero {
			zeroTail := zeroRange
			if q.sparse {
				zeroTail = punchRange
			}
			if err := zeroTail(cut, pos, q.fileSize); err != nil {
				return err
			}
		}
		cut.setPositions(pos)
	}
	if len(drop) > 0 {
		if err := q.fs.SyncDir(q.dir); err != nil {
			return fmt.Errorf("store: sync %s: %w", q.dir, err)
		}
	}
	return nil
}

// zeroRange zeroes [from, to) of mf with pwrite and syncs it.
func zeroRange(mf *MappedFile, from, to int64) error {
	if from >= to {
		return nil
	}
	buf := make([]byte, 256<<10)
	for off := from; off < to; off += int64(len(buf)) {
		n := int64(len(buf))
		if to-off < n {
			n = to - off
		}
		// Skip ranges that are already zero, so truncating a tail in a
		// mostly empty file costs reads, not writes.
		if _, err := mf.f.ReadAt(buf[:n], off); err != nil {
			return fmt.Errorf("store: read %s at %d: %w", mf.path, off, err)
		}
		if allZero(buf[:n]) {
			continue
		}
		clear(buf[:n])
		if _, err := mf.f.WriteAt(buf[:n], off); err != nil {
			return fmt.Errorf("store: zero %s at %d: %w", mf.path, off, err)
		}
	}
	if err := mf.f.Datasync(); err != nil {
		return fmt.Errorf("store: sync %s: %w", mf.path, err)
	}
	return nil
}

// punchRange zeroes [from, to) of a sparse file: the bytes up to the next
// page boundary with zeroRange, the whole pages after it by punching a
// hole (zeroRange again where the file system cannot punch).
func punchRange(mf *MappedFile, from, to int64) error {
	page := min((from+osPageSize-1)&^(osPageSize-1), to)
	if err := zeroRange(mf, from, page); err != nil {
		return err
	}
	if page >= to {
		return nil
	}
	if err := mf.f.Fallocate(vfs.FallocPunchHole|vfs.FallocKeepSize, page, to-page); err != nil {
		return zeroRange(mf, page, to)
	}
	if err := mf.f.Datasync(); err != nil {
		return fmt.Errorf("store: sync %s: %w", mf.path, err)
	}
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// removeFirst removes the first file when it ends at or below offset.
func (q *MappedFileQueue) removeFirst(mf *MappedFile) {
	q.mu.Lock()
	if len(q.files) > 0 && q.files[0] == mf {
		q.files = append(q.files[:0:0], q.files[1:]...)
	}
	q.mu.Unlock()
}

// close unmaps and closes every file.
func (q *MappedFileQueue) close() error {
	q.mu.Lock()
	files := q.files
	q.files = nil
	q.mu.Unlock()
	var first error
	for _, mf := range files {
		if err := mf.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
