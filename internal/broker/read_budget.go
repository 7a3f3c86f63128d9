package broker

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/spoolmq/spool/internal/clock"
)

// readBudgetMaxWait caps one wait of a budget, so a rate changed at run
// time takes effect within this time.
const readBudgetMaxWait = time.Second

// readBudget paces a background reader to messages and bytes per second
// (design rule 6): one token bucket (rate.Limiter) for each, holding at
// most one second's worth; a read larger than a second's bytes is allowed
// once the byte bucket is full and leaves it in debt. Rates are read at
// every wait, so live configuration changes apply at once; a rate <= 0
// means that dimension is not limited.
type readBudget struct {
	clock clock.Clock

	mu    sync.Mutex
	msgs  bucket
	bytes bucket
}

func newReadBudget(c clock.Clock) *readBudget { return &readBudget{clock: clock.Or(c)} }

// take reserves one read of size bytes if the budget allows it now;
// otherwise it returns how long to wait before asking again.
func (r *readBudget) take(size int64, msgRate, byteRate int64) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	msgs, bytes := r.msgs.tokens(now, msgRate), r.bytes.tokens(now, byteRate)
	need := float64(size)
	if byteRate > 0 {
		need = min(need, float64(byteRate))
	}
	okMsgs := msgRate <= 0 || msgs >= 1
	okBytes := byteRate <= 0 || bytes >= need
	if okMsgs && okBytes {
		r.msgs.debit(now, 1)
		r.bytes.debit(now, size)
		return 0, true
	}
	var wait float64
	if !okMsgs {
		wait = (1 - msgs) / float64(msgRate)
	}
	if !okBytes {
		wait = max(wait, (need-bytes)/float64(byteRate))
	}
	d := time.Duration(wait*float64(time.Second)) + time.Millisecond
	return min(d, readBudgetMaxWait), false
}

// charge takes size bytes after a read whose size was not known before
// (the bucket may go into debt).
func (r *readBudget) charge(size int64, msgRate, byteRate int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	r.msgs.tokens(now, msgRate)
	r.bytes.tokens(now, byteRate)
	r.bytes.debit(now, size)
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

// bucket is one dimension of a budget: a rate.Limiter whose burst is one
// second's worth of its rate, with no limiter while the rate is <= 0.
type bucket struct {
	lim  *rate.Limiter
	rate int64 // the rate lim was last set to; <= 0: not limited
}

// tokens applies the current rate and returns the tokens held at now
// (negative in debt). A first limiter starts full; a changed rate keeps
// the tokens (and any debt), capped at the new burst.
func (b *bucket) tokens(now time.Time, r int64) float64 {
	b.rate = r
	if r <= 0 {
		return 0
	}
	switch {
	case b.lim == nil:
		b.lim = rate.NewLimiter(rate.Limit(r), burst(r))
	case b.lim.Limit() != rate.Limit(r):
		b.lim.SetLimitAt(now, rate.Limit(r))
		b.lim.SetBurstAt(now, burst(r))
	}
	return b.lim.TokensAt(now)
}

// debit takes n tokens at now, into debt when fewer are held; nothing
// while the rate is not limited.
func (b *bucket) debit(now time.Time, n int64) {
	if b.rate > 0 && n > 0 {
		debit(b.lim, now, n)
	}
}

// debit takes n tokens from l at now, into debt when l holds fewer. A
// rate.Limiter refuses one reservation above its burst, so the burst is
// raised for it.
func debit(l *rate.Limiter, now time.Time, n int64) {
	if b := l.Burst(); n > int64(b) {
		l.SetBurstAt(now, burst(n))
		defer l.SetBurstAt(now, b)
	}
	l.ReserveN(now, burst(n))
}

// burst is n as a limiter's burst (an int).
func burst(n int64) int { return int(min(n, int64(maxBurst))) }

const maxBurst = 1<<31 - 1
