// Package clock owns Spool's time source: the Clock interface, the real
// clock (Real) and a manual clock for tests (Manual), moved only by
// Advance and Set, whose waits fire when the time they wait for is reached.
//
// Every decision the module takes on time (liveness of brokers, due
// timers, budgets and rates, retention hours, check-back rounds, file
// names from timestamps) reads the time through a Clock passed in by its
// options; nothing else in the module reads time.Now for a decision.
// Plain elapsed-time measurement for metrics and logs (a put's latency,
// how long a recovery took) and the deadlines of network I/O may read the
// wall clock directly.
package clock

import (
	"sync"
	"time"
)

// Clock is a source of time and of waits on it.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// Since is Now().Sub(t).
	Since(t time.Time) time.Duration
	// After delivers the time on the returned channel once d has passed.
	After(d time.Duration) <-chan time.Time
}

// Real returns the wall clock.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) Since(t time.Time) time.Duration        { return time.Since(t) }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Or returns c, or the wall clock when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Real()
	}
	return c
}

// Manual is a clock that moves only when told to. Its waits (After) fire
// when Advance or Set reaches their time. It is safe for concurrent use.
type Manual struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewManual returns a manual clock standing at start.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now is the clock's time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Since is Now().Sub(t).
func (m *Manual) Since(t time.Time) time.Duration { return m.Now().Sub(t) }

// After returns a channel that receives the clock's time once the clock
// has reached now+d; with d <= 0 it receives at once.
func (m *Manual) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if d <= 0 {
		ch <- m.now
		return ch
	}
	m.waiters = append(m.waiters, waiter{at: m.now.Add(d), ch: ch})
	return ch
}

// AfterTime returns a channel that receives the clock's time once the
// clock has reached t; with t not after now it receives at once. Unlike
// After(t.Sub(Now())), the wait is for t however the clock moves between
// the caller's reading and the call.
func (m *Manual) AfterTime(t time.Time) <-chan time.Time {
	ch := make(chan time.Time, 1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !t.After(m.now) {
		ch <- m.now
		return ch
	}
	m.waiters = append(m.waiters, waiter{at: t, ch: ch})
	return ch
}

// AfterTime waits on c until time t: with a clock that has an AfterTime
// method (Manual) it calls it, otherwise After(t.Sub(c.Now())).
func AfterTime(c Clock, t time.Time) <-chan time.Time {
	if a, ok := c.(interface {
		AfterTime(time.Time) <-chan time.Time
	}); ok {
		return a.AfterTime(t)
	}
	return c.After(t.Sub(c.Now()))
}

// Advance moves the clock forward by d and fires the waits that are due.
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setLocked(m.now.Add(d))
}

// Set moves the clock to t (forward or back) and fires the waits that
// are due.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setLocked(t)
}

func (m *Manual) setLocked(t time.Time) {
	m.now = t
	kept := m.waiters[:0]
	for _, w := range m.waiters {
		if !w.at.After(m.now) {
			w.ch <- m.now // buffered, never blocks
			continue
		}
		kept = append(kept, w)
	}
	clear(m.waiters[len(kept):])
	m.waiters = kept
}

// Waiters is the number of waits that have not fired yet: a test knows
// its code is blocked on the clock when it is above zero.
func (m *Manual) Waiters() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.waiters)
}
