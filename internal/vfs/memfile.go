package vfs

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// memPage is the unit MemFS tracks durability in.
const memPage = 4096

// memMaps holds every node with a live mapping, by the mapping's address,
// so that a node whose bytes are mapped is never reclaimed.
var memMaps struct {
	sync.Mutex
	m map[uintptr]*memNode
}

// memNode is one inode of a MemFS: its live bytes and its durable image.
type memNode struct {
	mu   sync.Mutex // guards every field; mapped bytes are written without it
	buf  []byte     // anonymous memory; buf[size:] is zero
	size int64
	maps map[uintptr]memMapping

	dirty    map[int64]struct{} // pages pwrite, truncate and fallocate changed since the last sync
	durSize  int64
	durPages map[int64][]byte // durable copies of pages; an absent page is zeros
}

type memMapping struct{ off, n int64 }

func newMemNode() *memNode {
	n := &memNode{maps: map[uintptr]memMapping{}, dirty: map[int64]struct{}{}, durPages: map[int64][]byte{}}
	runtime.SetFinalizer(n, (*memNode).free)
	return n
}

func (n *memNode) free() {
	if n.buf != nil {
		_ = unix.Munmap(n.buf)
		n.buf = nil
	}
}

func (n *memNode) liveSize() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.size
}

// reserveLocked makes buf hold at least need bytes; the memory moves, so
// it fails while the file is mapped.
func (n *memNode) reserveLocked(need int64) error {
	if need <= int64(len(n.buf)) {
		return nil
	}
	if len(n.maps) > 0 {
		return syscall.ENOMEM
	}
	c := max(int64(2*len(n.buf)), 64<<10, need)
	ps := int64(os.Getpagesize())
	c = (c + ps - 1) / ps * ps
	b, err := unix.Mmap(-1, 0, int(c), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return err
	}
	copy(b, n.buf[:n.size])
	n.free()
	n.buf = b
	return nil
}

func (n *memNode) markLocked(off, end int64) {
	for p := off / memPage; p*memPage < end; p++ {
		n.dirty[p] = struct{}{}
	}
}

// zeroLocked zeroes buf[off:end], giving whole pages back to the kernel.
func (n *memNode) zeroLocked(off, end int64) {
	if off >= end {
		return
	}
	ps := int64(os.Getpagesize())
	a, b := (off+ps-1)/ps*ps, end/ps*ps
	if a < b && unix.Madvise(n.buf[a:b], unix.MADV_DONTNEED) == nil {
		clear(n.buf[off:a])
		clear(n.buf[b:end])
		return
	}
	clear(n.buf[off:end])
}

func (n *memNode) truncate(size int64) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.truncateLocked(size)
}

func (n *memNode) truncateLocked(size int64) error {
	if size < 0 {
		return syscall.EINVAL
	}
	if err := n.reserveLocked(size); err != nil {
		return err
	}
	if size < n.size {
		n.zeroLocked(size, n.size)
		n.markLocked(size, n.size)
	}
	n.size = size
	return nil
}

// durPageLocked returns the durable copy of page p, made from zeros when
// there is none.
func (n *memNode) durPageLocked(p int64) []byte {
	d := n.durPages[p]
	if d == nil {
		d = make([]byte, memPage)
		n.durPages[p] = d
	}
	return d
}

// livePage is page p of the live bytes (zero-padded view when short).
func (n *memNode) livePageLocked(p int64) []byte {
	lo, hi := p*memPage, min((p+1)*memPage, int64(len(n.buf)))
	if lo >= hi {
		return nil
	}
	return n.buf[lo:hi]
}

var zeroPage [memPage]byte

// syncPageLocked makes page p of the live bytes durable.
func (n *memNode) syncPageLocked(p int64) {
	live := n.livePageLocked(p)
	if p*memPage >= n.size || bytes.Equal(live, zeroPage[:len(live)]) {
		delete(n.durPages, p)
		return
	}
	d := n.durPageLocked(p)
	clear(d[copy(d, live):])
}

// syncLocked is fsync: every page changed by pwrite, truncate or
// fallocate, every mapped page that differs from its durable copy, and the
// size become durable.
func (n *memNode) syncLocked() {
	for p := range n.dirty {
		n.syncPageLocked(p)
	}
	clear(n.dirty)
	for _, m := range n.maps {
		for p := m.off / memPage; p*memPage < m.off+m.n && p*memPage < n.size; p++ {
			live := n.livePageLocked(p)
			d := n.durPages[p]
			if d == nil && bytes.Equal(live, zeroPage[:len(live)]) || d != nil && bytes.Equal(live, d[:len(live)]) {
				continue
			}
			n.syncPageLocked(p)
		}
	}
	last := (n.size + memPage - 1) / memPage
	for p := range n.durPages {
		if p >= last {
			delete(n.durPages, p)
		}
	}
	n.durSize = n.size
}

// msyncLocked makes [off, off+len) of the live bytes and the file's size
// durable.
func (n *memNode) msyncLocked(off, length int64) {
	end := min(off+length, n.size)
	for p := off / memPage; p*memPage < end; p++ {
		lo, hi := max(off, p*memPage), min(end, (p+1)*memPage)
		d := n.durPageLocked(p)
		copy(d[lo-p*memPage:hi-p*memPage], n.buf[lo:hi])
	}
	n.durSize = max(n.durSize, n.size)
}

// crashImage is a new node holding what a crash leaves of n.
func (n *memNode) crashImage(garbage bool, rnd *rand.Rand) *memNode {
	n.mu.Lock()
	defer n.mu.Unlock()
	img := newMemNode()
	size := n.durSize
	if garbage {
		size = max(size, n.size)
	}
	if err := img.reserveLocked(size); err != nil {
		panic("vfs: memfs crash image: " + err.Error())
	}
	img.size, img.durSize = size, size
	for p, d := range n.durPages {
		if p*memPage < size {
			copy(img.buf[p*memPage:min(size, (p+1)*memPage)], d)
		}
	}
	if garbage {
		// Where a page changed since its last sync, the disk holds random
		// bytes from its first to its last changed byte.
		cand := map[int64]bool{}
		for p := range n.dirty {
			cand[p] = true
		}
		for _, m := range n.maps {
			for p := m.off / memPage; p*memPage < m.off+m.n; p++ {
				cand[p] = true
			}
		}
		for p := n.durSize / memPage; p*memPage < n.size; p++ {
			cand[p] = true
		}
		pages := make([]int64, 0, len(cand))
		for p := range cand {
			pages = append(pages, p)
		}
		slices.Sort(pages)
		for _, p := range pages {
			lo, hi := p*memPage, min((p+1)*memPage, n.size, size)
			first, last := int64(-1), int64(-1)
			for i := lo; i < hi; i++ {
				if n.buf[i] != img.buf[i] {
					if first < 0 {
						first = i
					}
					last = i
				}
			}
			for i := first; first >= 0 && i <= last; i++ {
				img.buf[i] = byte(rnd.UintN(256))
			}
		}
	}
	for p := int64(0); p*memPage < size; p++ {
		img.syncPageLocked(p)
	}
	return img
}

// memFile is an open file of a MemFS.
type memFile struct {
	node        *memNode
	name        string
	read, write bool
	closed      atomic.Bool
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) check(op string, write bool) error {
	if f.closed.Load() {
		return pathErr(op, f.name, os.ErrClosed)
	}
	if write && !f.write || !write && !f.read {
		return pathErr(op, f.name, syscall.EBADF)
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("read", f.name, syscall.EINVAL)
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	if off >= n.size {
		return 0, io.EOF
	}
	c := copy(p, n.buf[off:n.size])
	if c < len(p) {
		return c, io.EOF
	}
	return c, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("write", f.name, syscall.EINVAL)
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	end := off + int64(len(p))
	if err := n.reserveLocked(end); err != nil {
		return 0, pathErr("write", f.name, err)
	}
	copy(n.buf[off:end], p)
	n.size = max(n.size, end)
	n.markLocked(off, end)
	return len(p), nil
}

func (f *memFile) Sync() error { return f.Datasync() }

func (f *memFile) Datasync() error {
	if f.closed.Load() {
		return pathErr("fsync", f.name, os.ErrClosed)
	}
	f.node.mu.Lock()
	f.node.syncLocked()
	f.node.mu.Unlock()
	return nil
}

func (f *memFile) Fallocate(mode uint32, off, length int64) error {
	if err := f.check("fallocate", true); err != nil {
		return err
	}
	if off < 0 || length <= 0 || mode&FallocPunchHole != 0 && mode&FallocKeepSize == 0 {
		return pathErr("fallocate", f.name, syscall.EINVAL)
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	end := off + length
	if mode&FallocKeepSize == 0 {
		if err := n.reserveLocked(end); err != nil {
			return pathErr("fallocate", f.name, err)
		}
	}
	if mode&(FallocPunchHole|FallocZeroRange) != 0 {
		zend := min(end, n.size)
		n.zeroLocked(off, zend)
		n.markLocked(off, zend)
	}
	if mode&FallocKeepSize == 0 && end > n.size {
		n.size = end
	}
	return nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if err := f.node.truncate(size); err != nil {
		return pathErr("truncate", f.name, err)
	}
	return nil
}

func (f *memFile) Mmap(off int64, length int) ([]byte, error) {
	if err := f.check("mmap", false); err != nil {
		return nil, err
	}
	if off < 0 || length <= 0 || off%int64(os.Getpagesize()) != 0 {
		return nil, pathErr("mmap", f.name, syscall.EINVAL)
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	end := off + int64(length)
	if err := n.reserveLocked(end); err != nil {
		return nil, pathErr("mmap", f.name, err)
	}
	b := n.buf[off:end:end]
	base := sliceAddr(b)
	n.maps[base] = memMapping{off: off, n: int64(length)}
	memMaps.Lock()
	if memMaps.m == nil {
		memMaps.m = map[uintptr]*memNode{}
	}
	memMaps.m[base] = n
	memMaps.Unlock()
	return b, nil
}

func (f *memFile) Munmap(b []byte) error {
	n := f.node
	base := sliceAddr(b)
	n.mu.Lock()
	defer n.mu.Unlock()
	if m, ok := n.maps[base]; !ok || m.n != int64(len(b)) {
		return pathErr("munmap", f.name, syscall.EINVAL)
	}
	delete(n.maps, base)
	memMaps.Lock()
	delete(memMaps.m, base)
	memMaps.Unlock()
	return nil
}

// offsetLocked finds the file offset of b within one of the mappings.
func (n *memNode) offsetLocked(b []byte) (int64, bool) {
	a := sliceAddr(b)
	for base, m := range n.maps {
		if base <= a && a+uintptr(len(b)) <= base+uintptr(m.n) {
			return m.off + int64(a-base), true
		}
	}
	return 0, false
}

func (f *memFile) Msync(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	off, ok := n.offsetLocked(b)
	if !ok {
		return ErrNotMapped
	}
	n.msyncLocked(off, int64(len(b)))
	return nil
}

// mapped checks that b lies in a mapping of the file.
func (f *memFile) mapped(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	f.node.mu.Lock()
	_, ok := f.node.offsetLocked(b)
	f.node.mu.Unlock()
	if !ok {
		return ErrNotMapped
	}
	return nil
}

// Madvise accepts any advice on a mapped range and does nothing: every
// page of a MemFS stays in memory.
func (f *memFile) Madvise(b []byte, advice int) error { return f.mapped(b) }

// Fadvise does nothing.
func (f *memFile) Fadvise(off, n int64, advice int) error { return f.check("fadvise", false) }

// Resident reports every byte of a mapping as in memory.
func (f *memFile) Resident(b []byte) (int64, error) {
	if err := f.mapped(b); err != nil {
		return 0, err
	}
	return int64(len(b)), nil
}

func (f *memFile) Size() (int64, error) {
	if f.closed.Load() {
		return 0, pathErr("stat", f.name, os.ErrClosed)
	}
	return f.node.liveSize(), nil
}

// Close closes the file; its mappings stay valid until Munmap, as with a
// real file.
func (f *memFile) Close() error {
	if f.closed.Swap(true) {
		return pathErr("close", f.name, os.ErrClosed)
	}
	return nil
}
