package broker

import (
	"sync"
	"time"
)

// coldReadBudget is a token bucket of bytes: it refills at the configured
// rate up to one second's worth, and may go into debt by the part of a
// read that exceeded the tokens (a read returns at least one message).
type coldReadBudget struct {
	mu     sync.Mutex
	now    func() time.Time
	tokens float64
	last   time.Time
	rate   int64
}

// take refills the bucket and returns the bytes available now, or, when
// there are none, how long until there will be.
func (c *coldReadBudget) take(rate int64) (allow int64, wait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.last.IsZero() || c.rate != rate {
		// First use, or the rate was changed live: start with a full
		// second's worth (keeping any debt).
		c.tokens = float64(rate) + min(c.tokens, 0)
		c.rate = rate
	} else if dt := now.Sub(c.last); dt > 0 {
		c.tokens = min(float64(rate), c.tokens+float64(rate)*dt.Seconds())
	}
	c.last = now
	if c.tokens >= 1 {
		return int64(c.tokens), 0
	}
	wait = time.Duration((1 - c.tokens) / float64(rate) * float64(time.Second))
	return 0, max(wait, time.Millisecond)
}

// charge takes n bytes from the bucket.
func (c *coldReadBudget) charge(n int64) {
	c.mu.Lock()
	c.tokens -= float64(n)
	c.mu.Unlock()
}
