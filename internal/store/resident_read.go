package store

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
)

// Resident reads: a pull copies its records from a read mapping of the
// CommitLog file when mincore(2) finds every page of its span in memory.
//
// The records of one queue sit between other queues' records: with eight
// queues written by concurrent producers, a pull of 32 records of one
// queue spans about 256 records, and a pread of the span copies all of
// them to keep 32. From the mapping only the 32 are copied. Spans whose
// gaps are smaller than their records keep the pread
// (worthCopyingRecords). A page that mincore does not find in memory
// sends the span to pread, so no request
// goroutine waits on a disk read inside a page fault (the design's rule
// for data that may be cold); a page evicted between the check and the
// copy costs one fault, like a pread of it. A check covers the span's
// 1 MiB chunks whole, and its result stands for residentMemo: the other
// queues' pulls through the same chunks ask no more. The copy runs with
// debug.SetPanicOnFault, so a fault on a truncated or forcibly unmapped
// file is an error, and the file's reference is held throughout.
//
// Files written with pwrite (writeWithoutMmap, the default) get their read
// mapping from the first resident read, shared and never written through;
// it goes when the file is closed. The pages it maps count in the
// process's RssFile and are reclaimed less eagerly than unmapped page
// cache, so every retention pass unmaps them from it again (the page cache
// keeps them; the next read maps them anew).

// residentProbe is the most bytes one mincore call checks; a larger span
// is read with pread.
const residentProbe = readSpanMax + 2*osPageSize

// readMapping returns a mapping of the whole file for reads, mapping it on
// first use; nil when the file cannot be mapped (a spill, an in-memory
// or descriptor-cached file, a failed mmap: those are read with pread).
func (mf *MappedFile) readMapping() []byte {
	if mf.data != nil {
		return mf.data
	}
	if p := mf.rmap.Load(); p != nil {
		return *p
	}
	if mf.f == nil || mf.spill != nil || mf.rmapFailed.Load() {
		return nil
	}
	mf.rmapMu.Lock()
	defer mf.rmapMu.Unlock()
	if p := mf.rmap.Load(); p != nil {
		return *p
	}
	if mf.destroyed.Load() {
		return nil
	}
	m, err := mf.f.Mmap(0, int(mf.size))
	if err != nil {
		mf.rmapFailed.Store(true)
		return nil
	}
	mf.rmap.Store(&m)
	return m
}

// dropReadMapping unmaps the pages of the file's read mapping from the
// process (MADV_DONTNEED: the page cache keeps them). Under rmapMu, so
// that it never advises an address range the file's cleanup unmapped.
func (mf *MappedFile) dropReadMapping() error {
	mf.rmapMu.Lock()
	defer mf.rmapMu.Unlock()
	if p := mf.rmap.Load(); p != nil {
		return mf.f.Madvise(*p, vfs.MadvDontNeed)
	}
	return nil
}

// dropReadMappings is dropReadMapping for every CommitLog file.
func (c *CommitLog) dropReadMappings() {
	for _, mf := range c.mfq.snapshot() {
		if err := mf.dropReadMapping(); err != nil {
			c.st.logger.Warn("store: unmapping the pages of a read mapping", "file", mf.path, "err", err)
		}
	}
}

// residentChunk is the part of a file one residency check covers when it
// can, and residentMemo how long a chunk found in memory is taken to be
// there without asking again. The queues of a topic written together are
// pulled through the same stretch of the file within a few tens of
// milliseconds, each queue's pull spanning a few hundred KiB of it: one
// check of a chunk serves every pull through it instead of each pull
// checking its own span. A page evicted meanwhile costs one fault, as a
// page evicted between a check and its copy always could; an explicit
// eviction (EvictPageCache) forgets what was found.
const (
	residentChunk = 1 << 20
	residentMemo  = 100 * time.Millisecond
)

// resident reports whether every page holding m[pos:pos+n] is in memory.
// A span whose chunks were all found in memory within residentMemo is not
// checked again; otherwise every stale chunk of the span that lies below
// the readable end is checked whole and remembered when in memory, and a
// span with a chunk that is not (or that reaches the readable end) is
// checked alone. now is the monotonic time in ns.
func (mf *MappedFile) resident(m []byte, pos, n, now int64) bool {
	lo := pos &^ (osPageSize - 1)
	hi := min((pos+n+osPageSize-1)&^(osPageSize-1), int64(len(m)))
	if hi-lo > residentProbe {
		return false
	}
	seen := mf.seenChunks()
	c0, c1 := lo/residentChunk, (hi-1)/residentChunk
	readable := min(mf.committed.Load(), int64(len(m)))
	whole := true
	for c := c0; c <= c1 && whole; c++ {
		if at := seen[c].Load(); at != 0 && now-at < int64(residentMemo) {
			continue
		}
		from, to := c*residentChunk, (c+1)*residentChunk
		if to > readable {
			whole = false
			break
		}
		got, err := mf.f.Resident(m[from:to])
		if err != nil || got < to-from {
			whole = false
			break
		}
		seen[c].Store(now)
	}
	if whole {
		return true
	}
	got, err := mf.f.Resident(m[lo:hi])
	return err == nil && got >= hi-lo
}

// seenChunks returns the file's per-chunk residency times, making them on
// first use.
func (mf *MappedFile) seenChunks() []atomic.Int64 {
	if p := mf.seen.Load(); p != nil {
		return *p
	}
	s := make([]atomic.Int64, (mf.size+residentChunk-1)/residentChunk)
	if mf.seen.CompareAndSwap(nil, &s) {
		return s
	}
	return *mf.seen.Load()
}

// forgetResident drops what resident found in memory (the pages may have
// been evicted since).
func (mf *MappedFile) forgetResident() {
	if p := mf.seen.Load(); p != nil {
		for i := range *p {
			(*p)[i].Store(0)
		}
	}
}

// worthCopyingRecords reports whether a span's records are worth copying
// one by one rather than with one pread of the span: when the other
// queues' records between them are on average at least as large as they
// are. Records that lie end to end (one queue, or batches) are read with one
// pread, which costs no mincore and no faults.
func worthCopyingRecords(ps []pick) bool {
	records := 0
	for _, p := range ps {
		records += p.size
	}
	last := ps[len(ps)-1]
	gaps := last.phy + int64(last.size) - ps[0].phy - int64(records)
	return len(ps) > 1 && gaps >= int64(records-last.size) // n-1 gaps against n records
}

// copyResident appends the records of ps (one read span, in CommitLog
// order, all in one file) to dst from the file's read mapping and sets
// their offsets in dst. It returns false, with dst and ps unchanged, when
// any page of the span is not in memory or the records cannot be read
// that way; the caller then reads the span with pread.
func (c *CommitLog) copyResident(dst []byte, ps []pick) ([]byte, bool) {
	first, last := ps[0], ps[len(ps)-1]
	end := last.phy + int64(last.size)
	if first.phy < 0 || end > c.visible.Load() {
		return dst, false
	}
	mf := c.mfq.find(first.phy)
	if mf == nil {
		return dst, false
	}
	defer mf.release()
	pos := first.phy - mf.from
	if end-mf.from > mf.committed.Load() {
		return dst, false
	}
	m := mf.readMapping()
	if m == nil || !mf.resident(m, pos, end-first.phy, c.monoNs()) {
		return dst, false
	}
	base := len(dst)
	out, err := copyRecords(dst, m, mf.from, ps)
	if err != nil {
		c.st.logger.Warn("store: a resident read faulted; reading with pread", "file", mf.path, "err", err)
		return dst[:base], false
	}
	off := base
	for k := range ps {
		ps[k].off, ps[k].ok = off, true
		off += ps[k].size
	}
	return out, true
}

// copyRecords appends the records of ps from the mapping m of the file
// starting at CommitLog offset from, turning a page fault into an error.
func copyRecords(dst, m []byte, from int64, ps []pick) (out []byte, err error) {
	total := 0
	for _, p := range ps {
		total += p.size
	}
	n := len(dst)
	dst = growLen(dst, total)
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			out, err = dst[:n], fmt.Errorf("%w: at %d: %v", ErrFault, ps[0].phy, r)
		}
	}()
	off := n
	for _, p := range ps {
		pos := p.phy - from
		off += copy(dst[off:off+p.size], m[pos:pos+int64(p.size)])
	}
	return dst, nil
}
