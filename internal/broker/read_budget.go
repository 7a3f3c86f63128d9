package broker

import (
	"sync"
	"time"
)

// readBudgetMaxWait caps one wait of a budget, so a rate changed at run
// time takes effect within this time.
const readBudgetMaxWait = time.Second

// readBudget is a token bucket over messages and bytes per second for a
// background reader (design rule 6). The bucket holds at most one
// second's worth of each; a read larger than a second's bytes is allowed
// once the byte bucket is full and leaves it in debt. Rates are read at
// every wait, so live configuration changes apply at once; a rate <= 0
// means that dimension is not limited.
type readBudget struct {
	clock serviceClock

	mu    sync.Mutex
	msgs  float64
	bytes float64
	last  time.Time
	init  bool
}

func newReadBudget(clock serviceClock) *readBudget { return &readBudget{clock: clock} }

// refillLocked adds the tokens earned since the last call.
func (r *readBudget) refillLocked(now time.Time, msgRate, byteRate int64) {
	if !r.init {
		r.msgs, r.bytes, r.last, r.init = float64(msgRate), float64(byteRate), now, true
		return
	}
	dt := now.Sub(r.last).Seconds()
	if dt < 0 {
		dt = 0
	}
	r.last = now
	if msgRate > 0 {
		r.msgs = min(float64(msgRate), r.msgs+dt*float64(msgRate))
	}
	if byteRate > 0 {
		r.bytes = min(float64(byteRate), r.bytes+dt*float64(byteRate))
	}
}

// take reserves one read of size bytes if the budget allows it now;
// otherwise it returns how long to wait before asking again.
func (r *readBudget) take(size int64, msgRate, byteRate int64) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refillLocked(r.clock.Now(), msgRate, byteRate)
	need := float64(size)
	if byteRate > 0 {
		need = min(need, float64(byteRate))
	}
	okMsgs := msgRate <= 0 || r.msgs >= 1
	okBytes := byteRate <= 0 || r.bytes >= need
	if okMsgs && okBytes {
		if msgRate > 0 {
			r.msgs--
		}
		if byteRate > 0 {
			r.bytes -= float64(size)
		}
		return 0, true
	}
	var wait float64
	if !okMsgs {
		wait = (1 - r.msgs) / float64(msgRate)
	}
	if !okBytes {
		wait = max(wait, (need-r.bytes)/float64(byteRate))
	}
	d := time.Duration(wait*float64(time.Second)) + time.Millisecond
	return min(d, readBudgetMaxWait), false
}

// charge takes size bytes after a read whose size was not known before
// (the bucket may go into debt).
func (r *readBudget) charge(size int64, msgRate, byteRate int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refillLocked(r.clock.Now(), msgRate, byteRate)
	if byteRate > 0 {
		r.bytes -= float64(size)
	}
}

// wait blocks until a read of size bytes fits the rates that rates()
// returns; it reports false when quit closes first.
func (r *readBudget) wait(size int64, rates func() (int64, int64), quit <-chan struct{}) bool {
	for {
		msgRate, byteRate := rates()
		d, ok := r.take(size, msgRate, byteRate)
		if ok {
			return true
		}
		select {
		case <-quit:
			return false
		case <-r.clock.After(d):
		}
	}
}
