package vfs

import (
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// FaultFS is an Injector over a crash tracker over an FS (normally OS):
// every fault of the Injector, plus a crash model (Crash) that keeps only
// what was synced. Files it tracks are held in memory as their last synced
// image, and a sync reads the whole file back, so it is meant for
// test-sized stores on a real disk; MemFS models crashes without a disk
// and without copying whole files.
type FaultFS struct {
	*Injector
	crash *crashFS
}

// NewFaultFS wraps inner. Files that already exist are taken as durable as
// they are.
func NewFaultFS(inner FS) *FaultFS {
	c := &crashFS{inner: inner, files: map[string]*faultState{}, removed: map[string]*faultState{},
		dirs: map[string]map[string]*faultState{}}
	return &FaultFS{Injector: NewInjector(c), crash: c}
}

// SkipRealSync makes syncs record their effect in the crash model without
// asking the kernel (fast tests; the crash model stays exact).
func (fs *FaultFS) SkipRealSync(skip bool) {
	fs.crash.mu.Lock()
	fs.crash.noRealSync = skip
	fs.crash.mu.Unlock()
}

// Crash rewrites the tracked files under root as a power loss would leave
// them: each file keeps only its last synced image, entries not made
// durable by SyncDir disappear, and removals not made durable come back.
// Every file must be closed (and unmapped) first. Afterwards every file is
// taken as durable again.
func (fs *FaultFS) Crash(root string, opt CrashOptions) error { return fs.crash.Crash(root, opt) }

// crashFS tracks, for every file of an FS, its last synced image and which
// directory entries are durable.
type crashFS struct {
	inner FS

	mu         sync.Mutex
	noRealSync bool

	files   map[string]*faultState // live name -> state
	removed map[string]*faultState // removed names not yet made durable by SyncDir
	dirs    map[string]map[string]*faultState
}

// faultState is one inode's durable image.
type faultState struct {
	durable    []byte // contents at the last sync
	everSynced bool
}

func (fs *crashFS) realSync() bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return !fs.noRealSync
}

func (fs *crashFS) Now() time.Time { return fs.inner.Now() }

// state returns the tracked state of name, creating it for a file that
// existed before tracking (durable as it is).
func (fs *crashFS) stateLocked(name string, existed bool) *faultState {
	if s := fs.files[name]; s != nil {
		return s
	}
	s := &faultState{}
	if existed {
		if b, err := readAll(fs.inner, name); err == nil {
			s.durable, s.everSynced = b, true
		}
		// A file that existed is a durable directory entry.
		fs.dirEntriesLocked(filepath.Dir(name))[filepath.Base(name)] = s
	}
	fs.files[name] = s
	return s
}

func (fs *crashFS) dirEntriesLocked(dir string) map[string]*faultState {
	d := fs.dirs[dir]
	if d == nil {
		d = map[string]*faultState{}
		fs.dirs[dir] = d
	}
	return d
}

func readAll(inner FS, name string) ([]byte, error) {
	f, err := inner.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, err
	}
	return b, nil
}

// OpenFile opens name, tracking it for the crash model.
func (fs *crashFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	_, statErr := fs.inner.Stat(name)
	existed := statErr == nil
	f, err := fs.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	fs.mu.Lock()
	var s *faultState
	if existed {
		s = fs.stateLocked(name, true)
	} else {
		s = &faultState{}
		fs.files[name] = s
	}
	fs.mu.Unlock()
	return &faultFile{fs: fs, f: f, name: name, st: s}, nil
}

// Create creates or truncates name.
func (fs *crashFS) Create(name string) (File, error) {
	return fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// Remove removes name; the removal is durable after SyncDir.
func (fs *crashFS) Remove(name string) error {
	st, _ := fs.inner.Stat(name)
	if err := fs.inner.Remove(name); err != nil {
		return err
	}
	if st != nil && !st.IsDir() {
		fs.mu.Lock()
		s := fs.stateLocked(name, false)
		delete(fs.files, name)
		if _, durable := fs.dirEntriesLocked(filepath.Dir(name))[filepath.Base(name)]; durable {
			fs.removed[name] = s
		}
		fs.mu.Unlock()
	}
	return nil
}

// Rename renames; durable after SyncDir of both directories.
func (fs *crashFS) Rename(oldname, newname string) error {
	_, statErr := fs.inner.Stat(oldname)
	if err := fs.inner.Rename(oldname, newname); err != nil {
		return err
	}
	fs.mu.Lock()
	s := fs.stateLocked(oldname, statErr == nil)
	delete(fs.files, oldname)
	if _, durable := fs.dirEntriesLocked(filepath.Dir(oldname))[filepath.Base(oldname)]; durable {
		fs.removed[oldname] = s
	}
	if old := fs.files[newname]; old != nil {
		if _, durable := fs.dirEntriesLocked(filepath.Dir(newname))[filepath.Base(newname)]; durable {
			fs.removed[newname] = old
		}
	}
	fs.files[newname] = s
	fs.mu.Unlock()
	return nil
}

func (fs *crashFS) MkdirAll(dir string, perm os.FileMode) error { return fs.inner.MkdirAll(dir, perm) }
func (fs *crashFS) ReadDir(dir string) ([]string, error)        { return fs.inner.ReadDir(dir) }
func (fs *crashFS) Stat(name string) (os.FileInfo, error)       { return fs.inner.Stat(name) }

// SyncDir makes the current entries of dir durable.
func (fs *crashFS) SyncDir(dir string) error {
	if fs.realSync() {
		if err := fs.inner.SyncDir(dir); err != nil {
			return err
		}
	}
	names, err := fs.inner.ReadDir(dir)
	if err != nil {
		return err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d := map[string]*faultState{}
	for _, n := range names {
		p := filepath.Join(dir, n)
		if st, err := fs.inner.Stat(p); err == nil && st.IsDir() {
			continue
		}
		d[n] = fs.stateLocked(p, true)
	}
	fs.dirs[dir] = d
	for p := range fs.removed {
		if filepath.Dir(p) == dir {
			delete(fs.removed, p)
		}
	}
	return nil
}

// Statfs delegates to the inner FS.
func (fs *crashFS) Statfs(path string) (Usage, error) { return fs.inner.Statfs(path) }

// Lock delegates to the inner FS.
func (fs *crashFS) Lock(name string) (io.Closer, error) { return fs.inner.Lock(name) }

// CrashOptions tune Crash.
type CrashOptions struct {
	// Garbage fills the range a file changed in since its last sync with
	// random bytes instead of restoring the synced image there.
	Garbage bool
	Rand    *rand.Rand
}

// Crash is FaultFS.Crash.
func (fs *crashFS) Crash(root string, opt CrashOptions) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	rnd := opt.Rand
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(1, 2))
	}
	under := func(p string) bool {
		rel, err := filepath.Rel(root, p)
		return err == nil && rel != ".." && !filepath.IsAbs(rel) && (len(rel) < 3 || rel[:3] != "../")
	}
	isDurableEntry := func(p string, s *faultState) bool {
		d := fs.dirs[filepath.Dir(p)]
		return d != nil && d[filepath.Base(p)] == s
	}
	var errs []error
	var names []string
	for p := range fs.files {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		s := fs.files[p]
		if !under(p) {
			continue
		}
		if !isDurableEntry(p, s) {
			errs = append(errs, ignoreNotExist(fs.inner.Remove(p)))
			continue
		}
		errs = append(errs, fs.writeImageLocked(p, s, opt.Garbage, rnd))
	}
	for p, s := range fs.removed {
		if under(p) && isDurableEntry(p, s) {
			errs = append(errs, fs.writeImageLocked(p, s, false, rnd))
		}
	}
	fs.files = map[string]*faultState{}
	fs.removed = map[string]*faultState{}
	fs.dirs = map[string]map[string]*faultState{}
	return errors.Join(errs...)
}

func ignoreNotExist(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

func (fs *crashFS) writeImageLocked(p string, s *faultState, garbage bool, rnd *rand.Rand) error {
	cur, _ := readAll(fs.inner, p)
	img := append([]byte(nil), s.durable...)
	if garbage {
		// Where the file changed since its last sync, the disk holds
		// garbage instead of either version.
		if len(cur) > len(img) {
			img = append(img, make([]byte, len(cur)-len(img))...)
		}
		first, last := -1, -1
		for i := range cur {
			if i >= len(s.durable) || cur[i] != s.durable[i] {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		for i := first; first >= 0 && i <= last; i++ {
			img[i] = byte(rnd.UintN(256))
		}
	}
	f, err := fs.inner.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(img, 0)
	return errors.Join(err, f.Close())
}

type faultFile struct {
	fs   *crashFS
	f    File
	name string
	st   *faultState

	mu   sync.Mutex
	maps map[uintptr]int64 // mapping base address -> file offset
}

func (f *faultFile) Name() string { return f.name }

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	return f.f.ReadAt(p, off)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	return f.f.WriteAt(p, off)
}

// snapshot records the whole file as durable.
func (f *faultFile) snapshot() error {
	n, err := f.f.Size()
	if err != nil {
		return err
	}
	b := make([]byte, n)
	if _, err := f.f.ReadAt(b, 0); err != nil && err != io.EOF {
		return err
	}
	f.fs.mu.Lock()
	f.st.durable, f.st.everSynced = b, true
	f.fs.mu.Unlock()
	return nil
}

func (f *faultFile) Sync() error {
	if f.fs.realSync() {
		if err := f.f.Sync(); err != nil {
			return err
		}
	}
	return f.snapshot()
}

func (f *faultFile) Datasync() error {
	if f.fs.realSync() {
		if err := f.f.Datasync(); err != nil {
			return err
		}
	}
	return f.snapshot()
}

func (f *faultFile) Fallocate(mode uint32, off, n int64) error {
	return f.f.Fallocate(mode, off, n)
}

func (f *faultFile) Truncate(n int64) error {
	return f.f.Truncate(n)
}

func (f *faultFile) Mmap(off int64, length int) ([]byte, error) {
	b, err := f.f.Mmap(off, length)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	if f.maps == nil {
		f.maps = map[uintptr]int64{}
	}
	f.maps[sliceAddr(b)] = off
	f.mu.Unlock()
	return b, nil
}

func (f *faultFile) Munmap(b []byte) error {
	f.mu.Lock()
	delete(f.maps, sliceAddr(b))
	f.mu.Unlock()
	return f.f.Munmap(b)
}

// fileOffset finds the file offset of b within a mapping.
func (f *faultFile) fileOffset(b []byte) (int64, bool) {
	a := sliceAddr(b)
	f.mu.Lock()
	defer f.mu.Unlock()
	best, found := uintptr(0), false
	for base := range f.maps {
		if base <= a && (!found || base > best) {
			best, found = base, true
		}
	}
	if !found {
		return 0, false
	}
	return f.maps[best] + int64(a-best), true
}

func (f *faultFile) Msync(b []byte) error {
	if f.fs.realSync() {
		if err := f.f.Msync(b); err != nil {
			return err
		}
	}
	off, ok := f.fileOffset(b)
	if !ok {
		return ErrNotMapped
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	end := off + int64(len(b))
	if int64(len(f.st.durable)) < end {
		// The file's size is durable (it was synced at creation); grow the
		// image with zeros up to it.
		if n, err := f.f.Size(); err == nil && n > int64(len(f.st.durable)) {
			f.st.durable = append(f.st.durable, make([]byte, n-int64(len(f.st.durable)))...)
		}
	}
	if end > int64(len(f.st.durable)) {
		end = int64(len(f.st.durable))
	}
	if off < end {
		copy(f.st.durable[off:end], b)
	}
	return nil
}

func (f *faultFile) Madvise(b []byte, advice int) error     { return f.f.Madvise(b, advice) }
func (f *faultFile) Fadvise(off, n int64, advice int) error { return f.f.Fadvise(off, n, advice) }
func (f *faultFile) Resident(b []byte) (int64, error)       { return f.f.Resident(b) }
func (f *faultFile) Size() (int64, error)                   { return f.f.Size() }
func (f *faultFile) Close() error                           { return f.f.Close() }
