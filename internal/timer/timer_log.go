package timer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/spoolmq/spool/internal/vfs"
)

// entrySize is the size of one timer-log entry.
const entrySize = 32

// delFlag marks a delete marker's entry in the size field: a record is
// never 1 GiB long.
const delFlag = uint32(1) << 30

// nilPos ends a slot's list.
const nilPos = int64(-1)

// logEntry is one timer-log entry: a timer record of the CommitLog linked
// into its slot's list.
type logEntry struct {
	size int32 // record size in the CommitLog
	del  bool  // a delete marker (TIMER_DEL_UNIQKEY): stored as bit 30 of the size field
	prev int64 // previous entry of the same slot, nilPos at the end
	phy  int64 // CommitLog offset of the timer record
	due  int64 // due time, Unix ms, exact
}

func (e *logEntry) encode(b []byte) {
	sz := uint32(e.size)
	if e.del {
		sz |= delFlag
	}
	binary.BigEndian.PutUint32(b[4:], sz)
	binary.BigEndian.PutUint64(b[8:], uint64(e.prev))
	binary.BigEndian.PutUint64(b[16:], uint64(e.phy))
	binary.BigEndian.PutUint64(b[24:], uint64(e.due))
	binary.BigEndian.PutUint32(b, crc32.ChecksumIEEE(b[4:entrySize]))
}

func decodeEntry(b []byte) (logEntry, bool) {
	if crc32.ChecksumIEEE(b[4:entrySize]) != binary.BigEndian.Uint32(b) {
		return logEntry{}, false
	}
	sz := binary.BigEndian.Uint32(b[4:])
	return logEntry{
		size: int32(sz &^ delFlag),
		del:  sz&delFlag != 0,
		prev: int64(binary.BigEndian.Uint64(b[8:])),
		phy:  int64(binary.BigEndian.Uint64(b[16:])),
		due:  int64(binary.BigEndian.Uint64(b[24:])),
	}, true
}

// TimerLog is the append-only log of fixed-size entries under
// storePathRootDir/timerlog, split into files of fileSize bytes named by
// the position of their first byte. Appends are made by one goroutine at a
// time (the caller serialises them); reads may run concurrently with
// appends for positions already written.
type TimerLog struct {
	fs       vfs.FS
	dir      string
	fileSize int64

	mu     sync.RWMutex
	files  map[int64]vfs.File // file start -> open file
	dirty  map[int64]bool     // files written since the last Sync
	newDir bool               // a file was created since the last Sync
	end    atomic.Int64       // next append position
}

func openTimerLog(fs vfs.FS, dir string, fileSize int64) (*TimerLog, error) {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("timer: mkdir %s: %w", dir, err)
	}
	return &TimerLog{fs: fs, dir: dir, fileSize: fileSize, files: map[int64]vfs.File{}, dirty: map[int64]bool{}}, nil
}

func (l *TimerLog) path(start int64) string {
	return filepath.Join(l.dir, fmt.Sprintf("%020d", start))
}

// existing lists the starts of the files on disk.
func (l *TimerLog) existing() ([]int64, error) {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("timer: list %s: %w", l.dir, err)
	}
	var out []int64
	for _, n := range names {
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || len(n) != 20 {
			continue
		}
		out = append(out, v)
	}
	return out, nil
}

// fileLocked returns the open file starting at start, opening (create:
// creating) it.
func (l *TimerLog) fileLocked(start int64, create bool) (vfs.File, error) {
	if f := l.files[start]; f != nil {
		return f, nil
	}
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE
	}
	f, err := l.fs.OpenFile(l.path(start), flag, 0o644)
	if err != nil {
		return nil, fmt.Errorf("timer: open %s: %w", l.path(start), err)
	}
	if create {
		l.newDir = true
	}
	l.files[start] = f
	return f, nil
}

// append writes whole entries at the end and returns the position of the
// first. b's length is a multiple of entrySize.
func (l *TimerLog) append(b []byte) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := l.end.Load()
	pos := first
	for len(b) > 0 {
		start := pos - pos%l.fileSize
		n := min(int64(len(b)), start+l.fileSize-pos)
		f, err := l.fileLocked(start, true)
		if err != nil {
			return 0, err
		}
		if _, err := f.WriteAt(b[:n], pos-start); err != nil {
			return 0, fmt.Errorf("timer: write %s at %d: %w", l.path(start), pos-start, err)
		}
		l.dirty[start] = true
		b = b[n:]
		pos += n
	}
	l.end.Store(pos)
	return first, nil
}

// read returns the entry at pos.
func (l *TimerLog) read(pos int64) (logEntry, error) {
	var buf [entrySize]byte
	start := pos - pos%l.fileSize
	l.mu.RLock()
	f := l.files[start]
	l.mu.RUnlock()
	if f == nil {
		l.mu.Lock()
		var err error
		f, err = l.fileLocked(start, false)
		l.mu.Unlock()
		if err != nil {
			return logEntry{}, err
		}
	}
	if _, err := f.ReadAt(buf[:], pos-start); err != nil {
		return logEntry{}, fmt.Errorf("timer: read %s at %d: %w", l.path(start), pos-start, err)
	}
	e, ok := decodeEntry(buf[:])
	if !ok {
		return logEntry{}, fmt.Errorf("%w: timer-log entry at %d (%s) fails its checksum", ErrCorrupt, pos, l.path(start))
	}
	return e, nil
}

// sync makes everything appended so far durable: the written files and,
// when a file was created, the directory.
func (l *TimerLog) sync() error {
	l.mu.Lock()
	var files []vfs.File
	for start := range l.dirty {
		if f := l.files[start]; f != nil {
			files = append(files, f)
		}
	}
	clear(l.dirty)
	newDir := l.newDir
	l.newDir = false
	l.mu.Unlock()
	for _, f := range files {
		if err := f.Datasync(); err != nil {
			return fmt.Errorf("timer: sync %s: %w", f.Name(), err)
		}
	}
	if newDir {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fmt.Errorf("timer: sync dir %s: %w", l.dir, err)
		}
	}
	return nil
}

// remove deletes the file starting at start.
func (l *TimerLog) remove(start int64) error {
	l.mu.Lock()
	f := l.files[start]
	delete(l.files, start)
	delete(l.dirty, start)
	l.mu.Unlock()
	var errs []error
	if f != nil {
		errs = append(errs, f.Close())
	}
	if err := l.fs.Remove(l.path(start)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// close closes the open files without syncing them.
func (l *TimerLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for start, f := range l.files {
		errs = append(errs, f.Close())
		delete(l.files, start)
	}
	return errors.Join(errs...)
}
