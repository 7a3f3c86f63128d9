package timer

import (
	"bytes"
	"container/heap"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/vfs"
)

// This file drops the timer state built from CommitLog records that a
// role change cut (the store's TruncateTo): timers whose record lies at
// or past the cut must never be delivered, even when new records are
// written at the same offsets later (apache/rocketmq#7689, #4771).
//
// The timer log is append-only, so the entries of cut records are not
// removed from their slots' lists: a cut is remembered as (logEnd, phy),
// the timer log's end and the CommitLog offset at the cut, and an entry
// written before logEnd whose record starts at or past phy is dropped
// when its slot is walked (it still counts for its file until the slot is
// finished, so the file is removed as usual). Entries written after the
// cut (new links, rolls) are never dropped by it. The cuts are kept in
// storePathRootDir/timercut, replaced atomically:
//
//	<logEnd> <phy>     one line per cut, oldest first
//
// A crash between the store's cut and this file is covered at Start: the
// checkpoint rule keeps every linked record below the flushed CommitLog,
// so entries whose record starts at or past the recovered CommitLog end
// can only come from a cut, and Start adds that cut itself.

// cutFileName is the file the remembered cuts are kept in.
const cutFileName = "timercut"

// logCut is a CommitLog truncation the wheel remembers.
type logCut struct{ logEnd, phy int64 }

// cutOff reports whether the entry at timer-log position pos, whose record
// starts at phy, was linked from a record a cut removed.
func (w *wheel) cutOff(pos, phy int64) bool {
	for _, c := range w.cuts {
		if pos < c.logEnd && phy >= c.phy {
			return true
		}
	}
	return false
}

// uncut returns the walked entries of the loaded slot that no cut
// removed; the others still count for their files (refs) and are gone
// for good once the slot is finished. n is how many were dropped.
func (w *wheel) uncut(ents []walkedEntry) (kept []walkedEntry, n int) {
	if len(w.cuts) == 0 {
		return ents, 0
	}
	kept = ents[:0:0]
	for _, e := range ents {
		if w.cutOff(e.pos, e.phy) {
			w.cur.refs[w.fileStart(e.pos)]++
			n++
			continue
		}
		kept = append(kept, e)
	}
	return kept, n
}

// truncate remembers a cut of the CommitLog at phy made when the timer
// log ended at logEnd and the timer topic's consume queue at cqMax: the
// linked offset and the CommitLog offsets the checkpoint waits for move
// back, the loaded slot loses the timers of cut records, and the
// recovery's delivery markers of cut records are forgotten. It returns
// the number of timers dropped from the loaded slot. Cuts no live entry
// can match any more are forgotten.
func (w *wheel) truncate(phy, logEnd, cqMax int64) (dropped int) {
	w.gen++
	w.enqOffset = min(w.enqOffset, cqMax)
	w.replayTo = min(w.replayTo, cqMax)
	w.enqPhyEnd = min(w.enqPhyEnd, phy)
	w.scanFrom = min(w.scanFrom, phy)
	for off := range w.skip {
		if off >= phy {
			delete(w.skip, off)
		}
	}
	keep := w.cuts[:0]
	for _, c := range w.cuts {
		if w.liveBefore(c.logEnd) {
			keep = append(keep, c)
		}
	}
	w.cuts = append(keep, logCut{logEnd: logEnd, phy: phy})
	if c := w.cur; c != nil {
		ready := c.ready[:0]
		for _, e := range c.ready {
			if e.phy >= phy {
				dropped++
				continue
			}
			ready = append(ready, e)
		}
		c.ready = ready
		heap.Init(&c.ready)
		rolled := c.rolled[:0]
		for _, e := range c.rolled {
			if e.phy >= phy {
				dropped++
				continue
			}
			rolled = append(rolled, e)
		}
		c.rolled = rolled
	}
	return dropped
}

// liveBefore reports whether a timer-log file starting before end still
// holds a live entry.
func (w *wheel) liveBefore(end int64) bool {
	for start, live := range w.segLive {
		if start < end && live > 0 {
			return true
		}
	}
	return false
}

func encodeCuts(cuts []logCut) []byte {
	var b bytes.Buffer
	for _, c := range cuts {
		fmt.Fprintf(&b, "%d %d\n", c.logEnd, c.phy)
	}
	return b.Bytes()
}

func decodeCuts(b []byte) ([]logCut, error) {
	var out []logCut
	for i, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: %q", i+1, line)
		}
		end, err1 := strconv.ParseInt(f[0], 10, 64)
		phy, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || end < 0 || phy < 0 {
			return nil, fmt.Errorf("line %d: %q", i+1, line)
		}
		out = append(out, logCut{logEnd: end, phy: phy})
	}
	return out, nil
}

// loadCuts reads the cut file (missing: no cut).
func loadCuts(fs vfs.FS, path string) ([]logCut, error) {
	b, err := vfs.ReadFile(fs, path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("timer: read %s: %w", path, err)
	}
	cuts, err := decodeCuts(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
	}
	return cuts, nil
}

func (s *Service) cutPath() string { return filepath.Join(s.cfg.StorePathRootDir, cutFileName) }

// topicQueueMax is the end of the timer topic's consume queue.
func (s *Service) topicQueueMax() int64 {
	r := s.st.GetMessage(enqueueGroup, Topic, 0, 0, 1, 1, nil)
	if r == nil {
		return 0
	}
	defer r.Release()
	if r.Status == store.NoMatchedLogicQueue {
		return 0
	}
	return r.MaxOffset
}

// TruncateTo drops the timer state built from CommitLog records at or
// past phy, which a role change cut: call it after the store's
// TruncateTo (its consume queues are already cut). Timers of cut records
// are never delivered, the consume queue of the timer topic is linked
// again from its new end, and the cut is durable (the cut file, then a
// checkpoint) when it returns nil. A service not running (not started,
// or closed: a broker closes its wheel before it follows another master)
// has its files cut instead (truncateFiles).
func (s *Service) TruncateTo(phy int64) error {
	if s.state.Load() != stateRunning {
		return s.truncateFiles(phy)
	}
	cqMax := s.topicQueueMax()
	s.mu.Lock()
	if s.w == nil {
		s.mu.Unlock()
		return nil
	}
	dropped := s.w.truncate(phy, s.log.end.Load(), cqMax)
	cuts := append([]logCut(nil), s.w.cuts...)
	s.mu.Unlock()
	if dropped > 0 {
		s.pending.Add(-int64(dropped))
		s.c.truncated.Add(int64(dropped))
	}
	s.logger.Warn("timer: state past a CommitLog truncation dropped", "offset", phy, "queueEnd", cqMax, "droppedLoaded", dropped)
	if err := vfs.WriteFileAtomic(s.fs, s.cutPath(), encodeCuts(cuts), nil); err != nil {
		return fmt.Errorf("timer: %w", err)
	}
	signal(s.enqWake)
	return s.checkpoint(s.flushWait)
}

// recoverCuts gives w the cuts of the cut file and the cut a crash may
// have kept from it: linked entries whose record starts at or past the
// recovered CommitLog end. The linked offset is lowered to the consume
// queue's end when the queue ends before it (its records were cut). A
// fresh wheel (no wheel file, the timer log removed) has no entry to
// drop, and the cut file is removed.
func (s *Service) recoverCuts(w *wheel, img *wheelImage, fresh bool) error {
	path := s.cutPath()
	if fresh {
		if err := s.fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("timer: %w", err)
		}
		return nil
	}
	cuts, err := loadCuts(s.fs, path)
	if err != nil {
		return err
	}
	w.cuts = cuts
	end := s.st.MaxPhyOffset()
	if img.logEnd > 0 && !w.cutOffAll(img.logEnd, end) {
		w.cuts = append(w.cuts, logCut{logEnd: img.logEnd, phy: end})
	}
	if q := s.topicQueueMax(); w.enqOffset > q {
		s.logger.Warn("timer: the timer topic's consume queue ends before the linked offset (a CommitLog truncation); linking again from its end",
			"linked", w.enqOffset, "queueEnd", q)
		w.enqOffset, w.replayTo = q, min(w.replayTo, q)
	}
	return nil
}

// cutOffAll reports whether a remembered cut already drops every entry
// before logEnd whose record starts at or past phy.
func (w *wheel) cutOffAll(logEnd, phy int64) bool {
	for _, c := range w.cuts {
		if c.logEnd >= logEnd && c.phy <= phy {
			return true
		}
	}
	return false
}

// truncateFiles is TruncateTo for a wheel that does not run: the cut is
// added to the cut file and the wheel file's linked offset and marker
// scan start are lowered to the timer topic's new queue end and the cut,
// so the next Start drops the timers of cut records and links the queue
// again from its new end even when the CommitLog has grown past the cut
// by then (a slave's log fills again with its new master's records, and
// Start's own guess, the CommitLog end, would lie past them). Without a
// wheel file there is nothing to cut: Start links every timer record
// again. It must not run while the service (or another over the same
// files) runs.
func (s *Service) truncateFiles(phy int64) error {
	img, err := loadWheelImage(s.fs, s.wheelPath)
	if err != nil || img == nil {
		return err
	}
	cuts, err := loadCuts(s.fs, s.cutPath())
	if err != nil {
		return err
	}
	keep := cuts[:0]
	for _, c := range cuts {
		if img.liveBefore(c.logEnd) {
			keep = append(keep, c)
		}
	}
	cuts = append(keep, logCut{logEnd: img.logEnd, phy: phy})
	if err := vfs.WriteFileAtomic(s.fs, s.cutPath(), encodeCuts(cuts), nil); err != nil {
		return fmt.Errorf("timer: %w", err)
	}
	cqMax := s.topicQueueMax()
	if img.enqOffset <= cqMax && img.scanFrom <= phy {
		return nil
	}
	s.logger.Warn("timer: the files of the stopped wheel cut after a CommitLog truncation", "offset", phy,
		"queueEnd", cqMax, "linked", img.enqOffset, "scanFrom", img.scanFrom)
	img.enqOffset, img.scanFrom = min(img.enqOffset, cqMax), min(img.scanFrom, phy)
	return saveWheelImage(s.fs, s.wheelPath, img.encode())
}

// liveBefore reports whether a timer-log file starting before end still
// holds a live entry, as the wheel file counts them.
func (w *wheelImage) liveBefore(end int64) bool {
	for _, sg := range w.segs {
		if sg.start < end && sg.live > 0 {
			return true
		}
	}
	return false
}
