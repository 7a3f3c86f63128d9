package timer

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
)

// This file holds the delivery driver: it walks the cursor's slot in the
// timer log, waits on the clock for what the wheel says is due, reads the
// timer records and hands the real messages to the deliver function.

// ack is a delivery's outcome.
type ack struct {
	e     slotEntry
	res   store.PutResult
	topic string
}

// runDelivery is the wheel's hand: it loads the cursor's slot, delivers its
// timers in due order when their exact time has come, and moves on when
// the slot is empty and its second has begun.
func (s *Service) runDelivery() {
	window := s.cfg.DeliverWindow
	acks := make(chan ack, window)
	inflight := 0
	handle := func(a ack) {
		inflight--
		s.handleAck(a)
	}
	for {
		select {
		case <-s.quit:
			return
		default:
		}
		s.mu.Lock()
		c := s.w.load()
		s.mu.Unlock()
		if !c.walked {
			ents, err := s.walk(c.headSnap)
			if err != nil {
				s.c.corrupt.Add(1)
				s.logger.Error("timer: slot list cut short", "second", c.sec, "err", err)
			}
			s.learnCancels(ents, c.sec)
			s.mu.Lock()
			s.countSkipped(s.w.walked(ents))
			s.mu.Unlock()
		}
	drain:
		for inflight > 0 {
			select {
			case a := <-acks:
				handle(a)
			default:
				break drain
			}
		}
		now := s.nowMs()
		s.mu.Lock()
		batch, next, finish := s.w.due(now, window-inflight, inflight)
		if finish {
			err := s.finishSlotLocked()
			s.mu.Unlock()
			if err != nil {
				s.logger.Error("timer: re-linking rolled timers failed, will retry", "second", c.sec, "err", err)
				if !s.idle(nil, time.Second) {
					return
				}
			}
			continue
		}
		s.mu.Unlock()
		if len(batch) > 0 {
			for _, e := range batch {
				if s.deliverEntry(e, now, acks) {
					inflight++
				}
			}
			continue
		}
		if next < 0 && inflight == 0 {
			next = c.sec * 1000
		}
		var timer <-chan time.Time
		if next >= 0 && (inflight < window) {
			timer = alarm(s.clock, time.UnixMilli(next))
		}
		select {
		case <-s.quit:
			return
		case <-s.wake:
		case a := <-acks:
			handle(a)
		case <-timer:
		}
	}
}

// walk reads a slot's list from head.
func (s *Service) walk(head int64) ([]walkedEntry, error) {
	var out []walkedEntry
	limit := s.log.end.Load()/entrySize + 1
	for pos := head; pos != nilPos; {
		if int64(len(out)) > limit {
			return out, fmt.Errorf("%w: timer-log list from %d loops", ErrCorrupt, head)
		}
		e, err := s.log.read(pos)
		if err != nil {
			return out, err
		}
		out = append(out, walkedEntry{e, pos})
		pos = e.prev
	}
	return out, nil
}

// finishSlotLocked clears the delivered slot, re-links its later-round
// timers and moves the cursor to the next second.
func (s *Service) finishSlotLocked() error {
	rolled, u := s.w.finish()
	if len(rolled) > 0 {
		if err := s.linkLocked(rolled); err != nil {
			s.w.unfinish(u)
			return err
		}
		s.c.rolled.Add(int64(len(rolled)))
	}
	s.forgetCancelsLocked(u.c.sec)
	moveScan, dropped := s.w.finished(u)
	if dropped > 0 {
		s.logger.Info("timer: delivery markers matching no pending timer dropped", "count", dropped)
	}
	if moveScan {
		s.w.setScanFrom(s.st.MaxPhyOffset())
	}
	return nil
}

// deliverEntry reads the timer record of e and hands the real message to
// the deliver function; it reports whether an ack will come.
func (s *Service) deliverEntry(e slotEntry, now int64, acks chan<- ack) bool {
	if e.del {
		s.dropMarker()
		return false
	}
	rec, err := s.st.LookMessageByOffset(e.phy)
	if err != nil {
		if errors.Is(err, store.ErrOffsetNotFound) || errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrFileGone) {
			s.countLost(e, err)
			return false
		}
		s.retry(e, now, err.Error())
		return false
	}
	ext, err := message.DecodeRecord(rec)
	if err != nil || ext.Topic != Topic || ext.PhysicalOffset != e.phy || ext.Properties[message.PropertyTimerOutMS] != strconv.FormatInt(e.due, 10) {
		if err == nil {
			err = fmt.Errorf("record at %d is not the timer record due at %d (topic %s)", e.phy, e.due, ext.Topic)
		}
		s.countLost(e, err)
		return false
	}
	if s.cancelledTimer(e, ext) {
		return false
	}
	m, err := realMessage(ext, e.phy)
	if err != nil {
		s.c.dropped.Add(1)
		s.pending.Add(-1)
		s.logger.Error("timer: timer record dropped", "offset", e.phy, "err", err)
		return false
	}
	topic := m.Topic
	s.deliver(m, func(r store.PutResult) { acks <- ack{e, r, topic} })
	return true
}

// countLost counts a timer whose record is gone (CommitLog retention, or a
// tail lost with the store's own acknowledgement).
func (s *Service) countLost(e slotEntry, err error) {
	s.c.lost.Add(1)
	s.pending.Add(-1)
	s.logger.Error("timer: timer record not found, timer lost", "offset", e.phy, "due", e.due, "err", err)
}

// retry puts e back to act again after retryDelayMs.
func (s *Service) retry(e slotEntry, now int64, why string) {
	s.c.retries.Add(1)
	s.logger.Warn("timer: delivery failed, will retry", "offset", e.phy, "due", e.due, "why", why)
	s.mu.Lock()
	s.w.retry(e, now+retryDelayMs)
	s.mu.Unlock()
}

func (s *Service) handleAck(a ack) {
	switch a.res.Status {
	case store.PutOK, store.FlushDiskTimeout, store.FlushSlaveTimeout, store.SlaveNotAvailable:
		now := s.nowMs()
		s.c.delivered.Add(1)
		s.pending.Add(-1)
		s.topics.add(a.topic, 1, 1)
		s.lateness.Record(time.Duration(now-a.e.due) * time.Millisecond)
	case store.MessageIllegal, store.PropertiesSizeExceeded:
		s.c.dropped.Add(1)
		s.pending.Add(-1)
		s.topics.add(a.topic, 2, 1)
		s.logger.Error("timer: due message refused by the store, dropped", "offset", a.e.phy, "status", int(a.res.Status), "remark", a.res.Remark)
	default:
		s.retry(a.e, s.nowMs(), a.res.Remark)
	}
}

// realMessage rebuilds the message to deliver from its timer record.
func realMessage(ext *message.Ext, phy int64) (*message.Inner, error) {
	m := ext.ToInner()
	p := m.Properties
	topic := p[message.PropertyRealTopic]
	qid, err := strconv.Atoi(p[message.PropertyRealQueueID])
	if topic == "" || err != nil {
		return nil, fmt.Errorf("timer record at %d lacks REAL_TOPIC/REAL_QID", phy)
	}
	for _, k := range [...]string{message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyTimerDeliverMS,
		message.PropertyTimerDelaySec, message.PropertyTimerDelayMS, message.PropertyTimerEnqueueMS,
		message.PropertyTimerDequeueMS, message.PropertyTimerRollTimes} {
		delete(p, k)
	}
	p[PropertyTimerSource] = strconv.FormatInt(phy, 10)
	p[message.PropertyWaitStoreMsgOK] = "false"
	m.Topic = topic
	m.QueueID = int32(qid)
	m.StoreTimestamp = 0
	m.TagsCode = message.TagsHashCode(p[message.PropertyTags])
	m.PropertiesString = message.EncodeProperties(p)
	return m, nil
}
