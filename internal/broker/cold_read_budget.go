package broker

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/spoolmq/spool/internal/clock"
)

// coldReadBudget is a token bucket of bytes (a rate.Limiter): it refills
// at the configured rate up to one second's worth, and may go into debt
// by the part of a read that exceeded the tokens (a read returns at least
// one message).
type coldReadBudget struct {
	mu    sync.Mutex
	clock clock.Clock
	lim   *rate.Limiter
	rate  int64
}

// take refills the bucket and returns the bytes available now, or, when
// there are none, how long until there will be.
func (c *coldReadBudget) take(r int64) (allow int64, wait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if c.lim == nil || c.rate != r {
		// First use, or the rate was changed live: start with a full
		// second's worth (keeping any debt).
		var debt float64
		if c.lim != nil {
			debt = min(c.lim.TokensAt(now), 0)
		}
		c.lim = rate.NewLimiter(rate.Limit(r), burst(r))
		c.rate = r
		if debt < 0 {
			debit(c.lim, now, int64(-debt))
		}
	}
	tokens := c.lim.TokensAt(now)
	if tokens >= 1 {
		return int64(tokens), 0
	}
	wait = time.Duration((1 - tokens) / float64(r) * float64(time.Second))
	return 0, max(wait, time.Millisecond)
}

// charge takes n bytes from the bucket.
func (c *coldReadBudget) charge(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lim != nil && n > 0 {
		debit(c.lim, c.clock.Now(), n)
	}
}
