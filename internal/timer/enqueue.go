package timer

import (
	"errors"
	"strconv"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
)

// This file holds the drivers that read: linking the timer topic's
// consume queue into the wheel, and the recovery scan of the CommitLog.

// linkLocked links timers into the wheel: the wheel places them and hands
// back their entries, which are appended to the timer log. On a write
// error nothing is linked.
func (s *Service) linkLocked(ts []slotEntry) error {
	if len(ts) == 0 {
		return nil
	}
	pos0 := s.log.end.Load()
	buf, undo := s.w.link(ts, pos0)
	if _, err := s.log.append(buf); err != nil {
		s.w.unlink(undo)
		return err
	}
	for _, t := range ts {
		if t.del {
			s.noteCancelLocked(t.due, t.key)
		}
	}
	ready, skipped := s.w.linked(ts, pos0)
	s.countSkipped(skipped)
	if ready {
		signal(s.wake)
	}
	return nil
}

// countSkipped counts timers found already delivered by the recovery scan.
func (s *Service) countSkipped(n int) {
	if n > 0 {
		s.c.skipped.Add(int64(n))
		s.pending.Add(-int64(n))
	}
}

// runEnqueue links the timer records of Topic's consume queue into the
// wheel, in queue order, within the read budget.
func (s *Service) runEnqueue() {
	defer s.wg.Done()
	budget := newReadBudget(s.readRate.Load)
	var batch []slotEntry
	for {
		select {
		case <-s.quit:
			return
		default:
		}
		s.mu.Lock()
		off := s.w.enqOffset
		s.mu.Unlock()
		r := s.st.GetMessage(enqueueGroup, Topic, 0, off, enqueueBatch, 1<<20, nil)
		if r.Status != store.Found {
			next := r.NextBeginOffset
			r.Release()
			// Only ever move forward: going back would link timers twice.
			if next > off && (r.Status == store.OffsetTooSmall || r.Status == store.OffsetFoundNull) {
				s.mu.Lock()
				if s.w.enqOffset == off {
					s.w.enqOffset = next
				}
				s.mu.Unlock()
				continue
			}
			if r.Status == store.OffsetOverflowBadly {
				s.logger.Warn("timer: the timer topic's consume queue ends before the linked offset; waiting for it",
					"linked", off, "queueMax", next)
			}
			if !s.idle(s.enqWake, enqueueIdle) {
				return
			}
			continue
		}
		batch = batch[:0]
		nbytes := 0
		last := off
		for i, rec := range r.Buffers {
			last = r.QueueOffsets[i]
			nbytes += len(rec)
			h, err := message.ParseRecordHeader(rec)
			if err != nil {
				s.c.malformed.Add(1)
				s.logger.Error("timer: unreadable record in the timer topic skipped", "queueOffset", last, "err", err)
				continue
			}
			v, _ := h.Property(rec, message.PropertyTimerOutMS)
			due, err := strconv.ParseInt(v, 10, 64)
			if err != nil || due <= 0 {
				s.c.malformed.Add(1)
				s.logger.Error("timer: record without a valid TIMER_OUT_MS skipped", "queueOffset", last, "offset", h.PhysicalOffset, "value", v)
				continue
			}
			if due/1000 < s.doneBefore {
				s.c.skipped.Add(1) // delivered by the master this broker took over from
				continue
			}
			e := slotEntry{due: due, phy: h.PhysicalOffset, size: h.TotalSize}
			if k, ok := h.Property(rec, message.PropertyTimerDelUniqKey); ok {
				e.del, e.key = true, k
			} else if rt, ok := h.Property(rec, message.PropertyRealTopic); ok {
				e.topic = rt
			}
			batch = append(batch, e)
		}
		r.Release()
		s.mu.Lock()
		s.pending.Add(int64(len(batch)))
		err := s.linkLocked(batch)
		if err != nil {
			s.pending.Add(-int64(len(batch)))
		} else {
			s.w.enqueued(last, batch)
			for _, e := range batch {
				s.topics.add(e.topic, 0, 1)
			}
		}
		s.mu.Unlock()
		signal(s.linked)
		if err != nil {
			s.logger.Error("timer: linking timers failed, will retry", "err", err)
			if !s.idle(nil, enqueueIdle) {
				return
			}
			continue
		}
		if !budget.take(nbytes, s.quit) {
			return
		}
	}
}

// idle waits for a signal on ch, d of real time, or quit (false).
func (s *Service) idle(ch chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.quit:
		return false
	case <-ch:
		return true
	case <-t.C:
		return true
	}
}

// runRecoverThenDeliver scans the CommitLog tail for delivery markers, then
// delivers.
func (s *Service) runRecoverThenDeliver() {
	defer s.wg.Done()
	s.mu.Lock()
	from := s.w.scanFrom
	s.mu.Unlock()
	to := s.st.MaxPhyOffset()
	found, ok := s.scanMarkers(from, to)
	if !ok {
		return
	}
	// Every timer record the queue held at Start is linked before the
	// first delivery: one linked later could be a delivered timer whose
	// marker is no longer remembered.
	for {
		s.mu.Lock()
		done := s.w.enqOffset >= s.w.replayTo
		s.mu.Unlock()
		if done {
			break
		}
		if !s.idle(s.linked, 100*time.Millisecond) {
			return
		}
	}
	s.mu.Lock()
	// The previous run delivered only from slots up to its clock's second
	// plus one, so once the cursor is past ours every marker found has
	// been matched or belongs to no pending timer.
	s.w.recovered(found, s.nowMs()/1000+1)
	s.mu.Unlock()
	s.recovering.Store(false)
	s.runDelivery()
}

// scanMarkers reads the CommitLog from from to to and collects the timer
// records whose delivery is already stored (PropertyTimerSource).
func (s *Service) scanMarkers(from, to int64) (map[int64]int64, bool) {
	found := map[int64]int64{}
	off := max(from, s.st.MinPhyOffset())
	budget := newReadBudget(s.readRate.Load)
	for off < to {
		select {
		case <-s.quit:
			return nil, false
		default:
		}
		rec, err := s.st.LookMessageByOffset(off)
		var h message.RecordHeader
		if err == nil {
			h, err = message.ParseRecordHeader(rec)
		}
		if err != nil {
			if s.clSize <= 0 {
				s.c.corrupt.Add(1)
				s.logger.Error("timer: recovery scan stopped early: CommitLog file size unknown", "offset", off, "err", err)
				break
			}
			if !errors.Is(err, store.ErrOffsetNotFound) {
				s.c.corrupt.Add(1)
				s.logger.Error("timer: recovery scan skips the rest of a CommitLog file", "offset", off, "err", err)
			}
			off = (off/s.clSize + 1) * s.clSize
			continue
		}
		if v, ok := h.Property(rec, PropertyTimerSource); ok {
			phy, err1 := strconv.ParseInt(v, 10, 64)
			d, _ := h.Property(rec, message.PropertyTimerOutMS)
			due, err2 := strconv.ParseInt(d, 10, 64)
			if err1 == nil && err2 == nil {
				found[phy] = due
			}
		}
		off += int64(h.TotalSize)
		if !budget.take(len(rec), s.quit) {
			return nil, false
		}
	}
	return found, true
}
