package store

import (
	"fmt"
	"sync/atomic"
)

// groupBufSize is the size of the staging ring of the pwrite write path:
// the records placed under the put lock and not yet written to the file.
// A put that finds no room in it writes its own record, as a large one
// does.
const groupBufSize = 256 << 10

// groupWriter combines the pwrites of concurrent puts (writeWithoutMmap
// =true). Under the put lock a put that finds no writer running becomes
// it and, after the lock, writes its own record from its buffer (no copy,
// as without grouping); a put that finds one running copies its small
// record into the staging ring, and its range joins the pending list as
// staged. After its own write the writer writes every contiguous staged
// record placed so far with one pwrite and
// publishes them, the others return at once and their answers wait for
// the readable end (holdForVisible, or the flusher for SYNC_FLUSH, woken
// once per group), as a put behind an unfinished range always has. The
// writer writes until nothing staged is left, so no range is left to
// another goroutine. No write is issued under the put lock, and nothing is
// acknowledged before its bytes are in the file.
//
//	ring  ... tail |  staged, being written or waiting  | head ...
//	               ^ written to the file                ^ next placement
//
// Stage positions grow without bound; a record's bytes sit at pos mod
// size and never wrap (a record that would is placed at the ring's start,
// skipping the end).
type groupWriter struct {
	buf       []byte
	head      int64        // guarded by the put lock
	tail      atomic.Int64 // stage position written out
	leader    atomic.Bool  // a goroutine is writing runs
	unclaimed atomic.Int64 // staged ranges no writer took yet
	run       []*pendingWrite
}

func newGroupWriter(size int) *groupWriter {
	g := &groupWriter{buf: make([]byte, size)}
	for i := 0; i < size; i += osPageSize {
		g.buf[i] = 1 // resident before the first put copies into it
	}
	return g
}

// stageIfRoom decides how a record run b at file position pos of mf is
// written when no write of another put is running, the put becomes the
// writer (lead) and writes b itself, with no copy; while one runs, b is
// staged for it (a copy into the ring) and the staged range is returned.
// Both false/nil: the caller writes b itself (a mapping, a large run, a
// full ring). The put lock is held.
func (c *CommitLog) stageIfRoom(mf *MappedFile, pos int64, b []byte) (staged *pendingWrite, lead bool) {
	if c.group == nil || mf.data != nil || mf.wbuf != nil || mf.spill != nil || len(b) > inlineCopyMax {
		return nil, false
	}
	if c.group.leader.CompareAndSwap(false, true) {
		return nil, true
	}
	return c.stageLocked(mf, pos, b), false
}

// leadGroups is the writer's turn after its own write: it writes the
// ranges staged meanwhile, then gives up the turn (writeGroups takes it
// again for ranges staged after the last look).
func (c *CommitLog) leadGroups() {
	g := c.group
	for g.unclaimed.Load() > 0 {
		run := c.claimRun(g.run[:0])
		if len(run) == 0 {
			break
		}
		c.writeRun(run)
		clear(run)
		g.run = run[:0]
	}
	g.leader.Store(false)
	c.writeGroups()
}

// stageLocked copies b, the records at file position pos of mf, into the
// ring and registers the range; nil when the ring has no room. The put
// lock is held.
func (c *CommitLog) stageLocked(mf *MappedFile, pos int64, b []byte) *pendingWrite {
	g := c.group
	size := int64(len(g.buf))
	n := int64(len(b))
	h := g.head
	if o := h % size; o+n > size {
		h += size - o
	}
	if h+n-g.tail.Load() > size {
		return nil
	}
	copy(g.buf[h%size:], b)
	g.head = h + n
	c.pubMu.Lock()
	w := c.newWriteLocked()
	*w = pendingWrite{mf: mf, end: pos + n, staged: true, pos: pos, gFrom: h, gTo: h + n}
	c.pending = append(c.pending, w)
	g.unclaimed.Add(1)
	c.pubMu.Unlock()
	return w
}

// writeGroups writes staged ranges until none is left unclaimed, unless
// another goroutine is writing them: it sees every range staged before it
// stops, so no staged range is left without a writer. It reports whether
// it wrote any.
func (c *CommitLog) writeGroups() (wrote bool) {
	g := c.group
	if g == nil {
		return false
	}
	for g.unclaimed.Load() > 0 {
		if !g.leader.CompareAndSwap(false, true) {
			return wrote
		}
		for {
			run := c.claimRun(g.run[:0])
			if len(run) == 0 {
				break
			}
			c.writeRun(run)
			wrote = true
			clear(run)
			g.run = run[:0]
		}
		g.leader.Store(false)
	}
	return wrote
}

// claimRun takes the first unclaimed staged range and those after it that
// continue it in the file and in the ring.
func (c *CommitLog) claimRun(run []*pendingWrite) []*pendingWrite {
	c.pubMu.Lock()
	for _, w := range c.pending {
		if len(run) == 0 {
			if w.staged && !w.claimed {
				run = append(run, w)
			}
			continue
		}
		last := run[len(run)-1]
		if !w.staged || w.claimed || w.mf != last.mf || w.pos != last.end || w.gFrom != last.gTo {
			break
		}
		run = append(run, w)
	}
	for _, w := range run {
		w.claimed = true
	}
	c.group.unclaimed.Add(-int64(len(run)))
	c.pubMu.Unlock()
	return run
}

// writeRun writes a claimed run with one pwrite and publishes it. A write
// that finds no space leaves the ranges pending for the allocator's retry
// (with their bytes copied out of the ring); the puts held behind them are
// refused, as a put whose own write found no space is.
func (c *CommitLog) writeRun(run []*pendingWrite) {
	g := c.group
	size := int64(len(g.buf))
	first, last := run[0], run[len(run)-1]
	o := first.gFrom % size
	b := g.buf[o : o+last.gTo-first.gFrom]
	err := first.mf.writeAt(b, first.pos)
	c.fileWrites.Add(1)
	if err != nil && isNoSpace(err) {
		err = fmt.Errorf("write %s at %d: %w", first.mf.path, first.pos, err)
		for _, w := range run {
			c.retryWriteLater(w, b[w.gFrom-first.gFrom:w.gTo-first.gFrom], w.pos, err)
		}
		g.tail.Store(last.gTo)
		remark := "[NO_SPACE] a CommitLog write found no space; disk " + c.st.diskUsageLine()
		if p := c.st.noSpace.remark.Load(); p != nil {
			remark = *p
		}
		c.failVisibleWaitersAfter(first.mf.from+first.pos, remark)
		return
	}
	if err != nil {
		c.writeFailed.Store(true)
		c.st.setReadOnly(fmt.Errorf("write %s at %d: %w", first.mf.path, first.pos, err))
	}
	g.tail.Store(last.gTo)
	c.completeRun(run, err)
	if err != nil {
		c.failVisibleWaiters(c.st.readOnlyRemark())
		return
	}
	c.kickDispatch()
	if c.cfg.FlushDiskType == SyncFlush {
		c.flusher.kick() // the group commit covers the run
	}
}

// completeRun is complete for every range of a run, with one pass over
// the pending list.
func (c *CommitLog) completeRun(run []*pendingWrite, err error) {
	c.pubMu.Lock()
	for _, w := range run {
		w.done, w.err = true, err
	}
	n := 0
	for n < len(c.pending) && c.pending[n].done && c.pending[n].err == nil {
		p := c.pending[n]
		c.advance(p.mf, p.end)
		c.freeWriteLocked(p)
		n++
	}
	if n > 0 {
		// Shift down rather than reslice, so the list keeps its array.
		rest := copy(c.pending, c.pending[n:])
		clear(c.pending[rest:])
		c.pending = c.pending[:rest]
	}
	ready := c.takeVisibleLocked()
	c.pubMu.Unlock()
	c.answerVisible(ready)
}

// failVisibleWaitersAfter refuses the held puts whose records end after
// from (a write at from found no space).
func (c *CommitLog) failVisibleWaitersAfter(from int64, remark string) {
	c.pubMu.Lock()
	var out []visWaiter
	keep := c.visWaiters[:0]
	for _, w := range c.visWaiters {
		if w.end > from {
			out = append(out, w)
		} else {
			keep = append(keep, w)
		}
	}
	clear(c.visWaiters[len(keep):])
	c.visWaiters = keep
	c.pubMu.Unlock()
	for _, w := range out {
		c.st.stats.putFailures.Add(1)
		c.st.stats.noSpaceRefusals.Add(1)
		w.done(PutResult{Status: ServiceNotAvailable, Remark: remark})
	}
}

// GatherWrites makes the caller the CommitLog's writer until it calls
// ReleaseWrites: the records puts place meanwhile, the caller's own
// included, are copied into the staging ring instead of being written,
// and ReleaseWrites writes them, one pwrite per contiguous run, and
// answers their puts (which wait for their records to be readable, as a
// put behind another's unfinished write always has). It returns false,
// with nothing to release, when another goroutine is writing (puts then
// join its writes) or records are not staged (mapped writes, the
// transient store pool). An event loop brackets a pass with it, so the
// sends of every connection it serves in one wake-up cost one write.
// Nothing is written under the put lock and nothing is acknowledged
// before its bytes are in the file, as with any group.
func (st *DefaultMessageStore) GatherWrites() bool {
	c := st.commitLog
	return c != nil && c.group != nil && c.group.leader.CompareAndSwap(false, true)
}

// ReleaseWrites writes what was gathered since GatherWrites returned true
// and gives up the writer role.
func (st *DefaultMessageStore) ReleaseWrites() {
	st.commitLog.leadGroups()
}

// BeginPassSync is asked when an event loop's pass starts: true when the
// pass is to make the SYNC_FLUSH group commit itself once it has written
// its records (EndPassSync; see flusher.go). The flusher is not woken by
// puts until then.
func (st *DefaultMessageStore) BeginPassSync() bool {
	c := st.commitLog
	return c != nil && c.flusher.beginLoopSync()
}

// EndPassSync syncs what the pass wrote, and every other readable record
// a put waits for, and answers those puts on the caller; the flusher is
// woken for any put still waiting.
func (st *DefaultMessageStore) EndPassSync() {
	st.commitLog.flusher.flushOnLoop()
}
