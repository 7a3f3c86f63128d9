package timer

import (
	"container/heap"
	"sync/atomic"
)

// wheel is the timing wheel's state and every decision about it, with no
// I/O, no clock and no goroutine: the caller passes in what it read (the
// time, the timer log's end, a slot's walked list, the store's offsets)
// and carries out what the wheel hands back (the bytes to append to the
// timer log, the timers to deliver, the image to save). The Service's
// drivers (enqueue, delivery, checkpoint) call it under the Service's
// lock; scenario tests (testdata/wheel) drive it directly.
//
// The life of a timer in it:
//
//	link(timers, logEnd) -> bytes to append; then linked() or unlink()
//	load()               -> the cursor's slot, whose list the caller walks
//	walked(entries)      -> this round's timers into the ready heap, later
//	                        rounds into rolled, recovered deliveries skipped
//	due(now, room)       -> the timers to deliver now, and the next time
//	retry(e, at)         -> a failed delivery back into the ready heap
//	finish() ... finished() -> the slot cleared, rolled timers re-linked,
//	                        the cursor one second on
type wheel struct {
	nslots   int64
	fileSize int64 // timer-log file size: entries are counted per file

	heads     []int64
	counts    []atomic.Int32 // entries linked in each slot (read lock-free by Prepare)
	segLive   map[int64]int64
	cursor    int64 // first second not fully delivered
	scanFrom  int64 // CommitLog offset before every delivery of the cursor's slot
	enqOffset int64 // next consume-queue offset of Topic to link
	enqPhyEnd int64 // end of the last linked timer record in the CommitLog
	replayTo  int64 // consume-queue end at Start: linked before any delivery
	cur       *loadedSlot
	skip      map[int64]int64 // delivered after the checkpoint: timer record offset -> due
	skipUntil int64           // last second the previous run can have been delivering
}

// slotEntry is a timer of the slot being delivered.
type slotEntry struct {
	at   int64 // when to act (Unix ms): the due time, or a retry time
	due  int64
	phy  int64
	pos  int64
	size int32
	del  bool   // a delete marker (TIMER_DEL_UNIQKEY): never delivered
	key  string // a delete marker's key, when the enqueue read it (else "")
	// topic is the real topic, when the enqueue read it (metrics only).
	topic string
}

type entryHeap []slotEntry

func (h entryHeap) Len() int { return len(h) }
func (h entryHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].phy < h[j].phy
}
func (h entryHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)   { *h = append(*h, x.(slotEntry)) }
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// loadedSlot is the cursor's slot while it is being delivered.
type loadedSlot struct {
	sec      int64
	headSnap int64 // head when the slot was loaded; the walk starts here
	walked   bool
	ready    entryHeap       // timers of this round, by time to act
	rolled   []slotEntry     // timers of later rounds, re-linked at finish
	refs     map[int64]int64 // timer-log file start -> entries of this slot's list
}

// walkedEntry is an entry read from a slot's list.
type walkedEntry struct {
	logEntry
	pos int64
}

// newWheel builds the wheel a checkpoint image describes; it returns the
// number of timers the image holds.
func newWheel(img *wheelImage, fileSize int64) (*wheel, int64) {
	w := &wheel{nslots: int64(img.slots), fileSize: fileSize, segLive: map[int64]int64{}, skip: map[int64]int64{}}
	w.heads = make([]int64, w.nslots)
	for i := range w.heads {
		w.heads[i] = nilPos
	}
	w.counts = make([]atomic.Int32, w.nslots)
	var pending int64
	for _, h := range img.heads {
		w.heads[h.index] = h.head
		w.counts[h.index].Store(int32(h.count))
		pending += int64(h.count)
	}
	for _, sg := range img.segs {
		w.segLive[sg.start] = sg.live
	}
	w.cursor, w.scanFrom, w.enqOffset, w.enqPhyEnd = img.cursor, img.scanFrom, img.enqOffset, img.scanFrom
	return w, pending
}

// staleFiles returns the timer-log files of existing that hold nothing
// reachable from the wheel: files past the end, and files before the last
// one with no live entry.
func (w *wheel) staleFiles(existing []int64, logEnd int64) []int64 {
	var out []int64
	last := w.fileStart(logEnd)
	for _, start := range existing {
		if start > last || (start < last && w.segLive[start] <= 0) {
			out = append(out, start)
		}
	}
	return out
}

func (w *wheel) idx(sec int64) int64 { return sec % w.nslots }

func (w *wheel) fileStart(pos int64) int64 { return pos - pos%w.fileSize }

// slotCount returns the number of timers linked in the slot of due (safe
// without the lock).
func (w *wheel) slotCount(due int64) int64 { return int64(w.counts[w.idx(due/1000)].Load()) }

// congested applies timerCongestNumEachSlot as RocketMQ does to a slot
// holding n timers: never below the limit, always at twice it, and in
// between when draw() (uniform in [0, 1000), called only there) is above
// the share of the way from limit to twice it.
func congested(n, limit int64, draw func() int) bool {
	switch {
	case n <= limit:
		return false
	case n >= 2*limit:
		return true
	default:
		return float64(draw()) > 1000*float64(n-limit)/(float64(limit)+0.1)
	}
}

// place chooses the slot a timer due at due is linked into and whether it
// also goes to the loaded slot's ready heap or rolled list.
func (w *wheel) place(due int64) (idx int64, ready, rolled bool) {
	sec := due / 1000
	if c := w.cur; c != nil {
		switch {
		case sec <= c.sec:
			return w.idx(c.sec), true, false
		case (sec-c.sec)%w.nslots == 0:
			return w.idx(c.sec), false, true
		}
		return w.idx(sec), false, false
	}
	if sec <= w.cursor {
		return w.idx(w.cursor), false, false
	}
	return w.idx(sec), false, false
}

// linkUndo restores the heads a link changed.
type linkUndo []struct{ idx, head int64 }

// link makes timers (due, phy, size) the heads of their slots' lists, as
// entries at pos0 (the timer log's end) onwards, and returns the entries'
// bytes for the caller to append. The caller then calls linked (written)
// or unlink (not written).
func (w *wheel) link(ts []slotEntry, pos0 int64) ([]byte, linkUndo) {
	undo := make(linkUndo, 0, len(ts))
	buf := make([]byte, len(ts)*entrySize)
	for i, t := range ts {
		idx, _, _ := w.place(t.due)
		undo = append(undo, struct{ idx, head int64 }{idx, w.heads[idx]})
		e := logEntry{size: t.size, del: t.del, prev: w.heads[idx], phy: t.phy, due: t.due}
		e.encode(buf[i*entrySize:])
		w.heads[idx] = pos0 + int64(i)*entrySize
	}
	return buf, undo
}

// unlink takes back a link whose bytes were not written.
func (w *wheel) unlink(u linkUndo) {
	for i := len(u) - 1; i >= 0; i-- {
		w.heads[u[i].idx] = u[i].head
	}
}

// linked accounts timers whose link bytes were written at pos0: slot and
// file counts, and the loaded slot's ready heap or rolled list. It returns
// whether the ready heap got a timer (the delivery loop must look again)
// and how many timers were found already delivered.
func (w *wheel) linked(ts []slotEntry, pos0 int64) (ready bool, skipped int) {
	for i, t := range ts {
		pos := pos0 + int64(i)*entrySize
		idx, r, rolled := w.place(t.due)
		w.counts[idx].Add(1)
		w.segLive[w.fileStart(pos)]++
		if c := w.cur; c != nil && (r || rolled) {
			c.refs[w.fileStart(pos)]++
			e := slotEntry{at: t.due, due: t.due, phy: t.phy, pos: pos, size: t.size, del: t.del, key: t.key}
			switch {
			case rolled:
				c.rolled = append(c.rolled, e)
			case w.skipped(e):
				skipped++
			default:
				heap.Push(&c.ready, e)
				ready = true
			}
		}
	}
	return ready, skipped
}

// enqueued records that the consume queue is linked up to last (inclusive)
// and that ts were linked from it.
func (w *wheel) enqueued(last int64, ts []slotEntry) {
	w.enqOffset = last + 1
	for _, t := range ts {
		w.enqPhyEnd = max(w.enqPhyEnd, t.phy+int64(t.size))
	}
}

// skipped reports (and forgets) a timer found delivered by the recovery
// scan.
func (w *wheel) skipped(e slotEntry) bool {
	if d, ok := w.skip[e.phy]; ok && d == e.due {
		delete(w.skip, e.phy)
		return true
	}
	return false
}

// recovered sets the delivery markers the recovery scan found (timer
// record offset -> due) and the last second the previous run can have
// been delivering.
func (w *wheel) recovered(found map[int64]int64, untilSec int64) {
	for phy, due := range found {
		w.skip[phy] = due
	}
	w.skipUntil = untilSec
}

// load returns the cursor's slot, loading it when none is. Until walked
// is set, the caller reads its list from headSnap and passes it to walked.
func (w *wheel) load() *loadedSlot {
	if w.cur == nil {
		w.cur = &loadedSlot{sec: w.cursor, headSnap: w.heads[w.idx(w.cursor)], refs: map[int64]int64{}}
	}
	return w.cur
}

// walked sorts the loaded slot's list: timers of this round into the ready
// heap (unless delivered before the crash), later rounds into rolled. It
// returns how many were found already delivered.
func (w *wheel) walked(ents []walkedEntry) (skipped int) {
	c := w.cur
	for _, we := range ents {
		c.refs[w.fileStart(we.pos)]++
		e := slotEntry{at: we.due, due: we.due, phy: we.phy, pos: we.pos, size: we.size, del: we.del}
		switch {
		case we.due/1000 > c.sec:
			c.rolled = append(c.rolled, e)
		case w.skipped(e):
			skipped++
		default:
			heap.Push(&c.ready, e)
		}
	}
	c.walked = true
	return skipped
}

// due takes, in order, at most room timers of the loaded slot whose time
// to act is at or before now. next is the time to act of the first timer
// left (-1: none). finish reports that the slot is done: nothing taken,
// nothing left, nothing in flight (inflight) and its second has begun.
func (w *wheel) due(now int64, room, inflight int) (batch []slotEntry, next int64, finish bool) {
	c := w.cur
	for len(batch) < room && c.ready.Len() > 0 && c.ready[0].at <= now {
		batch = append(batch, heap.Pop(&c.ready).(slotEntry))
	}
	next = -1
	if c.ready.Len() > 0 {
		next = c.ready[0].at
	}
	finish = len(batch) == 0 && next < 0 && inflight == 0 && now >= c.sec*1000
	return batch, next, finish
}

// retry puts a timer of the loaded slot back, to act at at.
func (w *wheel) retry(e slotEntry, at int64) {
	e.at = at
	heap.Push(&w.cur.ready, e)
}

// finishUndo restores a slot finish whose re-link failed.
type finishUndo struct {
	c         *loadedSlot
	head      int64
	count     int32
	oldCursor int64
}

// finish clears the loaded slot and moves the cursor to the next second.
// It returns the slot's later-round timers, which the caller links again
// (link, then linked); when that fails it calls unfinish, else finished.
func (w *wheel) finish() ([]slotEntry, finishUndo) {
	c := w.cur
	idx := w.idx(c.sec)
	u := finishUndo{c: c, head: w.heads[idx], count: w.counts[idx].Load(), oldCursor: w.cursor}
	w.heads[idx] = nilPos
	w.counts[idx].Store(0)
	w.cur = nil
	w.cursor = c.sec + 1
	return c.rolled, u
}

// unfinish takes back a finish whose rolled timers could not be linked.
func (w *wheel) unfinish(u finishUndo) {
	idx := w.idx(u.c.sec)
	w.cursor = u.c.sec
	w.cur = u.c
	w.heads[idx] = u.head
	w.counts[idx].Store(u.count)
}

// finished completes a finish: the slot's entries leave their files'
// live counts. moveScan reports that scanFrom is to move to the
// CommitLog's end (the caller reads it and calls setScanFrom): that is
// allowed only when no delivery marker found at recovery can still match a
// pending timer, since a checkpoint written before would make the next
// recovery miss them. dropped is the number of markers given up now.
func (w *wheel) finished(u finishUndo) (moveScan bool, dropped int) {
	for start, n := range u.c.refs {
		w.segLive[start] -= n
	}
	if len(w.skip) > 0 && w.cursor <= w.skipUntil {
		return false, 0
	}
	dropped = len(w.skip)
	clear(w.skip)
	return true, dropped
}

// setScanFrom sets the CommitLog offset before every delivery of the
// cursor's slot.
func (w *wheel) setScanFrom(off int64) { w.scanFrom = off }

// image returns the checkpoint image of the wheel with the timer log's end
// logEnd; need is how far the CommitLog must be flushed before it may be
// saved, and dead the timer-log files with no live entry that lie wholly
// before logEnd.
func (w *wheel) image(logEnd, savedAtMs int64) (img *wheelImage, need int64, dead []int64) {
	img = &wheelImage{slots: uint32(w.nslots), cursor: w.cursor, scanFrom: w.scanFrom, enqOffset: w.enqOffset,
		logEnd: logEnd, savedAtMs: savedAtMs}
	need = max(w.scanFrom, w.enqPhyEnd)
	for start, live := range w.segLive {
		if live > 0 {
			img.segs = append(img.segs, segImage{start: start, live: live})
		} else if start+w.fileSize <= logEnd {
			dead = append(dead, start)
		}
	}
	for i, h := range w.heads {
		if h != nilPos {
			img.heads = append(img.heads, slotImage{index: uint32(i), count: uint32(w.counts[i].Load()), head: h})
		}
	}
	return img, need, dead
}

// forgetFile reports whether the file at start still has no live entry
// and, if so, forgets it (the caller removes it).
func (w *wheel) forgetFile(start int64) bool {
	if w.segLive[start] > 0 {
		return false
	}
	delete(w.segLive, start)
	return true
}
