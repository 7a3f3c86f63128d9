package store

import (
	"errors"
	"fmt"
)

// Answers that wait: puts held until their records are safe from a
// process crash (in the file, not only in the spill; no unfinished range
// before them), and CommitLog writes retried after ENOSPC.

// errNoFileYet is rollLocked's answer when no file is ready and the last
// creation failed: the put is refused rather than kept in memory only.
var errNoFileYet = errors.New("store: no CommitLog file")

func nextOffsetOf(mf *MappedFile) int64 {
	if mf == nil {
		return 0
	}
	return mf.from + mf.size
}

// noFileRemark is the refusal while the file at from cannot be created:
// SERVICE_NOT_AVAILABLE, which clients retry on another broker.
func (c *CommitLog) noFileRemark(from int64) string {
	r := fmt.Sprintf("[NO_SPACE] no CommitLog file at offset %d: allocation failed", from)
	if err := c.alloc.lastError(); err != nil {
		r += ": " + err.Error()
	}
	return r + "; disk " + c.st.diskUsageLine() + "; puts are refused until space returns (retried automatically)"
}

// holdForSpill keeps a put's answer until the spill sp has its file; it
// answers at once when that already happened, and refuses the put when
// the file could not be created for want of space (the allocator refuses
// the puts already held then, under the same lock).
func (c *CommitLog) holdForSpill(sp *MappedFile, res PutResult, done func(PutResult)) {
	c.spillMu.Lock()
	if c.spilling.Load() == sp && c.alloc.failing.Load() && isNoSpace(c.alloc.lastError()) {
		c.spillMu.Unlock()
		c.refuseSpilled(sp, done)
		return
	}
	if c.spilling.Load() == sp {
		c.spillWaiters = append(c.spillWaiters, spillWaiter{sp, res, done})
		c.spillMu.Unlock()
		c.st.stats.spillHeld.Add(1)
		return
	}
	c.spillMu.Unlock()
	done(res)
}

// takeSpillWaiters removes and returns the puts held for sp.
func (c *CommitLog) takeSpillWaiters(sp *MappedFile) []spillWaiter {
	c.spillMu.Lock()
	defer c.spillMu.Unlock()
	var out []spillWaiter
	keep := c.spillWaiters[:0]
	for _, w := range c.spillWaiters {
		if w.sp == sp {
			out = append(out, w)
		} else {
			keep = append(keep, w)
		}
	}
	clear(c.spillWaiters[len(keep):])
	c.spillWaiters = keep
	return out
}

// failSpillWaiters answers the puts held for sp with SERVICE_NOT_AVAILABLE
// (shutdown with the spill still in memory, or its file not creatable for
// want of space).
func (c *CommitLog) failSpillWaiters(sp *MappedFile, remark string) {
	for _, w := range c.takeSpillWaiters(sp) {
		c.st.stats.putFailures.Add(1)
		w.done(PutResult{Status: ServiceNotAvailable, Remark: remark})
	}
}

// spilledNoSpaceRemark is the refusal of a put whose records went into the
// spill sp before its file's creation found no space.
func (c *CommitLog) spilledNoSpaceRemark(sp *MappedFile) string {
	return c.noFileRemark(sp.from) + "; records already taken into memory are written then, unacknowledged"
}

// refuseSpilled refuses a put held for sp while sp's file cannot be
// created for want of space. Its records stay in the spill and are written
// when space returns, as a refused put whose write found no space is
// retried: a client that sends again may store the message twice, never
// lose one it was told was stored.
func (c *CommitLog) refuseSpilled(sp *MappedFile, done func(PutResult)) {
	c.st.stats.putFailures.Add(1)
	c.st.stats.noSpaceRefusals.Add(1)
	done(PutResult{Status: ServiceNotAvailable, Remark: c.spilledNoSpaceRemark(sp)})
}

// failedWrite is a reserved range whose write found no space.
type failedWrite struct {
	w   *pendingWrite
	buf []byte
	pos int64
}

func (c *CommitLog) retryWriteLater(w *pendingWrite, buf []byte, pos int64, err error) {
	c.retryMu.Lock()
	c.retries = append(c.retries, failedWrite{w, append([]byte(nil), buf...), pos})
	c.writeNoSpace.Store(true)
	c.retryMu.Unlock()
	c.st.noSpace.set(c.st, condCommitLogWrite, err)
	c.alloc.kick()
}

// retryWrites writes again the ranges that found no space, in order; it
// reports whether any is still waiting.
func (c *CommitLog) retryWrites() bool {
	type result struct {
		w   *pendingWrite
		err error
	}
	var done []result // completed after unlocking: answers may put again
	c.retryMu.Lock()
	waiting := false
	for len(c.retries) > 0 {
		r := c.retries[0]
		err := r.w.mf.writeAt(r.buf, r.pos)
		if err != nil && isNoSpace(err) {
			waiting = true
			break
		}
		if err != nil {
			c.writeFailed.Store(true)
			c.st.setReadOnly(fmt.Errorf("write %s at %d: %w", r.w.mf.path, r.pos, err))
		}
		done = append(done, result{r.w, err})
		c.retries[0] = failedWrite{}
		c.retries = c.retries[1:]
	}
	if !waiting {
		c.writeNoSpace.Store(false)
	}
	c.retryMu.Unlock()
	failed := false
	for _, d := range done {
		c.complete(d.w, d.err)
		failed = failed || d.err != nil
	}
	if failed {
		c.failVisibleWaiters(c.st.readOnlyRemark())
	}
	if !waiting {
		c.st.noSpace.clear(c.st, condCommitLogWrite)
		c.kickDispatch()
	}
	return waiting
}

// holdForVisible answers res once the readable end reaches end (at once
// when it already has).
func (c *CommitLog) holdForVisible(end int64, res PutResult, done func(PutResult)) {
	c.pubMu.Lock()
	if c.visible.Load() >= end {
		c.pubMu.Unlock()
		done(res)
		return
	}
	if c.writeFailed.Load() || c.writeNoSpace.Load() {
		// A write before end failed after this put checked: the records
		// may never become readable, so the put is not acknowledged (a
		// failing writer answers only the puts already held).
		c.pubMu.Unlock()
		c.st.stats.putFailures.Add(1)
		remark := c.st.readOnlyRemark()
		if c.writeNoSpace.Load() {
			c.st.stats.noSpaceRefusals.Add(1)
			remark = "[NO_SPACE] a CommitLog write found no space; disk " + c.st.diskUsageLine()
			if p := c.st.noSpace.remark.Load(); p != nil {
				remark = *p
			}
		}
		done(PutResult{Status: ServiceNotAvailable, Remark: remark})
		return
	}
	c.visWaiters = append(c.visWaiters, visWaiter{end, res, done})
	c.pubMu.Unlock()
}

// takeVisibleLocked removes the waiters the readable end has reached and
// returns them in a list the caller gives back with answerVisible. When
// the readable end has reached every waiter (the usual case: a pass's
// puts wait for the pass's write), the lists are swapped and nothing is
// copied.
func (c *CommitLog) takeVisibleLocked() []visWaiter {
	if len(c.visWaiters) == 0 {
		return nil
	}
	vis := c.visible.Load()
	ready := 0
	for i := range c.visWaiters {
		if c.visWaiters[i].end <= vis {
			ready++
		}
	}
	if ready == 0 {
		return nil
	}
	spare := c.visSpare[:0]
	c.visSpare = nil
	if ready == len(c.visWaiters) {
		out := c.visWaiters
		c.visWaiters = spare
		return out
	}
	out := spare
	keep := c.visWaiters[:0]
	for _, w := range c.visWaiters {
		if w.end <= vis {
			out = append(out, w)
		} else {
			keep = append(keep, w)
		}
	}
	clear(c.visWaiters[len(keep):])
	c.visWaiters = keep
	return out
}

// maxSpareWaiters bounds the list kept for reuse: a burst of held puts
// does not keep its list's memory for good.
const maxSpareWaiters = 4096

// answerVisible answers the waiters takeVisibleLocked returned, outside
// pubMu, and keeps their list for the next time.
func (c *CommitLog) answerVisible(ready []visWaiter) {
	for _, v := range ready {
		v.done(v.res)
	}
	if cap(ready) == 0 || cap(ready) > maxSpareWaiters {
		return
	}
	clear(ready) // the answered puts' results and callbacks are not kept
	c.pubMu.Lock()
	if c.visSpare == nil {
		c.visSpare = ready[:0]
	}
	c.pubMu.Unlock()
}

// failVisibleWaiters answers every held put SERVICE_NOT_AVAILABLE (an
// earlier write failed for good, or shutdown).
func (c *CommitLog) failVisibleWaiters(remark string) {
	c.pubMu.Lock()
	ws := c.visWaiters
	c.visWaiters = nil
	c.pubMu.Unlock()
	for _, w := range ws {
		c.st.stats.putFailures.Add(1)
		w.done(PutResult{Status: ServiceNotAvailable, Remark: remark})
	}
}
