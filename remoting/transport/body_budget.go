package transport

import (
	"sync"
	"sync/atomic"
	"time"
)

// bodyBudget bounds the bytes of request bodies waiting in a server's
// executor queues. While the bound is reached, connection readers stop
// reading before their next frame (the kernel's socket buffers and TCP flow
// control push back on the peers); the time a reader spent paused counts as
// queue wait of the request it reads next, so [TIMEOUT_CLEAN_QUEUE] and the
// head-wait figures see it. A request is always admitted once read, so the
// bound is exceeded by at most one frame per connection.
type bodyBudget struct {
	limit    int64 // 0 = no bound
	used     atomic.Int64
	waiters  atomic.Int32
	pauses   atomic.Uint64
	pausedNs atomic.Int64

	mu sync.Mutex
	ch chan struct{} // closed when used drops below limit while someone waits
	// loops are the event loops with connections paused for the budget
	// (under mu); each is told once when there is room again.
	loops []*eventLoop
}

// over reports whether readers must pause.
func (b *bodyBudget) over() bool {
	return b != nil && b.limit > 0 && b.used.Load() >= b.limit
}

// add counts n queued bytes.
func (b *bodyBudget) add(n int) {
	if b != nil && b.limit > 0 && n > 0 {
		b.used.Add(int64(n))
	}
}

// release uncounts n bytes and wakes paused readers once below the limit.
func (b *bodyBudget) release(n int) {
	if b == nil || b.limit <= 0 || n <= 0 {
		return
	}
	if b.used.Add(-int64(n)) < b.limit && b.waiters.Load() > 0 {
		b.mu.Lock()
		if b.ch != nil {
			close(b.ch)
			b.ch = nil
		}
		b.mu.Unlock()
		b.notifyLoops()
	}
}

// waitLoop tells l when the budget has room again (at once when it has
// now): l has connections paused for it. The loop counts as one waiter
// until told.
func (b *bodyBudget) waitLoop(l *eventLoop) {
	b.mu.Lock()
	for _, w := range b.loops {
		if w == l {
			b.mu.Unlock()
			return
		}
	}
	b.loops = append(b.loops, l)
	b.waiters.Add(1)
	b.mu.Unlock()
	if !b.over() {
		b.notifyLoops()
	}
}

// notifyLoops tells the waiting loops that there is room.
func (b *bodyBudget) notifyLoops() {
	b.mu.Lock()
	loops := b.loops
	b.loops = nil
	b.waiters.Add(-int32(len(loops)))
	b.mu.Unlock()
	for _, l := range loops {
		l.post(loopReq{kind: reqBudget})
	}
}

// wait blocks until the budget has room or closed is closed; false when
// closed. It records the pause.
func (b *bodyBudget) wait(closed <-chan struct{}) bool {
	start := time.Now()
	b.pauses.Add(1)
	b.waiters.Add(1)
	defer func() {
		b.waiters.Add(-1)
		b.pausedNs.Add(int64(time.Since(start)))
	}()
	for b.used.Load() >= b.limit {
		b.mu.Lock()
		if b.ch == nil {
			b.ch = make(chan struct{})
		}
		ch := b.ch
		b.mu.Unlock()
		// A release between the check above and the channel's creation
		// found no channel to close: look again before sleeping.
		if b.used.Load() < b.limit {
			return true
		}
		select {
		case <-ch:
		case <-closed:
			return false
		}
	}
	return true
}
