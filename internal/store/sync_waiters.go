package store

import (
	"sync/atomic"
	"time"
)

// syncWaiter is a SYNC_FLUSH put waiting for the flush that covers it.
type syncWaiter struct {
	end      int64
	deadline time.Time
	res      PutResult
	done     func(PutResult)
	state    atomic.Int32 // 0 waiting, 1 completed
}

func (w *syncWaiter) complete(status PutStatus, remark string) {
	if !w.state.CompareAndSwap(0, 1) {
		return
	}
	r := w.res
	if status != PutOK {
		r.Status, r.Remark = status, remark
	}
	w.done(r)
}

// syncWaiters is the set of SYNC_FLUSH puts waiting for a flush: a plain
// structure with no clock, timer, lock or goroutine of its own. The
// flusher adds waiters, takes the ones a flush covered and the ones whose
// deadline passed, and keeps one timer for the earliest deadline. Each
// waiter leaves the set exactly once, through covered, expired or drain.
//
// Waiters are kept in order of their end offset (puts register nearly in
// that order, so add is a short walk back from the tail), so covered takes
// a prefix.
type syncWaiters struct {
	ws []*syncWaiter
	// next is no later than the earliest deadline in ws (zero when ws is
	// empty): the time the driver's timer must fire by.
	next time.Time
}

// add inserts w and reports whether its deadline is earlier than every
// deadline the driver's timer already covers (the driver must re-arm).
func (s *syncWaiters) add(w *syncWaiter) (earliest bool) {
	i := len(s.ws)
	s.ws = append(s.ws, w)
	for ; i > 0 && s.ws[i-1].end > w.end; i-- {
		s.ws[i] = s.ws[i-1]
	}
	s.ws[i] = w
	if s.next.IsZero() || w.deadline.Before(s.next) {
		s.next = w.deadline
		return true
	}
	return false
}

// covered removes the waiters whose records end at or before flushed and
// appends them to out, in end order.
func (s *syncWaiters) covered(flushed int64, out []*syncWaiter) []*syncWaiter {
	n := 0
	for n < len(s.ws) && s.ws[n].end <= flushed {
		n++
	}
	if n == 0 {
		return out
	}
	out = append(out, s.ws[:n]...)
	s.removePrefix(n)
	return out
}

// expired removes the waiters whose deadline is not after now and appends
// them to out; it returns the earliest deadline left (zero when none).
func (s *syncWaiters) expired(now time.Time, out []*syncWaiter) ([]*syncWaiter, time.Time) {
	var next time.Time
	keep := s.ws[:0]
	for _, w := range s.ws {
		if !now.Before(w.deadline) {
			out = append(out, w)
			continue
		}
		keep = append(keep, w)
		if next.IsZero() || w.deadline.Before(next) {
			next = w.deadline
		}
	}
	clear(s.ws[len(keep):])
	s.ws = keep
	s.next = next
	s.shrink()
	return out, next
}

// drain removes every waiter and appends it to out.
func (s *syncWaiters) drain(out []*syncWaiter) []*syncWaiter {
	out = append(out, s.ws...)
	s.removePrefix(len(s.ws))
	return out
}

func (s *syncWaiters) len() int { return len(s.ws) }

// removePrefix drops the first n waiters, keeping the backing array (and
// no references to the removed ones).
func (s *syncWaiters) removePrefix(n int) {
	rest := copy(s.ws, s.ws[n:])
	clear(s.ws[rest:])
	s.ws = s.ws[:rest]
	if rest == 0 {
		s.next = time.Time{}
	}
	s.shrink()
}

// shrink gives back a backing array a burst of waiters (a hung fsync)
// grew, once most of it is unused.
func (s *syncWaiters) shrink() {
	if cap(s.ws) > 1024 && len(s.ws) < cap(s.ws)/4 {
		s.ws = append(make([]*syncWaiter, 0, 2*len(s.ws)), s.ws...)
	}
}
