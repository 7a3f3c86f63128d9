package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spoolmq/spool/internal/clock"
)

// MemFS is an in-memory FS with the crash model of the package doc: what
// survives Crash is what was synced. File bytes become durable through
// Sync, Datasync or Msync of a range; directory entries (creations,
// renames, removals) through SyncDir of their parent. Directories made by
// MkdirAll are durable at once.
//
// Durable state is kept incrementally: each file remembers its durable size
// and a copy of each durable page, and a set of the pages pwrite, truncate
// and fallocate changed since the last sync. A sync copies those pages
// only; it never copies the whole file. Bytes written through a mapping
// cannot be seen as they are written, so Sync and Datasync of a mapped file
// compare the mapped pages with their durable copies (no copy for equal
// pages), and Msync copies exactly the range it is given.
//
// File contents live in anonymous memory mappings outside the Go heap, as
// a real mapping does: the race detector sees no more of the mapped bytes
// than it does with OS, and untouched pages of a sparse file cost nothing.
// A file cannot grow beyond the memory reserved for it while it is mapped
// (Truncate, Fallocate and WriteAt then fail with ENOMEM); the store sizes
// its files before it maps them.
//
// MemFS is safe for concurrent use.
type MemFS struct {
	mu      sync.Mutex
	files   map[string]*memNode // live names
	durable map[string]*memNode // names as the last SyncDir of their parent saw them
	dirs    map[string]bool
	locks   map[string]bool
	total   uint64
	clock   clock.Clock // nil: the wall clock
}

// NewMemFS returns an empty in-memory file system holding the root
// directory. Statfs reports a 100 GiB disk until SetCapacity.
func NewMemFS() *MemFS {
	return &MemFS{files: map[string]*memNode{}, durable: map[string]*memNode{},
		dirs: map[string]bool{"/": true, ".": true}, locks: map[string]bool{}, total: 100 << 30}
}

// SetCapacity sets the total size Statfs reports; free is that less the
// sizes of the live files.
func (m *MemFS) SetCapacity(total uint64) {
	m.mu.Lock()
	m.total = total
	m.mu.Unlock()
}

// SetClock replaces the clock (nil restores the wall clock).
func (m *MemFS) SetClock(c clock.Clock) {
	m.mu.Lock()
	m.clock = c
	m.mu.Unlock()
}

// Now is the clock.
func (m *MemFS) Now() time.Time {
	m.mu.Lock()
	c := m.clock
	m.mu.Unlock()
	return clock.Or(c).Now()
}

func pathErr(op, name string, err error) error { return &os.PathError{Op: op, Path: name, Err: err} }

// parentLocked checks that the directory of name exists.
func (m *MemFS) parentLocked(op, name string) error {
	if !m.dirs[filepath.Dir(name)] {
		return pathErr(op, name, syscall.ENOENT)
	}
	return nil
}

// OpenFile opens name; O_CREATE, O_EXCL, O_TRUNC and the access mode are
// honoured.
func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dirs[name] {
		return nil, pathErr("open", name, syscall.EISDIR)
	}
	n := m.files[name]
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, syscall.ENOENT)
	case n != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, pathErr("open", name, syscall.EEXIST)
	case n == nil:
		if err := m.parentLocked("open", name); err != nil {
			return nil, err
		}
		n = newMemNode()
		m.files[name] = n
	}
	write := flag&(os.O_WRONLY|os.O_RDWR) != 0
	if flag&os.O_TRUNC != 0 && write {
		if err := n.truncate(0); err != nil {
			return nil, pathErr("truncate", name, err)
		}
	}
	return &memFile{node: n, name: name, read: flag&os.O_WRONLY == 0, write: write}, nil
}

// Create creates or truncates name for reading and writing.
func (m *MemFS) Create(name string) (File, error) {
	return m.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// Remove removes a file or an empty directory; a file's removal is durable
// after SyncDir of its directory.
func (m *MemFS) Remove(name string) error {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files[name] != nil {
		delete(m.files, name)
		return nil
	}
	if m.dirs[name] {
		if len(m.childrenLocked(name)) > 0 {
			return pathErr("remove", name, syscall.ENOTEMPTY)
		}
		delete(m.dirs, name)
		return nil
	}
	return pathErr("remove", name, syscall.ENOENT)
}

// Rename renames a file (replacing newname); durable after SyncDir of both
// directories.
func (m *MemFS) Rename(oldname, newname string) error {
	oldname, newname = filepath.Clean(oldname), filepath.Clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.files[oldname]
	if n == nil {
		if m.dirs[oldname] {
			return pathErr("rename", oldname, syscall.ENOTSUP)
		}
		return pathErr("rename", oldname, syscall.ENOENT)
	}
	if m.dirs[newname] {
		return pathErr("rename", newname, syscall.EISDIR)
	}
	if err := m.parentLocked("rename", newname); err != nil {
		return err
	}
	if oldname == newname {
		return nil
	}
	delete(m.files, oldname)
	m.files[newname] = n
	return nil
}

// MkdirAll makes dir and its parents; directories are durable at once.
func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := dir; !m.dirs[d]; d = filepath.Dir(d) {
		if m.files[d] != nil {
			return pathErr("mkdir", d, syscall.ENOTDIR)
		}
		m.dirs[d] = true
	}
	return nil
}

// childrenLocked lists the names directly in dir.
func (m *MemFS) childrenLocked(dir string) []string {
	var names []string
	add := func(p string) {
		if p != dir && filepath.Dir(p) == dir {
			names = append(names, filepath.Base(p))
		}
	}
	for p := range m.files {
		add(p)
	}
	for p := range m.dirs {
		add(p)
	}
	return names
}

// ReadDir lists the names in dir, sorted.
func (m *MemFS) ReadDir(dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		if m.files[dir] != nil {
			return nil, pathErr("readdirent", dir, syscall.ENOTDIR)
		}
		return nil, pathErr("open", dir, syscall.ENOENT)
	}
	names := m.childrenLocked(dir)
	sort.Strings(names)
	if names == nil {
		names = []string{}
	}
	return names, nil
}

// Stat describes a file or directory.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dirs[name] {
		return memInfo{name: filepath.Base(name), dir: true}, nil
	}
	if n := m.files[name]; n != nil {
		return memInfo{name: filepath.Base(name), size: n.liveSize()}, nil
	}
	return nil, pathErr("stat", name, syscall.ENOENT)
}

// SyncDir makes the current file entries of dir durable.
func (m *MemFS) SyncDir(dir string) error {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return pathErr("open", dir, syscall.ENOENT)
	}
	for p := range m.durable {
		if filepath.Dir(p) == dir {
			delete(m.durable, p)
		}
	}
	for p, n := range m.files {
		if filepath.Dir(p) == dir {
			m.durable[p] = n
		}
	}
	return nil
}

// Statfs reports the capacity less the live files' sizes.
func (m *MemFS) Statfs(path string) (Usage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var used uint64
	for _, n := range m.files {
		used += uint64(n.liveSize())
	}
	return Usage{Total: m.total, Free: m.total - min(used, m.total)}, nil
}

type memLock struct {
	m    *MemFS
	name string
	once sync.Once
}

func (l *memLock) Close() error {
	l.once.Do(func() {
		l.m.mu.Lock()
		delete(l.m.locks, l.name)
		l.m.mu.Unlock()
	})
	return nil
}

// Lock takes an exclusive lock on name (creating the file and its
// directory); a second Lock before Close fails with ErrLocked.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	name = filepath.Clean(name)
	if err := m.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return nil, err
	}
	f, err := m.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	f.Close()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.locks[name] {
		return nil, fmt.Errorf("%w: %s", ErrLocked, name)
	}
	m.locks[name] = true
	return &memLock{m: m, name: name}, nil
}

// Crash makes the file system what a power loss would leave: every name
// not made durable by SyncDir disappears, removals and renames not made
// durable are undone, and every file holds only what was synced (with
// Garbage, bytes changed since the last sync hold random bytes instead,
// up to the size the file had). Locks are released. Files still open keep
// working on their own, detached copies, as in a process the crash killed.
// Only paths under root are touched; root "" or "/" means all.
func (m *MemFS) Crash(root string, opt CrashOptions) {
	rnd := opt.Rand
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(1, 2))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	under := func(p string) bool {
		if root == "" || root == "/" {
			return true
		}
		r := filepath.Clean(root)
		return p == r || strings.HasPrefix(p, r+"/")
	}
	names := make([]string, 0, len(m.durable))
	for p := range m.durable {
		names = append(names, p)
	}
	sort.Strings(names) // deterministic garbage
	images := map[*memNode]*memNode{}
	files := map[string]*memNode{}
	for p, n := range m.files {
		if !under(p) {
			files[p] = n
		}
	}
	durable := map[string]*memNode{}
	for p, n := range m.durable {
		if !under(p) {
			durable[p] = n
		}
	}
	for _, p := range names {
		if !under(p) {
			continue
		}
		n := m.durable[p]
		img := images[n]
		if img == nil {
			img = n.crashImage(opt.Garbage, rnd)
			images[n] = img
		}
		files[p], durable[p] = img, img
	}
	m.files, m.durable = files, durable
	m.locks = map[string]bool{}
}

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
