package vfs

import (
	"bytes"
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
// image. A sync records only what changed since the last one: the byte
// ranges pwrite, truncate and fallocate touched (read back from the file)
// and the pages of live mappings that differ from the image (compared,
// copied only when changed). It is meant for test-sized stores on a real
// disk; MemFS models crashes without a disk.
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

// faultState is one inode's durable image and what changed since.
type faultState struct {
	durable    []byte // contents at the last sync
	everSynced bool
	// dirty is the byte ranges pwrite, truncate and fallocate changed
	// since the last sync, under dmu alone, so a write never waits for a
	// sync of any file (a sync holds the FS's lock while it reads back).
	dmu   sync.Mutex
	dirty ranges
	// maps are the inode's live mappings (base address -> mapping), of
	// every open handle: a sync makes writes through any of them durable.
	maps map[uintptr]faultMap
}

// faultMap is one live mapping of a file.
type faultMap struct {
	off int64
	b   []byte
}

// syncReadChunk is the most syncLocked copies or reads back in one call.
// Neither a copy nor the race detector's annotation of a read is
// preempted: one of a whole new 64 MiB file holds up a stop-the-world, and
// with it every goroutine of the process, for half a second and more where
// pages are slow to fault in.
const syncReadChunk = 1 << 20

// grown returns b extended with zeroes to n bytes, copying in pieces.
func grown(b []byte, n int64) []byte {
	if int64(cap(b)) >= n {
		old := len(b)
		b = b[:n] // what was cut off before may be there: zero it
		for off := old; off < len(b); off += syncReadChunk {
			clear(b[off:min(off+syncReadChunk, len(b))])
		}
		return b
	}
	out := make([]byte, n) // a large allocation is zeroed in preemptible pieces
	for off := 0; off < len(b); off += syncReadChunk {
		copy(out[off:min(off+syncReadChunk, len(b))], b[off:])
	}
	return out
}

// syncLocked makes the file's current contents durable: its size, the
// dirty ranges (read back through f) and the changed pages of its live
// mappings.
func (s *faultState) syncLocked(f File) error {
	// Take the dirty ranges before reading the size: a write that lands
	// after this is in the next sync's set, and one before it is within
	// the size read below.
	s.dmu.Lock()
	dirty := s.dirty
	s.dirty = nil
	s.dmu.Unlock()
	keep := func() { // put the ranges back when the sync fails
		s.dmu.Lock()
		for _, r := range dirty {
			s.dirty.add(r.off, r.end)
		}
		s.dmu.Unlock()
	}
	n, err := f.Size()
	if err != nil {
		keep()
		return err
	}
	if int64(len(s.durable)) > n {
		s.durable = s.durable[:n]
	} else if int64(len(s.durable)) < n {
		s.durable = grown(s.durable, n)
	}
	for _, r := range dirty {
		for off, end := r.off, min(r.end, n); off < end; off += syncReadChunk {
			to := min(off+syncReadChunk, end)
			if _, err := f.ReadAt(s.durable[off:to], off); err != nil && err != io.EOF {
				keep()
				return err
			}
		}
	}
	for _, m := range s.maps {
		copyChangedPages(s.durable, m.off, m.b)
	}
	s.everSynced = true
	return nil
}

// copyChangedPages copies the pages of b (mapped at file offset off) that
// differ from img into img, within img's length.
func copyChangedPages(img []byte, off int64, b []byte) {
	const page = 4096
	if off >= int64(len(img)) {
		return
	}
	b = b[:min(int64(len(b)), int64(len(img))-off)]
	for i := 0; i < len(b); i += page {
		j := min(i+page, len(b))
		dst := img[off+int64(i) : off+int64(j)]
		if !bytes.Equal(dst, b[i:j]) {
			copy(dst, b[i:j])
		}
	}
}

// ranges is a sorted set of disjoint, non-adjacent byte ranges.
type ranges []byteRange

type byteRange struct{ off, end int64 }

// add inserts [off, end), merging it with the ranges it overlaps or
// touches.
func (rs *ranges) add(off, end int64) {
	if off >= end {
		return
	}
	r := *rs
	// i: the first range that ends at or after off (may merge).
	i := sort.Search(len(r), func(k int) bool { return r[k].end >= off })
	j := i
	for j < len(r) && r[j].off <= end {
		off, end = min(off, r[j].off), max(end, r[j].end)
		j++
	}
	if i == j {
		r = append(r, byteRange{})
		copy(r[i+1:], r[i:])
		r[i] = byteRange{off, end}
	} else {
		r[i] = byteRange{off, end}
		r = append(r[:i+1], r[j:]...)
	}
	*rs = r
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
		if b, err := ReadFile(fs.inner, name); err == nil {
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
	cur, _ := ReadFile(fs.inner, p)
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
	mine []uintptr // base addresses of this handle's live mappings (under fs.mu)
}

func (f *faultFile) Name() string { return f.name }

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	return f.f.ReadAt(p, off)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.f.WriteAt(p, off)
	f.touch(off, off+int64(n))
	return n, err
}

// touch records [off, end) as changed since the last sync.
func (f *faultFile) touch(off, end int64) {
	f.st.dmu.Lock()
	f.st.dirty.add(off, end)
	f.st.dmu.Unlock()
}

// snapshot records what changed since the last sync as durable.
func (f *faultFile) snapshot() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.st.syncLocked(f.f)
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
	err := f.f.Fallocate(mode, off, n)
	f.touch(off, off+n) // a failed call may have changed part of the range
	return err
}

func (f *faultFile) Truncate(n int64) error {
	old, _ := f.f.Size()
	err := f.f.Truncate(n)
	f.touch(min(old, n), max(old, n))
	return err
}

func (f *faultFile) Mmap(off int64, length int) ([]byte, error) {
	b, err := f.f.Mmap(off, length)
	if err != nil {
		return nil, err
	}
	f.fs.mu.Lock()
	if f.st.maps == nil {
		f.st.maps = map[uintptr]faultMap{}
	}
	f.st.maps[sliceAddr(b)] = faultMap{off: off, b: b}
	f.mine = append(f.mine, sliceAddr(b))
	f.fs.mu.Unlock()
	return b, nil
}

func (f *faultFile) Munmap(b []byte) error {
	f.fs.mu.Lock()
	f.forgetLocked(sliceAddr(b))
	f.fs.mu.Unlock()
	return f.f.Munmap(b)
}

// forgetLocked drops this handle's mapping at base.
func (f *faultFile) forgetLocked(base uintptr) {
	delete(f.st.maps, base)
	for i, a := range f.mine {
		if a == base {
			f.mine = append(f.mine[:i], f.mine[i+1:]...)
			break
		}
	}
}

// fileOffset finds the file offset of b within a mapping of this handle.
func (f *faultFile) fileOffset(b []byte) (int64, bool) {
	a := sliceAddr(b)
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	best, found := uintptr(0), false
	for _, base := range f.mine {
		if base <= a && (!found || base > best) {
			best, found = base, true
		}
	}
	if !found {
		return 0, false
	}
	return f.st.maps[best].off + int64(a-best), true
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

// Close closes the handle; its mappings stay live (and tracked) until
// Munmap, as mappings outlive their descriptor.
func (f *faultFile) Close() error { return f.f.Close() }
