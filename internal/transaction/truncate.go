package transaction

// This file drops the pending-half state built from CommitLog records a
// role change cut (the store's TruncateTo): a half whose record lies at
// or past the cut must never be checked, and the half-queue offsets past
// the queue's new end are written again by new halves, which a rebuild
// must read (apache/rocketmq#7689, #4771).

// TruncateTo drops the pending halves whose record starts at or past phy
// or whose half-queue offset is at or past halfEnd (the half queue's end
// after the cut), and lowers what the index has seen to halfEnd. It
// returns the number of halves dropped.
func (x *Index) TruncateTo(phy, halfEnd int64) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for q, h := range x.pending {
		if h.Phy >= phy || q >= halfEnd {
			delete(x.pending, q)
			n++
		}
	}
	for q := range x.recent {
		if q >= halfEnd {
			delete(x.recent, q)
		}
	}
	for q := range x.tombstones {
		if q >= halfEnd {
			delete(x.tombstones, q)
		}
	}
	x.seenEnd = min(x.seenEnd, halfEnd)
	x.version++
	return n
}

// DropFrom forgets the records at or past phy.
func (c *CheckedCache) DropFrom(phy int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for off, rec := range c.recs {
		if off >= phy {
			delete(c.recs, off)
			c.bytes -= int64(len(rec))
		}
	}
}

// TruncateTo drops the check service's state built from CommitLog
// records at or past phy, which a role change cut: call it after the
// store's TruncateTo (its consume queues are already cut). The pending
// halves of cut records leave the index, the records just read for
// checks are forgotten, and the index snapshot and the rebuild floors
// are written again, so that a restart neither brings the halves back
// nor starts reading the queues past their new ends. It returns the
// number of halves dropped. During the rebuild at start the snapshot is
// written once the rebuild ends.
func (s *CheckService) TruncateTo(phy int64) int {
	halfEnd := s.d.Store.MaxOffsetInQueue(s.d.HalfTopic, 0)
	n := s.idx.TruncateTo(phy, halfEnd)
	s.cache.DropFrom(phy)
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.persistFloorsLocked()
	s.saveIndexLocked()
	s.d.Logger.Warn("transaction: pending halves past a CommitLog truncation dropped", "offset", phy, "halfQueueEnd", halfEnd, "dropped", n)
	return n
}
