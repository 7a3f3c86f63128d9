package store

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// prefaultShift: the writer asks for pre-faulting each time it crosses a
// 1 MiB boundary; prefaultAhead is how far ahead of the write cursor pages
// are brought into memory, prefaultChunk how much at a time, and
// prefaultGap how far ahead of the cursor the pre-faulting starts when
// the writer has caught up with it.
const (
	prefaultShift = 20
	prefaultAhead = 8 << 20
	prefaultChunk = 256 << 10
	prefaultGap   = 1 << 20
)

// allocator creates, allocates and pre-faults CommitLog files ahead of the
// writer (design rule 2) and keeps pages ahead of the write cursor in
// memory (mapped writable, or in the page cache for pwrite), so the put lock
// never covers a file creation or a first touch.
type allocator struct {
	c *CommitLog

	createMu sync.Mutex // held while a file is being created or the spill adopted
	mu       sync.Mutex
	ready    []*MappedFile
	nextFrom int64 // offset of the next file to create
	lastErr  error
	// failing is set while the last creation (or spill adoption) failed;
	// a roll then refuses instead of spilling, and the allocator retries
	// with a back-off from retryMin up to retryMax.
	failing            atomic.Bool
	retryMin, retryMax time.Duration

	kickCh     chan struct{}
	prefaultCh chan struct{}
	stopCh     chan struct{}
	wg         sync.WaitGroup
	warmedTo   int64 // absolute offset pre-faulted up to (allocator goroutine only)
}

func newAllocator(c *CommitLog) *allocator {
	return &allocator{c: c, kickCh: make(chan struct{}, 1), prefaultCh: make(chan struct{}, 1), stopCh: make(chan struct{}),
		retryMin: 100 * time.Millisecond, retryMax: 5 * time.Second}
}

func (a *allocator) kick() {
	select {
	case a.kickCh <- struct{}{}:
	default:
	}
}

func (a *allocator) kickPrefault() {
	select {
	case a.prefaultCh <- struct{}{}:
	default:
	}
}

// setNext sets the offset of the next file to create, dropping ready files
// that no longer fit (after a truncation).
func (a *allocator) setNext(from int64) {
	a.mu.Lock()
	drop := a.ready
	a.ready = nil
	a.nextFrom = from
	a.mu.Unlock()
	for _, mf := range drop {
		mf.destroy(true, 0, 0)
	}
}

// take returns the ready file starting at from, or nil. It never blocks on
// creation.
func (a *allocator) take(from int64) *MappedFile {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.ready) == 0 {
		return nil
	}
	if a.ready[0].from != from {
		return nil
	}
	mf := a.ready[0]
	a.ready = append(a.ready[:0:0], a.ready[1:]...)
	a.nextFrom = from + mf.size
	return mf
}

func (a *allocator) lastError() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastErr
}

func (a *allocator) readyCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.ready)
}

func (a *allocator) start() {
	a.refillSpill()
	a.wg.Add(1)
	go a.run()
}

// refillSpill allocates the next spill buffer (never reused: a reader may
// still hold the previous spill), off the put path.
func (a *allocator) refillSpill() {
	n := min(int64(a.c.cfg.WriteSpillSize), a.c.cfg.MappedFileSizeCommitLog)
	if n > 0 && a.c.spareSpill.Load() == nil {
		b := make([]byte, n)
		a.c.spareSpill.Store(&b)
	}
}

func (a *allocator) stop() {
	close(a.stopCh)
	a.wg.Wait()
	if sp := a.c.spilling.Load(); sp != nil {
		// Give the spilled records their file before shutting down.
		a.stopCh = make(chan struct{})
		a.fill()
		if a.c.spilling.Load() != nil {
			// None of them was acknowledged: their answers were held
			// until the file existed (see the package doc).
			a.c.st.logger.Error("store: shutting down with records only in the in-memory spill; they were not acknowledged and are dropped",
				"offset", sp.from, "bytes", sp.wrote.Load(), "err", a.lastError())
			a.c.failSpillWaiters(sp, "store shut down before a CommitLog file for the message could be created: "+a.c.noFileRemark(sp.from))
		}
	}
	a.mu.Lock()
	ready := a.ready
	a.ready = nil
	a.mu.Unlock()
	// Ready files hold no data; remove them so a restart does not have to.
	for _, mf := range ready {
		mf.destroy(true, 0, 0)
	}
}

func (a *allocator) run() {
	defer a.wg.Done()
	var retry *time.Timer
	var retryC <-chan time.Time
	backoff := a.retryMin
	for {
		select {
		case <-a.stopCh:
			if retry != nil {
				retry.Stop()
			}
			return
		case <-a.kickCh:
		case <-retryC:
			a.c.st.stats.allocRetries.Add(1)
		case <-a.prefaultCh:
			a.prefault()
			continue
		}
		// Every roll and allocation attempt also looks at the disk (the
		// retention timer alone let a fast producer fill the disk between
		// two looks), before deciding how many files to keep ahead.
		a.c.st.checkDiskSpace()
		a.fill()
		if a.c.spilling.Load() == nil {
			a.refillSpill()
		}
		writesWait := a.c.writeNoSpace.Load() && a.c.retryWrites()
		if a.failing.Load() || writesWait {
			// Retry by itself: a full disk is a condition that passes.
			if retry == nil {
				retry = time.NewTimer(backoff)
			} else {
				retry.Reset(backoff)
			}
			retryC = retry.C
			backoff = min(2*backoff, a.retryMax)
		} else {
			retryC = nil
			backoff = a.retryMin
		}
	}
}

// failed records a failed creation or adoption.
func (a *allocator) failed(from int64, err error) {
	a.c.st.stats.allocFailures.Add(1)
	a.mu.Lock()
	a.lastErr = err
	a.mu.Unlock()
	if !a.failing.Swap(true) || !isNoSpace(err) {
		a.c.st.logger.Error("store: allocating a CommitLog file ahead failed; retrying with a back-off",
			"offset", from, "err", err, "disk", a.c.st.diskUsageLine())
	}
	if sp := a.c.spilling.Load(); sp != nil && isNoSpace(err) {
		// The spill's file cannot be had while the disk is full: its
		// held puts are refused now rather than answered whenever space
		// returns (their clients would see only a timeout).
		for _, w := range a.c.takeSpillWaiters(sp) {
			a.c.refuseSpilled(sp, w.done)
		}
	}
}

// succeeded clears the failure state after a file was created.
func (a *allocator) succeeded() {
	a.mu.Lock()
	a.lastErr = nil
	a.mu.Unlock()
	if a.failing.Swap(false) {
		a.c.st.logger.Info("store: CommitLog file allocation works again", "disk", a.c.st.diskUsageLine())
	}
}

// pushReady puts back a created file whose adoption of the spill failed,
// so the next attempt adopts it again.
func (a *allocator) pushReady(mf *MappedFile) {
	a.mu.Lock()
	a.ready = append([]*MappedFile{mf}, a.ready...)
	a.nextFrom = mf.from
	a.mu.Unlock()
}

// fill creates files until PreallocateFiles are ready.
func (a *allocator) fill() {
	want := max(a.c.cfg.PreallocateFiles, 1)
	size := a.c.cfg.MappedFileSizeCommitLog
	for {
		select {
		case <-a.stopCh:
			return
		default:
		}
		if a.c.st.readOnly.Load() != nil {
			return // nothing more is written until restart
		}
		// A file made ready just after the writer went into the spill
		// (the writer looked before it was there): adopt it. Under
		// createMu, as every adoption: a slave's append that finds the
		// spill full (adoptNow) must wait for this one instead of finding
		// the spill still in use, no file ready, and creating the file
		// that is being adopted a second time.
		if sp := a.c.spilling.Load(); sp != nil {
			a.createMu.Lock()
			var mf *MappedFile
			if a.c.spilling.Load() == sp {
				mf = a.take(sp.from)
			}
			if mf != nil {
				err := a.adopt(sp, mf)
				a.createMu.Unlock()
				if err != nil {
					return
				}
				continue
			}
			a.createMu.Unlock()
		}
		a.createMu.Lock()
		a.mu.Lock()
		if len(a.ready) >= want || (len(a.ready) > 0 && a.c.st.spaceShort()) {
			// Enough ahead; when space is short, one file ahead is
			// enough (a reserved file is space the data cannot use).
			a.mu.Unlock()
			a.createMu.Unlock()
			return
		}
		from := a.nextFrom + int64(len(a.ready))*size
		a.mu.Unlock()

		start := a.c.monoNs()
		mf, err := createMappedFile(a.c.fs, a.c.mfq.dir, from, size, a.c.cfg.FileAllocation, a.c.mmapped)
		if err != nil {
			a.createMu.Unlock()
			a.failed(from, err)
			return
		}
		mf.prefault(0, min(prefaultAhead, size))
		a.c.st.stats.fileCreate.Record(time.Duration(a.c.monoNs() - start))
		a.c.st.stats.filesCreated.Add(1)
		if sp := a.c.spilling.Load(); sp != nil && sp.from == from {
			if err := a.adopt(sp, mf); err != nil {
				a.createMu.Unlock()
				if !isNoSpace(err) {
					mf.destroy(true, 0, 0)
				}
				return
			}
			a.mu.Lock()
			a.nextFrom = from + size
			a.mu.Unlock()
			a.createMu.Unlock()
			continue
		}
		a.succeeded()
		a.mu.Lock()
		if from == a.nextFrom+int64(len(a.ready))*size {
			a.ready = append(a.ready, mf)
			mf = nil
		}
		a.mu.Unlock()
		if mf != nil {
			mf.destroy(true, 0, 0)
		}
		a.createMu.Unlock()
	}
}

// adopt copies the spill sp into mf, the file created for it. When that
// finds no space, mf is kept for the next attempt (the allocator retries
// with a back-off); any other error makes the store read-only.
func (a *allocator) adopt(sp, mf *MappedFile) error {
	if err := a.c.adoptSpill(sp, mf); err != nil {
		err = fmt.Errorf("copying the write spill into %s: %w", mf.path, err)
		if isNoSpace(err) {
			a.pushReady(mf)
			a.failed(sp.from, err)
			return err
		}
		a.c.st.setReadOnly(err)
		return err
	}
	a.succeeded()
	return nil
}

// spillOrWait is a roll's next file at from when none was ready: a new
// write spill that the allocator copies into the file once it exists, or,
// with writeSpillSize=0 or before the last spill's buffer is replaced, the
// file itself after waiting for its creation (counted). The caller holds
// the put lock and no spill is in use.
func (a *allocator) spillOrWait(from int64) (*MappedFile, error) {
	if buf := a.c.spareSpill.Swap(nil); buf != nil {
		a.c.st.stats.spills.Add(1)
		sp := newSpillFile(a.c.mfq.dir, from, a.c.cfg.MappedFileSizeCommitLog, *buf)
		a.c.spilling.Store(sp)
		return sp, nil
	}
	a.c.st.stats.putWaitedOnCreate.Add(1)
	return a.takeOrCreate(from)
}

// adoptNow gives the spill sp its file at once, waiting for a creation in
// progress or creating the file itself: a slave's append that does not
// fit the spill (a slave cannot answer busy as a put does). The caller
// holds no put lock and counts the wait.
func (a *allocator) adoptNow(sp *MappedFile) error {
	a.createMu.Lock()
	defer a.createMu.Unlock()
	if a.c.spilling.Load() != sp {
		return nil // adopted meanwhile
	}
	mf, err := a.takeOrCreateLocked(sp.from)
	if err != nil {
		a.failed(sp.from, err)
		return err
	}
	if err := a.adopt(sp, mf); err != nil {
		return err
	}
	a.kick() // a new spill buffer, files ahead
	return nil
}

// takeOrCreate is the writer's fallback when no file was ready at a roll:
// it waits for a creation in progress or creates the file itself. Both
// block the put lock, which is why they are counted.
func (a *allocator) takeOrCreate(from int64) (*MappedFile, error) {
	a.createMu.Lock()
	defer a.createMu.Unlock()
	return a.takeOrCreateLocked(from)
}

// takeOrCreateLocked is takeOrCreate with createMu held.
func (a *allocator) takeOrCreateLocked(from int64) (*MappedFile, error) {
	if mf := a.take(from); mf != nil {
		return mf, nil
	}
	mf, err := createMappedFile(a.c.fs, a.c.mfq.dir, from, a.c.cfg.MappedFileSizeCommitLog, a.c.cfg.FileAllocation, a.c.mmapped)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	drop := a.ready
	a.ready = nil
	a.nextFrom = from + mf.size
	a.mu.Unlock()
	for _, d := range drop {
		d.destroy(true, 0, 0)
	}
	return mf, nil
}

// prefault brings the pages ahead of the write cursor into memory, a
// chunk at a time. The kernel holds a chunk's pages locked while it reads
// them in (for a pwrite file, zeroing each new page, which takes from
// under a microsecond to tens of them on a virtual machine whose memory
// is cold), and a put writing into one of them waits for it: so a chunk is
// small, and when the writer has caught up with the pre-faulting (it can
// outrun it where first touches are slow), the next chunk starts
// prefaultGap ahead of the cursor, not at it, leaving the pages between
// to the writer's own first touch. A pending kick (a file to create) is
// served between chunks.
func (a *allocator) prefault() {
	mf := a.c.mfq.last()
	if mf == nil || !mf.acquire() {
		return
	}
	defer mf.release()
	for {
		from, end := prefaultNext(a.warmedTo-mf.from, mf.wrote.Load(), mf.size)
		if from >= end {
			return
		}
		mf.prefault(from, end)
		a.warmedTo = mf.from + end
		select {
		case <-a.stopCh:
			return
		default:
		}
		if len(a.kickCh) > 0 {
			a.kickPrefault() // the rest after the kick
			return
		}
	}
}

// prefaultNext is the next chunk [from, end) of a file of size to
// pre-fault, with the file warmed up to warmed and written up to pos
// (offsets in the file): from where the last chunk ended, or prefaultGap
// ahead of the cursor once the writer has come that close, up to
// prefaultAhead ahead of it; from >= end when there is nothing to do.
func prefaultNext(warmed, pos, size int64) (from, end int64) {
	from = max(warmed, pos+prefaultGap)
	end = min(from+prefaultChunk, pos+prefaultAhead, size)
	return from, end
}
