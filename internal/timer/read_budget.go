package timer

import (
	"time"

	"golang.org/x/time/rate"

	"github.com/spoolmq/spool/internal/clock"
)

// readBudget paces a background reader to a byte rate (design rule 6): a
// token bucket (rate.Limiter) of bytes that starts empty, holds at most
// one second's worth and goes into debt by each read, after which the
// reader sleeps until the debt is paid. It runs on the wall clock, not
// the service's Clock: it protects the disk, not due times.
type readBudget struct {
	rate  func() int64 // bytes per second, read at every take; <= 0 = unlimited
	clock clock.Clock
	lim   *rate.Limiter
	cur   int64 // the rate lim was last set to
}

func newReadBudget(rate func() int64) *readBudget {
	return &readBudget{rate: rate, clock: clock.Real()}
}

// take accounts n bytes and waits as needed; it reports false when quit
// closed while waiting.
func (b *readBudget) take(n int, quit <-chan struct{}) bool {
	r := b.rate()
	if r <= 0 {
		return true
	}
	now := b.clock.Now()
	switch {
	case b.lim == nil:
		b.lim = rate.NewLimiter(rate.Limit(r), int(r))
		debit(b.lim, now, int(r)) // start with nothing banked
	case r != b.cur:
		b.lim.SetLimitAt(now, rate.Limit(r))
		b.lim.SetBurstAt(now, int(r))
	}
	b.cur = r
	ahead := debit(b.lim, now, n)
	if ahead <= 0 {
		return true
	}
	select {
	case <-quit:
		return false
	case <-b.clock.After(ahead):
		return true
	}
}

// debit takes n tokens from l at now, into debt when l holds fewer, and
// returns how long until the debt is paid. A rate.Limiter refuses one
// reservation above its burst, so the burst is raised for it.
func debit(l *rate.Limiter, now time.Time, n int) time.Duration {
	if b := l.Burst(); n > b {
		l.SetBurstAt(now, n)
		defer l.SetBurstAt(now, b)
	}
	return l.ReserveN(now, n).DelayFrom(now)
}
