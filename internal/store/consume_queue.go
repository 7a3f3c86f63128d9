package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/spoolmq/spool/internal/vfs"
)

// CQEntrySize is the size of a consume-queue entry:
//
//	+----------------------+------------+----------------------+
//	| commit-log offset 8  | size 4     | tag code 8           |
//	+----------------------+------------+----------------------+
const CQEntrySize = 20

// allocSparse creates a file at its full size without allocating blocks
// (ftruncate only): consume-queue files take the disk their entries take.
// They are written with pwrite, so a full disk is an error of the write,
// never a fault.
const allocSparse = "sparse"

// CQEntry is one decoded consume-queue entry.
type CQEntry struct {
	Offset   int64 // commit-log offset of the record
	Size     int32
	TagsCode int64
}

// DecodeCQEntry decodes a 20-byte entry. ok is false for an entry that was
// never written (zero size) or is impossible (negative offset).
func DecodeCQEntry(b []byte) (CQEntry, bool) {
	if len(b) < CQEntrySize {
		return CQEntry{}, false
	}
	e := CQEntry{
		Offset:   int64(binary.BigEndian.Uint64(b)),
		Size:     int32(binary.BigEndian.Uint32(b[8:])),
		TagsCode: int64(binary.BigEndian.Uint64(b[12:])),
	}
	return e, e.Offset >= 0 && e.Size > 0
}

// holeEntry marks a logical offset whose record is gone (skipped as
// corrupt by recovery): CommitLog offset -1, size 0. Reads step over it.
var holeEntry = AppendCQEntry(nil, CQEntry{Offset: -1})

func isHole(b []byte) bool { return string(b[:CQEntrySize]) == string(holeEntry) }

// AppendCQEntry appends the encoding of e to dst.
func AppendCQEntry(dst []byte, e CQEntry) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.Offset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(e.Size))
	return binary.BigEndian.AppendUint64(dst, uint64(e.TagsCode))
}

// ConsumeQueue is the index of one topic queue: entry i (logical offset i)
// at byte i*20 of the queue, in files of mappedFileSizeConsumeQueue bytes
// named by their first byte's 20-digit offset. The dispatcher is the only
// appender. Appended entries first collect in the queue's tail, in memory,
// and are written to the file (one pwrite for all of them) when the tail
// reaches cqTailMax, when the tails of all queues pass cqTailBudget, and
// before every flush (so before every checkpoint, which counts only what a
// flush made durable). Readers read [minOffset, written) with pread and
// [written, maxOffset) from the tail.
//
//	minOffset ....... flushedTo ....... written ........ maxOffset
//	   |     durable      |   in the file   |  in the tail  |
type ConsumeQueue struct {
	st      *DefaultMessageStore
	topic   string
	queueID int32
	mfq     *MappedFileQueue
	fsize   int64

	mu        sync.Mutex // writer side: append, write-out, truncate, flush, delete
	minOffset atomic.Int64
	maxOffset atomic.Int64 // exclusive: entries dispatched (in the file or the tail)
	maxPhyEnd atomic.Int64 // commit-log end of the last entry
	flushedTo atomic.Int64 // logical offset durable
	dirty     atomic.Bool

	// written is where the tail begins: entries below it are in the
	// file. It moves, and the tail changes, under tailMu (and mu); the
	// tail's bytes are changed only by holders of mu, who may read them
	// without tailMu.
	written atomic.Int64
	tailMu  sync.Mutex
	tail    []byte
}

// cqTailMax is the size at which a queue's tail is written out by the
// dispatcher; cqTailBudget bounds the tails of all queues (past it the
// dispatcher writes every tail after its pass).
const (
	cqTailMax    = 16 << 10 / CQEntrySize * CQEntrySize
	cqTailBudget = 4 << 20
)

func newConsumeQueue(st *DefaultMessageStore, topic string, queueID int32) *ConsumeQueue {
	dir := filepath.Join(st.cfg.consumeQueueDir(), topic, strconv.Itoa(int(queueID)))
	fsize := st.cfg.MappedFileSizeConsumeQueue / CQEntrySize * CQEntrySize
	mfq := newMappedFileQueue(st.cqFiles, dir, fsize, false)
	mfq.sparse = true
	return &ConsumeQueue{st: st, topic: topic, queueID: queueID, fsize: fsize, mfq: mfq}
}

// load opens the files and finds the last written entry: entries are
// written in order from the queue's first one, so the first zero entry
// after it ends the queue (the files are sparse; only the queue's first
// file may begin with zero entries, when the queue starts past its file's
// first offset). With abnormal set (recovery after a crash) the queue
// keeps only the valid, increasing entries whose records start below
// limit (the checkpoint's dispatched offset: everything below it was
// flushed); the rest is cut and dispatch rebuilds it.
func (cq *ConsumeQueue) load(abnormal bool, limit int64) error {
	if err := cq.mfq.load(); err != nil {
		return err
	}
	files := cq.mfq.snapshot()
	if len(files) == 0 {
		return nil
	}
	var end int64 = -1
	start := files[0].from
	for i := len(files) - 1; i >= 0 && end < 0; i-- {
		mf := files[i]
		first, pos, phyEnd, err := cq.scanFile(mf, i == 0, abnormal, limit)
		if err != nil {
			return err
		}
		if pos > 0 || i == 0 {
			end = mf.from + pos
			cq.maxPhyEnd.Store(phyEnd)
		}
		if i == 0 && pos > 0 {
			start = mf.from + first
		}
	}
	if err := cq.mfq.truncate(end, abnormal); err != nil {
		return err
	}
	cq.maxOffset.Store(end / CQEntrySize)
	cq.flushedTo.Store(end / CQEntrySize)
	cq.written.Store(end / CQEntrySize)
	cq.minOffset.Store(start / CQEntrySize)
	return nil
}

// scanFile finds the written entries of mf: [first, end) up to the first
// zero entry, or with strict the valid increasing prefix below limit.
// Leading zero entries are skipped only in the queue's first file
// (queueStart). It reads in chunks that grow from one page, so a file
// with a few entries costs one small read, not a read of its whole size.
func (cq *ConsumeQueue) scanFile(mf *MappedFile, queueStart, strict bool, limit int64) (first, end, phyEnd int64, err error) {
	buf := make([]byte, 64<<10/CQEntrySize*CQEntrySize)
	chunk := int64(osPageSize / CQEntrySize * CQEntrySize)
	prev := int64(-1)
	started := !queueStart
	for off := int64(0); off < mf.size; {
		n := min(chunk, mf.size-off)
		if _, err := mf.f.ReadAt(buf[:n], off); err != nil {
			return 0, 0, 0, fmt.Errorf("store: read %s at %d: %w", mf.path, off, err)
		}
		for i := int64(0); i+CQEntrySize <= n; i += CQEntrySize {
			b := buf[i : i+CQEntrySize]
			if !started {
				if allZero(b) {
					continue
				}
				started, first, end = true, off+i, off+i
			}
			if isHole(b) {
				end = off + i + CQEntrySize
				continue
			}
			e, ok := DecodeCQEntry(b)
			if !ok || strict && (e.Offset <= prev || e.Offset >= limit) {
				return first, end, phyEnd, nil
			}
			prev = e.Offset
			end = off + i + CQEntrySize
			phyEnd = e.Offset + int64(e.Size)
		}
		off += n
		chunk = min(chunk*2, int64(len(buf)))
	}
	return first, end, phyEnd, nil
}

// appendEntries appends entries starting at logical offset first to the
// tail (written out once it reaches cqTailMax). Entries already present
// are skipped; a gap is refused.
func (cq *ConsumeQueue) appendEntries(st *DefaultMessageStore, first int64, entries []byte) error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	max := cq.maxOffset.Load()
	n := int64(len(entries) / CQEntrySize)
	if first+n <= max {
		return nil // already dispatched
	}
	if first < max {
		entries = entries[(max-first)*CQEntrySize:]
		first = max
	}
	if first > max {
		if max == 0 && cq.mfq.count() == 0 {
			// A queue that starts past zero (its earlier files were
			// deleted, or the topic was recreated): begin there.
			cq.minOffset.Store(first)
			cq.maxOffset.Store(first)
			cq.flushedTo.Store(first)
			cq.written.Store(first)
		} else if first-max <= 1<<20 {
			// Records of these offsets are gone (skipped as corrupt by
			// recovery): hole entries keep the logical offsets.
			st.logger.Warn("store: consume queue gap filled with hole entries", "topic", cq.topic, "queueId", cq.queueID,
				"from", max, "to", first)
			holes := make([]byte, 0, (first-max)*CQEntrySize+int64(len(entries)))
			for i := max; i < first; i++ {
				holes = append(holes, holeEntry...)
			}
			entries = append(holes, entries...)
			first = max
		} else {
			return fmt.Errorf("%w: consume queue %s-%d: entry %d after max %d", ErrCorrupt, cq.topic, cq.queueID, first, max)
		}
	}
	// The files are made here, by the dispatcher (whose failure refuses
	// puts until it recovers); only the write of the entries is deferred.
	for pos, end := first*CQEntrySize, first*CQEntrySize+int64(len(entries)); pos < end; {
		mf, err := cq.fileAtLocked(pos)
		if err != nil {
			return err
		}
		pos = mf.from + mf.size
	}
	cq.tailMu.Lock()
	cq.tail = append(cq.tail, entries...)
	cq.tailMu.Unlock()
	st.cqTailBytes.Add(int64(len(entries)))
	if last, ok := DecodeCQEntry(entries[len(entries)-CQEntrySize:]); ok {
		cq.maxPhyEnd.Store(last.Offset + int64(last.Size))
	}
	cq.maxOffset.Store(first + int64(len(entries)/CQEntrySize))
	if len(cq.tail) >= cqTailMax {
		return cq.writeTailLocked()
	}
	return nil
}

// cqWriteError is a failed write of a tail (not of a sync): one that found
// no space is retried, as the dispatcher's writes are.
type cqWriteError struct{ err error }

func (e *cqWriteError) Error() string { return e.err.Error() }
func (e *cqWriteError) Unwrap() error { return e.err }

// writeTailLocked writes the tail to the files (creating them, sparse, as
// needed) with one pwrite per file it spans, then drops what was written
// from it. On an error the unwritten rest stays in the tail. cq.mu is
// held.
func (cq *ConsumeQueue) writeTailLocked() error {
	st := cq.st
	entries := cq.tail
	first := cq.written.Load()
	done := 0
	var err error
	for done < len(entries) {
		pos := first * CQEntrySize
		mf := cq.mfq.find(pos)
		if mf == nil {
			nm, ferr := cq.fileAtLocked(pos)
			if ferr != nil {
				err = &cqWriteError{ferr}
				break
			}
			if !nm.acquire() {
				err = &cqWriteError{fmt.Errorf("store: %s was removed", nm.path)}
				break
			}
			mf = nm
		}
		rel := pos - mf.from
		k := min(int64(len(entries)-done), mf.size-rel)
		_, werr := mf.f.WriteAt(entries[done:done+int(k)], rel)
		if werr == nil {
			mf.setWrote(rel + k)
		}
		mf.release()
		if werr != nil {
			err = &cqWriteError{fmt.Errorf("store: write %s at %d: %w", mf.path, rel, werr)}
			break
		}
		first += k / CQEntrySize
		done += int(k)
	}
	if done > 0 {
		cq.tailMu.Lock()
		n := copy(cq.tail, cq.tail[done:])
		cq.tail = cq.tail[:n]
		if n == 0 && cap(cq.tail) > 2*cqTailMax {
			cq.tail = nil // a burst's buffer goes back
		}
		cq.written.Store(first)
		cq.tailMu.Unlock()
		st.cqTailBytes.Add(-int64(done))
		cq.dirty.Store(true)
	}
	return err
}

// fileAtLocked returns the last file when it holds byte pos of the queue,
// else creates (sparse) and appends the file that does. cq.mu is held.
func (cq *ConsumeQueue) fileAtLocked(pos int64) (*MappedFile, error) {
	if mf := cq.mfq.last(); mf != nil && pos < mf.from+mf.size {
		if pos < mf.from {
			return nil, fmt.Errorf("%w: consume queue %s-%d: no file holds byte %d", ErrCorrupt, cq.topic, cq.queueID, pos)
		}
		return mf, nil
	}
	st := cq.st
	// A file is made without syncs (a slow disk would stall dispatch for
	// every new queue); the flush that syncs its first entries syncs its
	// name too, and the checkpoint claims no entry before that. Only the
	// last file may be unsynced, so a crash can cost a queue no more than
	// its last file, which load removes when it is short.
	if last := cq.mfq.last(); last != nil {
		if err := last.syncName(); err != nil {
			return nil, fmt.Errorf("store: sync %s: %w", last.path, err)
		}
	}
	from := pos / cq.fsize * cq.fsize
	nm, err := createUnsynced(st.cqFiles, cq.mfq.dir, from, cq.fsize, allocSparse, false)
	if err != nil {
		if mkErr := st.fs.MkdirAll(cq.mfq.dir, 0o755); mkErr == nil {
			nm, err = createUnsynced(st.cqFiles, cq.mfq.dir, from, cq.fsize, allocSparse, false)
		}
	}
	if err != nil {
		return nil, err
	}
	if err := cq.mfq.appendFile(nm); err != nil {
		nm.destroy(true, 0, 0)
		return nil, err
	}
	return nm, nil
}

// unwrittenFrom is the CommitLog offset of the first record whose entry
// is still in the tail (math.MaxInt64 when none is): a checkpoint claims
// no more than that as dispatched.
func (cq *ConsumeQueue) unwrittenFrom() int64 {
	cq.tailMu.Lock()
	defer cq.tailMu.Unlock()
	for i := 0; i+CQEntrySize <= len(cq.tail); i += CQEntrySize {
		if e, ok := DecodeCQEntry(cq.tail[i:]); ok {
			return e.Offset
		}
	}
	return math.MaxInt64
}

// writeTail writes the queue's tail out (the flush and the dispatcher's
// budget do).
func (cq *ConsumeQueue) writeTail() error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if len(cq.tail) == 0 {
		return nil
	}
	return cq.writeTailLocked()
}

// dropTailLocked forgets the tail from logical offset at (cq.mu held).
func (cq *ConsumeQueue) dropTailLocked(at int64) {
	cq.tailMu.Lock()
	w := cq.written.Load()
	keep := 0
	if at > w {
		keep = int(min(at-w, int64(len(cq.tail)/CQEntrySize))) * CQEntrySize
	}
	cq.st.cqTailBytes.Add(-int64(len(cq.tail) - keep))
	cq.tail = cq.tail[:keep]
	if at < w {
		cq.written.Store(at)
	}
	cq.tailMu.Unlock()
}

// readEntries reads up to n entries from logical offset off, within one
// file: those below written from the file, the rest from the tail. It
// returns the bytes and the logical offset where that file ends.
func (cq *ConsumeQueue) readEntries(dst []byte, off int64, n int) ([]byte, int64, error) {
	return cq.readEntriesMaybeWait(dst, off, n, false)
}

// readEntriesMaybeWait is readEntries; with noWait it returns errWouldWait
// instead of waiting for the device.
func (cq *ConsumeQueue) readEntriesMaybeWait(dst []byte, off int64, n int, noWait bool) ([]byte, int64, error) {
	max := cq.maxOffset.Load()
	if off >= max || n <= 0 {
		return dst[:0], off, nil
	}
	pos := off * CQEntrySize
	fileEnd := (pos/cq.fsize + 1) * cq.fsize / CQEntrySize
	k := min(int64(n), max-off, fileEnd-off)
	dst = growLen(dst[:0], int(k*CQEntrySize))
	got := int64(0)
	for got < k {
		at := off + got
		if w := cq.written.Load(); at < w {
			m := min(k-got, w-at)
			mf := cq.mfq.find(at * CQEntrySize)
			if mf == nil {
				if got == 0 {
					return dst[:0], fileEnd, nil
				}
				break
			}
			rel := at*CQEntrySize - mf.from
			b := dst[got*CQEntrySize : (got+m)*CQEntrySize]
			var err error
			if noWait {
				if _, err = vfs.ReadAtNoWait(mf.f, b, rel); err != nil {
					err = errWouldWait
				}
			} else {
				_, err = mf.f.ReadAt(b, rel)
			}
			mf.release()
			if err == errWouldWait {
				return dst[:0], fileEnd, err
			}
			if err != nil {
				return dst[:0], fileEnd, fmt.Errorf("store: read %s at %d: %w", mf.path, rel, err)
			}
			got += m
			continue
		}
		cq.tailMu.Lock()
		w := cq.written.Load()
		if at < w { // written out meanwhile: it is in the file now
			cq.tailMu.Unlock()
			continue
		}
		m := min(k-got, int64(len(cq.tail))/CQEntrySize-(at-w))
		if m > 0 {
			copy(dst[got*CQEntrySize:(got+m)*CQEntrySize], cq.tail[(at-w)*CQEntrySize:])
		}
		cq.tailMu.Unlock()
		if m <= 0 {
			break // cut meanwhile
		}
		got += m
	}
	return dst[:got*CQEntrySize], fileEnd, nil
}

// entryAt reads one entry.
func (cq *ConsumeQueue) entryAt(off int64) (CQEntry, bool) {
	var b [CQEntrySize]byte
	got, _, err := cq.readEntries(b[:], off, 1)
	if err != nil || len(got) < CQEntrySize {
		return CQEntry{}, false
	}
	return DecodeCQEntry(got)
}

// realEntryFrom returns the first entry at or after off that is not a
// hole (looking at most 4096 entries ahead).
func (cq *ConsumeQueue) realEntryFrom(off int64) (CQEntry, bool) {
	for i := int64(0); i < 4096 && off+i < cq.maxOffset.Load(); i++ {
		var b [CQEntrySize]byte
		got, _, err := cq.readEntries(b[:], off+i, 1)
		if err != nil || len(got) < CQEntrySize {
			return CQEntry{}, false
		}
		if isHole(got) {
			continue
		}
		return DecodeCQEntry(got)
	}
	return CQEntry{}, false
}

// cqFlushLagMax bounds how far behind the dispatched end a consume queue's
// first unsynced entry may point before an interval's flush syncs the
// queue whatever its size: the checkpoint claims nothing past that entry,
// so it is also what recovery after a power cut may re-dispatch.
const cqFlushLagMax = 256 << 20

// cqFlushDue decides whether an interval's flush syncs a consume queue
// whose entries [flushedTo, written) are in its file but not durable
// (RocketMQ's flushConsumeQueueLeastPages): always when leastPages is 0
// (a thorough flush); when they cross at least leastPages page boundaries;
// or when the first of them is for a record at firstPhy more than
// cqFlushLagMax behind dispatched. A queue with nothing unsynced is never
// due.
func cqFlushDue(flushedTo, written int64, leastPages int, firstPhy, dispatched int64) bool {
	if written <= flushedTo {
		return false
	}
	if leastPages <= 0 {
		return true
	}
	pages := written*CQEntrySize/osPageSize - flushedTo*CQEntrySize/osPageSize
	return pages >= int64(leastPages) || dispatched-firstPhy > cqFlushLagMax
}

// unflushedFrom is the CommitLog offset of the first record whose entry is
// in the queue's file but not synced (math.MaxInt64 when none is, and 0
// when it cannot be read, which claims nothing): a checkpoint claims no
// more than that as dispatched.
func (cq *ConsumeQueue) unflushedFrom() int64 {
	from := cq.flushedTo.Load()
	if cq.written.Load() <= from {
		return math.MaxInt64
	}
	e, ok := cq.realEntryFrom(max(from, cq.minOffset.Load()))
	if !ok {
		return 0
	}
	return e.Offset
}

// flushIfDue writes the tail out and syncs the queue's files when
// cqFlushDue says so; otherwise its entries stay unsynced, and the
// checkpoint does not claim them (unflushedFrom).
func (cq *ConsumeQueue) flushIfDue(leastPages int, dispatched int64) error {
	if err := cq.writeTail(); err != nil {
		return err
	}
	if !cq.dirty.Load() {
		return nil
	}
	// A thorough flush, or nothing unsynced (flush clears the flag), goes
	// straight to flush.
	if flushedTo, written := cq.flushedTo.Load(), cq.written.Load(); leastPages > 0 && written > flushedTo &&
		!cqFlushDue(flushedTo, written, leastPages, cq.unflushedFrom(), dispatched) {
		return nil
	}
	return cq.flush()
}

// flush writes the tail out and fdatasyncs the files holding unflushed
// entries.
func (cq *ConsumeQueue) flush() error {
	if err := cq.writeTail(); err != nil {
		return err
	}
	if !cq.dirty.Swap(false) {
		return nil
	}
	cq.mu.Lock()
	max := cq.written.Load()
	from := cq.flushedTo.Load()
	cq.mu.Unlock()
	for off := from; off < max; {
		mf := cq.mfq.find(off * CQEntrySize)
		if mf == nil {
			break
		}
		err := mf.syncName()
		if err == nil {
			err = mf.f.Datasync()
		}
		next := (mf.from + mf.size) / CQEntrySize
		mf.release()
		if err != nil {
			cq.dirty.Store(true)
			return fmt.Errorf("store: sync %s: %w", mf.path, err)
		}
		off = next
	}
	cq.flushedTo.Store(max)
	return nil
}

// truncatePhy drops entries whose record ends past phyMax.
func (cq *ConsumeQueue) truncatePhy(phyMax int64) error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.maxPhyEnd.Load() <= phyMax {
		return nil
	}
	lo, hi := cq.minOffset.Load(), cq.maxOffset.Load()
	// Entries are in commit-log order: find the first ending past phyMax.
	for lo < hi {
		mid := lo + (hi-lo)/2
		e, ok := cq.realEntryFrom(mid)
		if ok && e.Offset+int64(e.Size) <= phyMax {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < cq.written.Load() {
		if err := cq.mfq.truncateFrom(lo * CQEntrySize); err != nil {
			return err
		}
	}
	cq.dropTailLocked(lo)
	cq.maxOffset.Store(lo)
	if cq.flushedTo.Load() > lo {
		cq.flushedTo.Store(lo)
	}
	if lo < cq.minOffset.Load() {
		cq.minOffset.Store(lo)
	}
	var phyEnd int64
	if lo > cq.minOffset.Load() {
		if e, ok := cq.entryAt(lo - 1); ok {
			phyEnd = e.Offset + int64(e.Size)
		}
	}
	cq.maxPhyEnd.Store(phyEnd)
	return nil
}

// correctMinOffset moves minOffset to the first entry whose record is at
// or after phyMin.
func (cq *ConsumeQueue) correctMinOffset(phyMin int64) {
	lo, hi := cq.minOffset.Load(), cq.maxOffset.Load()
	for lo < hi {
		mid := lo + (hi-lo)/2
		e, ok := cq.realEntryFrom(mid)
		if ok && e.Offset < phyMin {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo > cq.minOffset.Load() {
		cq.minOffset.Store(lo)
	}
}

func (cq *ConsumeQueue) close() error { return cq.mfq.close() }
