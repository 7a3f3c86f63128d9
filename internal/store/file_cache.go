package store

import (
	"container/list"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/spoolmq/spool/internal/vfs"
)

// fileCache bounds the descriptors consume-queue files hold. It is an FS
// whose OpenFile returns a handle that keeps a descriptor only while it
// is among the limit most recently used handles: a handle whose
// descriptor was closed reopens the file on its next call (without
// O_CREATE, O_EXCL or O_TRUNC). A call in progress pins its descriptor,
// so the open count can pass the limit by the number of calls running at
// once, never by the number of files.
//
// Why descriptors and not mappings: consume-queue reads may be cold and
// are served with pread (design rule 3), which needs a descriptor; and a
// mapping per file would run into vm.max_map_count (65,530 by default)
// long before 100,000 files.
//
// Durability: pwrite puts the bytes in the page cache of the inode, not
// of the descriptor, so a Datasync through a reopened descriptor makes
// them durable; Linux reports a writeback error nobody has seen yet to a
// descriptor opened after it, so closing a descriptor loses no error.
//
// When an open fails with EMFILE or ENFILE, half of the idle descriptors
// are closed and the open is tried once more.
type fileCache struct {
	vfs.FS
	limit int

	mu   sync.Mutex
	lru  list.List // *cachedFile with a descriptor, most recently used first
	open int       // descriptors held (pinned ones included)

	opens     atomic.Int64 // opens, first and re-opens
	evictions atomic.Int64 // descriptors closed to stay within the limit
	sheds     atomic.Int64 // EMFILE/ENFILE answered by closing idle descriptors
}

// cqFileLimitBounds are the bounds of the consume-queue descriptor limit
// derived from RLIMIT_NOFILE: a quarter of the soft limit, the rest left
// for connections, CommitLog and index files.
const (
	cqFileLimitMin = 16
	cqFileLimitMax = 8192
)

// cqFileLimit is the consume-queue descriptor limit for a soft
// RLIMIT_NOFILE of nofile.
func cqFileLimit(nofile uint64) int {
	return int(min(max(nofile/4, cqFileLimitMin), cqFileLimitMax))
}

// NofileLimit reports the process's RLIMIT_NOFILE (soft, hard).
func NofileLimit() (soft, hard uint64, err error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, err
	}
	return rl.Cur, rl.Max, nil
}

// RaiseNofileLimit raises the soft RLIMIT_NOFILE to the hard limit and
// returns both as they are afterwards.
func RaiseNofileLimit() (soft, hard uint64, err error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, err
	}
	if rl.Cur < rl.Max {
		want := rl
		want.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			return rl.Cur, rl.Max, fmt.Errorf("setrlimit RLIMIT_NOFILE %d: %w", rl.Max, err)
		}
		rl = want
	}
	return rl.Cur, rl.Max, nil
}

func newFileCache(fs vfs.FS, limit int) *fileCache {
	return &fileCache{FS: fs, limit: max(limit, 1)}
}

// OpenFile opens name now (so that creation errors surface here) and
// returns a handle that may close and reopen its descriptor later.
func (c *fileCache) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := c.openFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	cf := &cachedFile{c: c, name: name, flag: flag &^ (os.O_CREATE | os.O_EXCL | os.O_TRUNC), perm: perm}
	c.mu.Lock()
	cf.f = f
	cf.elem = c.lru.PushFront(cf)
	c.open++
	victims := c.evictLocked()
	c.mu.Unlock()
	closeAll(victims)
	return cf, nil
}

// Create is OpenFile with O_RDWR|O_CREATE|O_TRUNC.
func (c *fileCache) Create(name string) (vfs.File, error) {
	return c.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

func (c *fileCache) openFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	c.opens.Add(1)
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil && (errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)) {
		c.sheds.Add(1)
		c.shed()
		f, err = c.FS.OpenFile(name, flag, perm)
	}
	return f, err
}

// shed closes half of the idle descriptors (the least recently used).
func (c *fileCache) shed() {
	c.mu.Lock()
	n := c.lru.Len() / 2
	var victims []vfs.File
	for e := c.lru.Back(); e != nil && n > 0; {
		prev := e.Prev()
		if cf := e.Value.(*cachedFile); cf.pins == 0 {
			victims = append(victims, c.dropLocked(cf))
			n--
		}
		e = prev
	}
	c.mu.Unlock()
	closeAll(victims)
}

// evictLocked takes the least recently used idle descriptors out while
// more than limit are open; the caller closes them after unlocking.
func (c *fileCache) evictLocked() []vfs.File {
	var victims []vfs.File
	for e := c.lru.Back(); e != nil && c.open > c.limit; {
		prev := e.Prev()
		if cf := e.Value.(*cachedFile); cf.pins == 0 {
			victims = append(victims, c.dropLocked(cf))
			c.evictions.Add(1)
		}
		e = prev
	}
	return victims
}

// dropLocked detaches cf's descriptor and returns it.
func (c *fileCache) dropLocked(cf *cachedFile) vfs.File {
	f := cf.f
	c.lru.Remove(cf.elem)
	cf.f, cf.elem = nil, nil
	c.open--
	return f
}

func closeAll(fs []vfs.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// openCount is the number of descriptors held now.
func (c *fileCache) openCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}

// cachedFile is a file handle of a fileCache.
type cachedFile struct {
	c    *fileCache
	name string
	flag int
	perm os.FileMode

	// Guarded by c.mu.
	f      vfs.File // nil while the descriptor is closed
	elem   *list.Element
	pins   int
	closed bool
}

var errCachedFileClosed = errors.New("store: file handle closed")

// get pins the descriptor, reopening the file when needed.
func (cf *cachedFile) get() (vfs.File, error) {
	f, closed := cf.pinOpen()
	if closed {
		return nil, fmt.Errorf("%w: %s", errCachedFileClosed, cf.name)
	}
	if f != nil {
		return f, nil
	}
	c := cf.c
	f, err := c.openFile(cf.name, cf.flag, cf.perm)
	if err != nil {
		return nil, fmt.Errorf("store: reopen %s: %w", cf.name, err)
	}
	c.mu.Lock()
	switch {
	case cf.closed:
		c.mu.Unlock()
		_ = f.Close()
		return nil, fmt.Errorf("%w: %s", errCachedFileClosed, cf.name)
	case cf.f != nil: // another call reopened it meanwhile
		cf.pins++
		c.lru.MoveToFront(cf.elem)
		g := cf.f
		c.mu.Unlock()
		_ = f.Close()
		return g, nil
	}
	cf.f = f
	cf.pins++
	cf.elem = c.lru.PushFront(cf)
	c.open++
	victims := c.evictLocked()
	c.mu.Unlock()
	closeAll(victims)
	return f, nil
}

// pinOpen pins the descriptor when it is open; f is nil when the file
// would have to be opened again, or is closed (closed).
func (cf *cachedFile) pinOpen() (f vfs.File, closed bool) {
	c := cf.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if cf.closed {
		return nil, true
	}
	if cf.f != nil {
		cf.pins++
		c.lru.MoveToFront(cf.elem)
	}
	return cf.f, false
}

// put unpins the descriptor.
func (cf *cachedFile) put() {
	c := cf.c
	c.mu.Lock()
	cf.pins--
	var victims []vfs.File
	if cf.pins == 0 && cf.f != nil && cf.closed {
		victims = append(victims, c.dropLocked(cf))
	} else if c.open > c.limit {
		victims = c.evictLocked()
	}
	c.mu.Unlock()
	closeAll(victims)
}

func (cf *cachedFile) do(fn func(vfs.File) error) error {
	f, err := cf.get()
	if err != nil {
		return err
	}
	defer cf.put()
	return fn(f)
}

func (cf *cachedFile) Name() string { return cf.name }

func (cf *cachedFile) ReadAt(p []byte, off int64) (n int, err error) {
	err = cf.do(func(f vfs.File) error { n, err = f.ReadAt(p, off); return err })
	return n, err
}

// ReadAtNoWait reads through the descriptor only while it is open (one
// closed by the cache would be opened again, which may wait for the
// device): vfs.ErrWouldBlock otherwise.
func (cf *cachedFile) ReadAtNoWait(p []byte, off int64) (int, error) {
	f, _ := cf.pinOpen()
	if f == nil {
		return 0, vfs.ErrWouldBlock
	}
	defer cf.put()
	return vfs.ReadAtNoWait(f, p, off)
}

func (cf *cachedFile) WriteAt(p []byte, off int64) (n int, err error) {
	err = cf.do(func(f vfs.File) error { n, err = f.WriteAt(p, off); return err })
	return n, err
}

func (cf *cachedFile) Sync() error     { return cf.do(vfs.File.Sync) }
func (cf *cachedFile) Datasync() error { return cf.do(vfs.File.Datasync) }

func (cf *cachedFile) Fallocate(mode uint32, off, n int64) error {
	return cf.do(func(f vfs.File) error { return f.Fallocate(mode, off, n) })
}

func (cf *cachedFile) Truncate(n int64) error {
	return cf.do(func(f vfs.File) error { return f.Truncate(n) })
}

func (cf *cachedFile) Fadvise(off, n int64, advice int) error {
	return cf.do(func(f vfs.File) error { return f.Fadvise(off, n, advice) })
}

func (cf *cachedFile) Size() (n int64, err error) {
	err = cf.do(func(f vfs.File) error { n, err = f.Size(); return err })
	return n, err
}

var errCachedFileMapping = errors.New("store: files of the descriptor cache are not mapped")

// A mapping would outlive the descriptor it came from; the files of the
// cache are read and written with pread and pwrite only.
func (cf *cachedFile) Mmap(int64, int) ([]byte, error) { return nil, errCachedFileMapping }
func (cf *cachedFile) Munmap([]byte) error             { return errCachedFileMapping }
func (cf *cachedFile) Msync([]byte) error              { return errCachedFileMapping }
func (cf *cachedFile) Madvise([]byte, int) error       { return errCachedFileMapping }
func (cf *cachedFile) Resident([]byte) (int64, error)  { return 0, errCachedFileMapping }

// Close closes the descriptor (after the calls in progress) and makes the
// handle unusable.
func (cf *cachedFile) Close() error {
	c := cf.c
	c.mu.Lock()
	if cf.closed {
		c.mu.Unlock()
		return nil
	}
	cf.closed = true
	var f vfs.File
	if cf.f != nil && cf.pins == 0 {
		f = c.dropLocked(cf)
	}
	c.mu.Unlock()
	if f != nil {
		return f.Close()
	}
	return nil
}

// DescriptorStats is what the store reports about descriptors and the
// consume-queue descriptor cache.
type DescriptorStats struct {
	NofileSoft, NofileHard uint64 // RLIMIT_NOFILE now
	OpenFiles              int    // descriptors of the process now (-1 when unknown)
	CQFileLimit            int    // consume-queue descriptors kept open at most (calls in progress aside)
	CQOpenFiles            int    // consume-queue descriptors open now
	CQFileOpens            int64  // consume-queue file opens, first and re-opens
	CQFileEvictions        int64  // descriptors closed to stay within CQFileLimit
	CQFileSheds            int64  // EMFILE/ENFILE answered by closing idle descriptors
	DispatchFailures       int64  // dispatch passes that failed
	DispatchError          string // why puts are refused now, "" when dispatch is healthy
}

// Descriptors reports descriptor use and dispatch health.
func (st *DefaultMessageStore) Descriptors() DescriptorStats {
	soft, hard, _ := NofileLimit()
	c := st.cqFiles
	d := DescriptorStats{NofileSoft: soft, NofileHard: hard, OpenFiles: openFileCount(),
		CQFileLimit: c.limit, CQOpenFiles: c.openCount(), CQFileOpens: c.opens.Load(),
		CQFileEvictions: c.evictions.Load(), CQFileSheds: c.sheds.Load(), DispatchFailures: st.disp.failures.Load()}
	if p := st.disp.failing.Load(); p != nil {
		d.DispatchError = *p
	}
	return d
}

// openFileCount counts the process's open descriptors (/proc/self/fd).
func openFileCount() int {
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		return -1
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return -1
	}
	return len(names) - 1 // the descriptor reading the directory
}
