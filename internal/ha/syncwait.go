package ha

import (
	"slices"
	"sync"
	"time"

	"github.com/spoolmq/spool/internal/clock"
)

// Outcome is how a SYNC_MASTER's replication wait ends.
type Outcome int

const (
	// ReplicaOK: enough copies hold the message (PUT_OK, SEND_OK).
	ReplicaOK Outcome = iota
	// FlushSlaveTimeout: no quorum within slaveTimeout
	// (FLUSH_SLAVE_TIMEOUT, 12).
	FlushSlaveTimeout
	// SlaveNotAvailable: too few slaves in sync to wait at all
	// (SLAVE_NOT_AVAILABLE, 11).
	SlaveNotAvailable
	// InSyncReplicasNotEnough: controller mode, the sync-state set is
	// smaller than minInSyncReplicas (RocketMQ answers SYSTEM_ERROR, 1,
	// "in-sync replicas not enough").
	InSyncReplicasNotEnough
	// Fenced: controller mode, the master lost its controller lease and
	// acknowledges nothing (SERVICE_NOT_AVAILABLE, 14).
	Fenced
	// NotMaster: controller mode, the broker is not the master (any more).
	NotMaster
)

// Code is RocketMQ's response code for the outcome (0 for success).
func (o Outcome) Code() int {
	switch o {
	case FlushSlaveTimeout:
		return 12
	case SlaveNotAvailable:
		return 11
	case InSyncReplicasNotEnough:
		return 1
	case Fenced, NotMaster:
		return 14
	}
	return 0
}

func (o Outcome) String() string {
	switch o {
	case FlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case SlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	case InSyncReplicasNotEnough:
		return "IN_SYNC_REPLICAS_NOT_ENOUGH"
	case Fenced:
		return "FENCED"
	case NotMaster:
		return "NOT_MASTER"
	}
	return "PUT_OK"
}

// Copies is the number of copies, the master's included, a SYNC_MASTER
// waits for: max(inSyncReplicas, 2). RocketMQ 5 stops waiting when
// inSyncReplicas is 1 (its default); Spool always waits for a slave.
func Copies(inSyncReplicas int) int { return max(inSyncReplicas, 2) }

// Admit decides at registration: with fewer in-sync slaves than the
// copies need (copies-1), the put is answered SLAVE_NOT_AVAILABLE at
// once; otherwise it waits (ok=true).
func Admit(inSyncSlaves, copies int) (Outcome, bool) {
	if inSyncSlaves < copies-1 {
		return SlaveNotAvailable, false
	}
	return ReplicaOK, true
}

// QuorumOffset is the highest offset that at least copies-1 of the given
// slaves' acknowledged offsets (one per distinct slave) reach, or -1 when
// there are fewer slaves than that.
func QuorumOffset(acks []int64, copies int) int64 {
	k := copies - 1
	if k <= 0 {
		return int64(1<<63 - 1)
	}
	if len(acks) < k {
		return -1
	}
	s := slices.Clone(acks)
	slices.SortFunc(s, func(a, b int64) int {
		switch {
		case a > b:
			return -1
		case a < b:
			return 1
		}
		return 0
	})
	return s[k-1]
}

type syncItem[T any] struct {
	end      int64
	deadline time.Time
	v        T
}

// SyncWaiters is the set of puts waiting for their replicas: a plain
// structure with no clock, timer, lock or goroutine of its own, like the
// store's group-commit waiters. Each waiter leaves exactly once, through
// Covered, Expired or Drain. Waiters are kept in order of their end
// offset, so Covered takes a prefix.
type SyncWaiters[T any] struct {
	ws   []syncItem[T]
	next time.Time // no later than the earliest deadline (zero when empty)
}

// Add inserts a waiter for a record run ending at end and reports whether
// its deadline is earlier than every deadline already held (the driver
// re-arms its one timer).
func (s *SyncWaiters[T]) Add(end int64, deadline time.Time, v T) (earliest bool) {
	i := len(s.ws)
	s.ws = append(s.ws, syncItem[T]{})
	for ; i > 0 && s.ws[i-1].end > end; i-- {
		s.ws[i] = s.ws[i-1]
	}
	s.ws[i] = syncItem[T]{end: end, deadline: deadline, v: v}
	if s.next.IsZero() || deadline.Before(s.next) {
		s.next = deadline
		return true
	}
	return false
}

// Covered removes the waiters whose records end at or before acked (the
// offset enough replicas hold) and appends them to out, in end order.
func (s *SyncWaiters[T]) Covered(acked int64, out []T) []T {
	n := 0
	for n < len(s.ws) && s.ws[n].end <= acked {
		out = append(out, s.ws[n].v)
		n++
	}
	if n > 0 {
		rest := copy(s.ws, s.ws[n:])
		clear(s.ws[rest:])
		s.ws = s.ws[:rest]
		if rest == 0 {
			s.next = time.Time{}
		}
	}
	return out
}

// Expired removes the waiters whose deadline is not after now, appends
// them to out and returns the earliest deadline left (zero when none).
func (s *SyncWaiters[T]) Expired(now time.Time, out []T) ([]T, time.Time) {
	var next time.Time
	keep := s.ws[:0]
	for _, w := range s.ws {
		if !now.Before(w.deadline) {
			out = append(out, w.v)
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
	return out, next
}

// Drain removes every waiter and appends it to out.
func (s *SyncWaiters[T]) Drain(out []T) []T {
	for _, w := range s.ws {
		out = append(out, w.v)
	}
	clear(s.ws)
	s.ws = s.ws[:0]
	s.next = time.Time{}
	return out
}

// Len is the number of waiters.
func (s *SyncWaiters[T]) Len() int { return len(s.ws) }

// Next is no later than the earliest deadline held (zero when empty).
func (s *SyncWaiters[T]) Next() time.Time { return s.next }

// GroupTransfer drives SyncWaiters: puts register with Wait, the master
// reports the offset enough replicas hold with Advance, and one goroutine
// with one clock wait answers FLUSH_SLAVE_TIMEOUT to the waiters whose
// deadline passed. No goroutine or timer per message.
type GroupTransfer struct {
	clock clock.Clock

	mu         sync.Mutex
	w          SyncWaiters[func(Outcome)]
	replicated int64
	closed     bool

	kick chan struct{}
	stop chan struct{}
	wg   sync.WaitGroup
}

// NewGroupTransfer returns a started driver reading time from c.
func NewGroupTransfer(c clock.Clock) *GroupTransfer {
	g := &GroupTransfer{clock: clock.Or(c), replicated: -1, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	g.wg.Add(1)
	go g.reap()
	return g
}

// Wait registers done for a record run ending at end. inSync is the
// number of slaves in sync now and copies the copies needed (Copies).
// done is called exactly once, possibly before Wait returns, never with a
// lock of the driver held.
func (g *GroupTransfer) Wait(end int64, timeout time.Duration, inSync, copies int, done func(Outcome)) {
	if o, ok := Admit(inSync, copies); !ok {
		done(o)
		return
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		done(SlaveNotAvailable)
		return
	}
	if end <= g.replicated {
		g.mu.Unlock()
		done(ReplicaOK)
		return
	}
	earliest := g.w.Add(end, g.clock.Now().Add(timeout), done)
	g.mu.Unlock()
	if earliest {
		select {
		case g.kick <- struct{}{}:
		default:
		}
	}
}

// Advance records that enough replicas hold everything before replicated
// and answers the waiters it covers.
func (g *GroupTransfer) Advance(replicated int64) {
	var buf [16]func(Outcome)
	g.mu.Lock()
	if replicated <= g.replicated {
		g.mu.Unlock()
		return
	}
	g.replicated = replicated
	done := g.w.Covered(replicated, buf[:0])
	g.mu.Unlock()
	for _, d := range done {
		d(ReplicaOK)
	}
}

// Pending is the number of puts waiting.
func (g *GroupTransfer) Pending() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.w.Len()
}

// FailAll answers every waiting put with o at once (the driver keeps
// running).
func (g *GroupTransfer) FailAll(o Outcome) {
	g.mu.Lock()
	left := g.w.Drain(nil)
	g.mu.Unlock()
	for _, d := range left {
		d(o)
	}
}

// Close stops the driver and answers every waiter FLUSH_SLAVE_TIMEOUT;
// later Waits answer SLAVE_NOT_AVAILABLE.
func (g *GroupTransfer) Close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	left := g.w.Drain(nil)
	g.mu.Unlock()
	close(g.stop)
	g.wg.Wait()
	for _, d := range left {
		d(FlushSlaveTimeout)
	}
}

func (g *GroupTransfer) reap() {
	defer g.wg.Done()
	var expired []func(Outcome)
	for {
		g.mu.Lock()
		var next time.Time
		expired, next = g.w.Expired(g.clock.Now(), expired[:0])
		g.mu.Unlock()
		for _, d := range expired {
			d(FlushSlaveTimeout)
		}
		clear(expired)
		var due <-chan time.Time
		if !next.IsZero() {
			due = g.clock.After(next.Sub(g.clock.Now()))
		}
		select {
		case <-g.stop:
			return
		case <-g.kick:
		case <-due:
		}
	}
}
