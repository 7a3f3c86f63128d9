package store

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

// blankSize is the size of the end-of-file marker: TOTALSIZE (the bytes
// left in the file) and the blank magic code.
const blankSize = message.RecordPrefixLen

// inlineCopyMax is the largest record run copied into a mapping while the
// put lock is held; larger ones reserve space under the lock and are copied
// after it is released.
const inlineCopyMax = 16 << 10

// hotWindow is how far behind the write cursor a read may copy from the
// mapping (those pages were just written and are resident); anything older
// is read with pread.
const hotWindow = 8 << 20

type queueKey struct {
	topic   string
	queueID int32
}

// pendingWrite is a reserved range whose bytes are not all in the file
// yet; the readable position never passes an unfinished one.
type pendingWrite struct {
	mf   *MappedFile
	end  int64 // file-relative end of the range
	done bool
	err  error
	// A staged range (groupWriter): its bytes wait in the staging ring at
	// stage positions [gFrom, gTo) for a group write at file position pos;
	// claimed once a writer took it. Guarded by pubMu.
	staged, claimed bool
	pos             int64
	gFrom, gTo      int64
}

// CommitLog is the append-only log of stored records over a
// MappedFileQueue. One put lock serialises offset assignment; see the
// package doc for what it may cover.
type CommitLog struct {
	st      *DefaultMessageStore
	cfg     *Config
	fs      vfs.FS
	mfq     *MappedFileQueue
	lock    putLock
	mmapped bool

	// Guarded by lock.
	cur          *MappedFile
	queueOffsets map[queueKey]*int64
	halfKicked   bool

	pubMu      sync.Mutex
	pending    []*pendingWrite
	freeWrites []*pendingWrite // published ranges kept for reuse (newWriteLocked)

	visible      atomic.Int64 // end of the readable records
	flushedWhere atomic.Int64 // end of the durable records
	lockBeginNs  atomic.Int64 // monotonic ns the put lock was taken at, 0 when free
	spilling     atomic.Pointer[MappedFile]
	spareSpill   atomic.Pointer[[]byte] // the next spill's buffer, allocated off the put path
	writeFailed  atomic.Bool

	// Puts stored in the spill whose answer waits for the spill's file:
	// until then their bytes are in process memory only, which a kill -9
	// loses (see the package doc).
	spillMu      sync.Mutex
	spillWaiters []spillWaiter

	// Puts whose records are written but not yet readable: an earlier
	// reserved range is still being copied. Answered when the readable
	// end passes them (guarded by pubMu), so no acknowledged record sits
	// behind a hole that recovery would cut at.
	visWaiters []visWaiter
	// visSpare is the other list of the pair visWaiters swaps with: the
	// waiters taken to be answered leave in one list while the next ones
	// gather in the other, so a pass's answers cost no allocation
	// (guarded by pubMu; nil while its list is out being answered).
	visSpare []visWaiter

	// Writes that found no space, retried by the allocator goroutine.
	retryMu      sync.Mutex
	retries      []failedWrite
	writeNoSpace atomic.Bool

	// cutMu is held shared by a flush, a dispatch pass and an index pass
	// and exclusively by a truncation (truncate.go), so a cut never runs
	// under them. Nothing on the put path or the HA read path takes it.
	cutMu sync.RWMutex
	// gated (controller mode): dispatch and indexing stop at confirm, the
	// offset every member of the sync-state set holds.
	gated   atomic.Bool
	confirm atomic.Int64

	alloc   *allocator
	flusher *flusher
	group   *groupWriter // the pwrite path's combined writes
	// residentSpans and preadSpans count the read spans of pulls copied
	// from a read mapping and those read with pread.
	residentSpans, preadSpans atomic.Int64
	// fileWrites counts the pwrites into CommitLog files (group runs,
	// single ranges and blanks; not retries).
	fileWrites atomic.Int64
	pool       *transientPool // transientStorePoolEnable
	committer  *committer
	kickCh     chan struct{} // wakes the dispatcher
	// dispatchIdle is set while the dispatcher is parked (or about to
	// park); only then does kickDispatch wake it.
	dispatchIdle atomic.Bool
	bufPool      sync.Pool
	epoch        time.Time
	osClock      bool // the store clock is the OS clock
}

func newCommitLog(st *DefaultMessageStore) *CommitLog {
	cfg := &st.cfg
	mmapped := !cfg.WriteWithoutMmap && !cfg.transient()
	c := &CommitLog{
		st:           st,
		cfg:          cfg,
		fs:           st.fs,
		mfq:          newMappedFileQueue(st.fs, cfg.commitLogDir(), cfg.MappedFileSizeCommitLog, mmapped),
		lock:         newPutLock(cfg.UseReentrantLockWhenPutMessage),
		mmapped:      mmapped,
		queueOffsets: make(map[queueKey]*int64),
		kickCh:       make(chan struct{}, 1),
		epoch:        time.Now(),
		osClock:      st.fs == vfs.OS(),
	}
	c.bufPool.New = func() any { b := make([]byte, 0, 4096); return &b }
	c.alloc = newAllocator(c)
	c.flusher = newFlusher(c)
	if !mmapped && !cfg.transient() {
		c.group = newGroupWriter(groupBufSize)
	}
	if cfg.transient() {
		c.committer = &committer{c: c, kickCh: make(chan struct{}, 1), stopCh: make(chan struct{})}
	}
	return c
}

func (c *CommitLog) monoNs() int64 { return int64(time.Since(c.epoch)) + 1 }

// maxOffset is the end of the readable records.
func (c *CommitLog) maxOffset() int64 { return c.visible.Load() }

// minOffset is the first offset still kept.
func (c *CommitLog) minOffset() int64 {
	mf := c.mfq.first()
	if mf == nil {
		return 0
	}
	return mf.from
}

// lockHeldFor is how long the current holder has held the put lock (0 when
// free).
func (c *CommitLog) lockHeldFor() time.Duration {
	b := c.lockBeginNs.Load()
	if b == 0 {
		return 0
	}
	return time.Duration(c.monoNs() - b)
}

// spillWaiter is a put held until the spill it went into has its file.
type spillWaiter struct {
	sp   *MappedFile
	res  PutResult
	done func(PutResult)
}

// visWaiter is a put held until the readable end reaches end.
type visWaiter struct {
	end  int64
	res  PutResult
	done func(PutResult)
}

// appendOutcome is what an append did.
type appendOutcome struct {
	behind  bool        // the readable end had not reached the records' end
	spill   *MappedFile // the in-memory spill that took the records, or nil
	status  PutStatus
	remark  string
	wrote   int64 // commit-log offset of the first record
	end     int64 // end offset of the last record
	queueOf int64
	storeTs int64
	offsets []int64
	endNs   int64 // when the put ended on the monotonic clock (monoNs), if known; 0 = read it
}

// appendRecords stores the encoded records in buf (sizes gives each
// record's length; all go to one queue). queue offsets are assigned unless
// the records are prepared or rolled-back transaction parts. buf is not
// kept.
func (c *CommitLog) appendRecords(buf []byte, sizes []int, key queueKey, tranType int32, fixedTs int64, wantOffsets bool) appendOutcome {
	total := int64(len(buf))
	if total+blankSize > c.cfg.MappedFileSizeCommitLog {
		return appendOutcome{status: MessageIllegal, remark: fmt.Sprintf("record run of %d bytes does not fit a %d-byte CommitLog file", total, c.cfg.MappedFileSizeCommitLog)}
	}
	assign := tranType != message.TransactionPreparedType && tranType != message.TransactionRollbackType

	c.lock.Lock()
	var begin, ts int64
	if c.osClock {
		now := time.Now() // one clock read for the hold time and the store time
		begin = int64(now.Sub(c.epoch)) + 1
		ts = now.UnixMilli()
	} else {
		begin = c.monoNs()
		ts = c.fs.Now().UnixMilli()
	}
	if fixedTs != 0 {
		ts = fixedTs
	}
	c.lockBeginNs.Store(begin)
	if r := c.st.refusal.Load(); r != nil {
		// Refused after writable() let this put through (a role change
		// began meanwhile): checked again under the lock, so that once a
		// refusal is set and the lock has been taken and released no put
		// reserves another range (awaitPutsLanded relies on it).
		c.lockBeginNs.Store(0)
		c.lock.Unlock()
		return appendOutcome{status: ServiceNotAvailable, remark: *r}
	}

	// Writes to finish after unlocking (at most a blank and the records);
	// fixed arrays keep them off the heap.
	var staged *pendingWrite // this put's range in the staging ring
	var leading bool         // this put writes its own and the staged ranges
	var postArr [2]*pendingWrite
	var postBufArr [2][]byte
	var postPosArr [2]int64
	post, postBufs, postPos := postArr[:0], postBufArr[:0], postPosArr[:0]

	mf := c.cur
	if mf != nil && mf.spill != nil && c.alloc.failing.Load() {
		// The spill's file could not be created: nothing more goes into
		// memory only; the allocator retries and the spill is adopted
		// once space returns.
		c.lockBeginNs.Store(0)
		c.lock.Unlock()
		c.st.stats.noSpaceRefusals.Add(1)
		return appendOutcome{status: ServiceNotAvailable, remark: c.noFileRemark(mf.from)}
	}
	if mf != nil && mf.spill != nil && mf.size-mf.wrote.Load() >= total+blankSize && mf.wrote.Load()+total > int64(len(mf.spill)) {
		c.lockBeginNs.Store(0)
		c.lock.Unlock()
		c.st.stats.spillFull.Add(1)
		return appendOutcome{status: OSPageCacheBusy, remark: c.spillFullRemark(mf)}
	}
	if mf == nil || mf.size-mf.wrote.Load() < total+blankSize {
		if c.pool != nil && c.pool.available() == 0 {
			c.lockBeginNs.Store(0)
			c.lock.Unlock()
			c.st.stats.poolExhausted.Add(1)
			return appendOutcome{status: OSPageCacheBusy, remark: c.pool.exhaustedRemark()}
		}
		if mf != nil && mf.spill != nil {
			// The spill covers one file; the next roll waits for it.
			c.lockBeginNs.Store(0)
			c.lock.Unlock()
			c.st.stats.spillFull.Add(1)
			return appendOutcome{status: OSPageCacheBusy, remark: c.spillFullRemark(mf)}
		}
		next, blank, blankPos, err := c.rollLocked()
		if blank != nil {
			post = append(post, blank)
			postBufs = append(postBufs, blankRecord(blank.mf.size-blankPos))
			postPos = append(postPos, blankPos)
		}
		if err != nil {
			c.lockBeginNs.Store(0)
			c.lock.Unlock()
			c.finishPost(post, postBufs, postPos)
			if err == errNoFileYet {
				c.st.stats.noSpaceRefusals.Add(1)
				return appendOutcome{status: ServiceNotAvailable, remark: c.noFileRemark(nextOffsetOf(mf))}
			}
			return appendOutcome{status: CreateMappedFileFailed, remark: err.Error()}
		}
		mf = next
	}
	pos := mf.wrote.Load()
	phy := mf.from + pos
	var qo int64
	var next *int64 // the queue's next offset: one look-up for reading and advancing it
	if assign {
		if next = c.queueOffsets[key]; next == nil {
			next = new(int64)
			c.queueOffsets[key] = next
		}
		qo = *next
	}
	var offsets []int64
	if wantOffsets {
		offsets = make([]int64, len(sizes))
	}
	off := 0
	for i, sz := range sizes {
		q := int64(0)
		if assign {
			q = qo + int64(i)
		}
		message.PatchRecord(buf[off:], q, phy+int64(off), ts)
		if offsets != nil {
			offsets[i] = phy + int64(off)
		}
		off += sz
	}
	if assign {
		*next = qo + int64(len(sizes))
	}
	mf.wrote.Store(pos + total)
	if mf.spill != nil {
		copy(mf.spill[pos:], buf)
		c.publishLocked(mf, pos+total)
		c.st.stats.spillWrites.Add(int64(len(sizes)))
	} else if mf.wbuf != nil && total <= inlineCopyMax {
		copy(mf.wbuf[pos:], buf)
		c.publishLocked(mf, pos+total)
	} else if mf.data != nil && total <= inlineCopyMax {
		copy(mf.data[pos:], buf)
		c.publishLocked(mf, pos+total)
	} else if staged, leading = c.stageIfRoom(mf, pos, buf); staged == nil {
		w := c.reserve(mf, pos+total)
		post = append(post, w)
		postBufs = append(postBufs, buf)
		postPos = append(postPos, pos)
	}
	if (pos+total)>>prefaultShift != pos>>prefaultShift {
		c.alloc.kickPrefault()
	}
	if !c.halfKicked && pos+total >= mf.size/2 {
		c.halfKicked = true
		c.alloc.kick()
	}
	c.lockBeginNs.Store(0)
	c.lock.Unlock()
	unlocked := c.monoNs()
	c.st.stats.lockHold.Record(time.Duration(unlocked - begin))

	c.finishPost(post, postBufs, postPos)
	wrote := len(post) > 0
	if leading {
		c.leadGroups()
		wrote = true
	} else if staged != nil {
		wrote = c.writeGroups()
	}
	if c.writeNoSpace.Load() {
		// A write at or before this put's range found no space: its
		// bytes may not be in the file, so it is not acknowledged.
		c.st.stats.noSpaceRefusals.Add(1)
		remark := "[NO_SPACE] a CommitLog write found no space; disk " + c.st.diskUsageLine()
		if p := c.st.noSpace.remark.Load(); p != nil {
			remark = *p
		}
		return appendOutcome{status: ServiceNotAvailable, remark: remark}
	}
	if c.writeFailed.Load() {
		// This put's bytes, or bytes before them, never reached the file:
		// they will not become readable and recovery would cut them off,
		// so the put is not acknowledged (design rule 8).
		return appendOutcome{status: ServiceNotAvailable, remark: c.st.readOnlyRemark()}
	}
	c.kickDispatch()
	if !assign {
		qo = 0
	}
	out := appendOutcome{status: PutOK, wrote: phy, end: phy + total, queueOf: qo, storeTs: ts, offsets: offsets}
	if !wrote {
		// Nothing was written since the unlock: the put ends there, and
		// its latency needs no other clock read.
		out.endNs = unlocked
	}
	if mf.spill != nil {
		out.spill = mf
	}
	// Without the transient pool the records are readable once every
	// range before them is in the file; a put that finished before an
	// earlier one is answered when that one is done.
	out.behind = c.committer == nil && c.visible.Load() < phy+total
	return out
}

func (c *CommitLog) spillFullRemark(mf *MappedFile) string {
	r := fmt.Sprintf("[PC_SYNCHRONIZED] no CommitLog file ready at offset %d and the in-memory spill is full (%d of %d bytes, writeSpillSize)",
		mf.from, mf.wrote.Load(), len(mf.spill))
	if err := c.alloc.lastError(); err != nil {
		r += "; file allocation failed: " + err.Error()
	}
	return r
}

// adoptSpill replaces the spill stand-in sp with the real file: the bulk is
// copied outside the put lock, the last delta (and the switch) under it.
func (c *CommitLog) adoptSpill(sp, real *MappedFile) error {
	var copied int64
	for {
		upto := sp.committed.Load()
		if upto-copied <= 256<<10 {
			break
		}
		if err := real.writeAt(sp.spill[copied:upto], copied); err != nil {
			return err
		}
		copied = upto
	}
	c.lock.Lock()
	upto := sp.wrote.Load()
	err := real.writeAt(sp.spill[copied:upto], copied)
	if err == nil {
		real.wrote.Store(upto)
		c.pubMu.Lock()
		real.filled.Store(sp.filled.Load())
		if c.committer == nil {
			real.committed.Store(sp.committed.Load())
		}
		for _, w := range c.pending {
			if w.mf == sp {
				w.mf = real
			}
		}
		c.pubMu.Unlock()
		c.mfq.replace(sp, real)
		if c.cur == sp {
			c.cur = real
		}
		c.spilling.Store(nil)
	}
	c.lock.Unlock()
	if err != nil {
		return err
	}
	sp.destroy(false, 0, 0)
	c.flusher.kick()
	// The records are in the file (page cache) now: a process crash keeps
	// them, so the held answers go out.
	for _, w := range c.takeSpillWaiters(sp) {
		w.done(w.res)
	}
	return nil
}

// blankRecord is the end-of-file marker for n bytes left.
func blankRecord(n int64) []byte {
	b := make([]byte, blankSize)
	message.PutBlank(b, int(n))
	return b
}

// finishPost copies reserved ranges after the lock is released.
//
// A write that finds no space stays pending (nothing after it becomes
// readable) and is retried by the allocator goroutine with a back-off;
// puts are refused until every such write went through. Any other write
// error makes the store read-only.
func (c *CommitLog) finishPost(ws []*pendingWrite, bufs [][]byte, pos []int64) {
	for i, w := range ws {
		err := w.mf.writeAt(bufs[i], pos[i])
		if w.mf.data == nil && w.mf.spill == nil && w.mf.wbuf == nil {
			c.fileWrites.Add(1)
		}
		if err != nil && isNoSpace(err) {
			c.retryWriteLater(w, bufs[i], pos[i], fmt.Errorf("write %s at %d: %w", w.mf.path, pos[i], err))
			continue
		}
		if err != nil {
			c.writeFailed.Store(true)
			c.st.setReadOnly(fmt.Errorf("write %s at %d: %w", w.mf.path, pos[i], err))
		}
		c.complete(w, err)
		if err != nil {
			c.failVisibleWaiters(c.st.readOnlyRemark())
		}
	}
}

// rollLocked closes the current file with a blank record and moves to the
// next one. The blank is returned as a pending write for the caller to
// finish after unlocking.
func (c *CommitLog) rollLocked() (*MappedFile, *pendingWrite, int64, error) {
	var blank *pendingWrite
	var blankPos int64
	nextFrom := int64(0)
	if old := c.cur; old != nil {
		pos := old.wrote.Load()
		nextFrom = old.from + old.size
		if pos < old.size {
			old.wrote.Store(old.size)
			if old.wbuf != nil {
				copy(old.wbuf[pos:], blankRecord(old.size-pos))
				c.publishLocked(old, old.size)
			} else if old.data != nil {
				copy(old.data[pos:], blankRecord(old.size-pos))
				c.publishLocked(old, old.size)
			} else {
				blank, blankPos = c.reserve(old, old.size), pos
			}
		}
	} else if last := c.mfq.last(); last != nil {
		nextFrom = last.from + last.size
	}
	if fp := c.st.Failpoint; fp != nil {
		fp("roll")
	}
	next := c.alloc.take(nextFrom)
	if next == nil && c.alloc.failing.Load() {
		// The last creation failed (a full disk): refuse rather than keep
		// acknowledged records in memory only. The allocator retries.
		return nil, blank, blankPos, errNoFileYet
	}
	if next == nil {
		// No file is ready. The writer does not wait for the allocator:
		// it continues into a bounded in-memory spill that the allocator
		// copies into the file once it exists (counted).
		var err error
		if next, err = c.alloc.spillOrWait(nextFrom); err != nil {
			return nil, blank, blankPos, err
		}
	}
	if c.pool != nil && next.spill == nil {
		next.wbuf = c.pool.get() // checked available before the roll
	}
	if err := c.mfq.appendFile(next); err != nil {
		next.destroy(true, 0, 0)
		return nil, blank, blankPos, err
	}
	c.cur = next
	c.halfKicked = false
	c.alloc.kick()
	return next, blank, blankPos, nil
}

func (c *CommitLog) publishLocked(mf *MappedFile, end int64) {
	c.pubMu.Lock()
	if len(c.pending) == 0 {
		c.advance(mf, end)
	} else {
		w := c.newWriteLocked()
		*w = pendingWrite{mf: mf, end: end, done: true}
		c.pending = append(c.pending, w)
	}
	c.pubMu.Unlock()
}

func (c *CommitLog) reserve(mf *MappedFile, end int64) *pendingWrite {
	c.pubMu.Lock()
	w := c.newWriteLocked()
	*w = pendingWrite{mf: mf, end: end}
	c.pending = append(c.pending, w)
	c.pubMu.Unlock()
	return w
}

// freeWritesCap bounds the ranges kept for reuse.
const freeWritesCap = 256

// newWriteLocked returns a zero pendingWrite, reused when one is free.
// pubMu is held.
func (c *CommitLog) newWriteLocked() *pendingWrite {
	if n := len(c.freeWrites); n > 0 {
		w := c.freeWrites[n-1]
		c.freeWrites[n-1] = nil
		c.freeWrites = c.freeWrites[:n-1]
		return w
	}
	return &pendingWrite{}
}

// freeWriteLocked keeps w, a range just taken off the pending list, for
// reuse: once it is published nothing refers to it (its put's goroutine
// is done with it once it marked it done). pubMu is held.
func (c *CommitLog) freeWriteLocked(w *pendingWrite) {
	if len(c.freeWrites) < freeWritesCap {
		*w = pendingWrite{}
		c.freeWrites = append(c.freeWrites, w)
	}
}

func (c *CommitLog) complete(w *pendingWrite, err error) {
	run := [1]*pendingWrite{w}
	c.completeRun(run[:], err)
}

func (c *CommitLog) advance(mf *MappedFile, end int64) {
	mf.filled.Store(end)
	if c.committer != nil {
		// Transient pool: readable once the committer wrote it (in file
		// order, so a later file never becomes visible first).
		c.committer.kick()
		return
	}
	mf.committed.Store(end)
	c.visible.Store(mf.from + end)
}

// dispatchEnd is where dispatch and indexing stop: the readable end, or
// the confirm offset below it in controller mode.
func (c *CommitLog) dispatchEnd() int64 {
	v := c.visible.Load()
	if c.gated.Load() {
		return min(v, c.confirm.Load())
	}
	return v
}

// kickDispatch wakes the dispatcher if it is parked; a running one
// re-checks the readable end before it parks, so it needs no wake-up.
// Callers publish their records (visible) before calling it.
func (c *CommitLog) kickDispatch() {
	if !c.dispatchIdle.Load() || !c.dispatchIdle.CompareAndSwap(true, false) {
		return
	}
	select {
	case c.kickCh <- struct{}{}:
	default:
	}
}

// read copies size bytes at commit-log offset phy into dst (grown as
// needed) and returns the slice.
func (c *CommitLog) read(dst []byte, phy int64, size int) ([]byte, error) {
	return c.readMaybeWait(dst, phy, size, false)
}

// readMaybeWait is read; with noWait it returns errWouldWait instead of
// waiting for the device.
func (c *CommitLog) readMaybeWait(dst []byte, phy int64, size int, noWait bool) ([]byte, error) {
	if phy < 0 || phy+int64(size) > c.visible.Load() {
		return dst, fmt.Errorf("%w: [%d, %d) beyond the readable end %d", ErrOffsetNotFound, phy, phy+int64(size), c.visible.Load())
	}
	mf := c.mfq.find(phy)
	if mf == nil {
		return dst, fmt.Errorf("%w: %d is below the first file (min %d)", ErrOffsetNotFound, phy, c.minOffset())
	}
	defer mf.release()
	pos := phy - mf.from
	if pos+int64(size) > mf.size {
		return dst, fmt.Errorf("%w: [%d, %d) crosses the end of %s", ErrOffsetNotFound, phy, phy+int64(size), mf.path)
	}
	n := len(dst)
	dst = growLen(dst, size)
	var err error
	switch {
	case noWait && mf.data != nil:
		// A copy from the mapping could fault and wait: only pages found
		// in memory are copied.
		if mf.resident(mf.data, pos, int64(size), c.monoNs()) {
			err = mf.copyMapped(dst[n:], pos)
		} else {
			err = errWouldWait
		}
	case mf.data != nil && c.visible.Load()-phy <= hotWindow:
		err = mf.copyMapped(dst[n:], pos)
	case noWait:
		err = mf.readAtMaybeWait(dst[n:], pos, true)
	default:
		err = mf.readAt(dst[n:], pos)
	}
	if err != nil {
		return dst[:n], err
	}
	return dst, nil
}

// recordAt reads the whole record at phy.
func (c *CommitLog) recordAt(phy int64) ([]byte, error) {
	head, err := c.read(nil, phy, 8)
	if err != nil {
		return nil, err
	}
	sz, magic := message.PeekRecord(head)
	size := int(sz)
	if magic != message.MagicCodeV1 && magic != message.MagicCodeV2 {
		return nil, fmt.Errorf("%w: no record at %d (magic %#08x)", ErrOffsetNotFound, phy, uint32(magic))
	}
	if size < message.MinRecordSize || int64(size) > c.cfg.MappedFileSizeCommitLog {
		return nil, fmt.Errorf("%w: record at %d has size %d", ErrCorrupt, phy, size)
	}
	rec, err := c.read(nil, phy, size)
	if err != nil {
		return nil, err
	}
	var v message.RecordView
	if err := checkRecordAt(&v, rec, phy, true); err != nil {
		return nil, err
	}
	return rec, nil
}

func growLen(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b[:len(b)+n]
	}
	nb := make([]byte, len(b)+n, 2*len(b)+n)
	copy(nb, b)
	return nb
}

// getBuf and putBuf pool encode buffers.
func (c *CommitLog) getBuf() *[]byte { return c.bufPool.Get().(*[]byte) }
func (c *CommitLog) putBuf(b *[]byte) {
	if cap(*b) > 1<<20 {
		return
	}
	*b = (*b)[:0]
	c.bufPool.Put(b)
}

// setQueueOffset sets the next logical offset of a queue (recovery).
func (c *CommitLog) setQueueOffset(k queueKey, next int64) {
	c.lock.Lock()
	c.setQueueOffsetLocked(k, next)
	c.lock.Unlock()
}

// setQueueOffsetLocked is setQueueOffset under the put lock (or before
// the store serves puts).
func (c *CommitLog) setQueueOffsetLocked(k queueKey, next int64) {
	if p := c.queueOffsets[k]; p != nil {
		*p = next
		return
	}
	c.queueOffsets[k] = &next
}

func (c *CommitLog) removeQueueOffsets(topic string) {
	c.lock.Lock()
	for k := range c.queueOffsets {
		if k.topic == topic {
			delete(c.queueOffsets, k)
		}
	}
	c.lock.Unlock()
}
