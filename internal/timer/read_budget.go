package timer

import (
	"time"
)

// readBudget paces a background reader to a byte rate (design rule 6): it
// lets the reader run as long as the bytes read stay within rate times the
// time since it started, and sleeps otherwise. It uses the real clock, not
// the service's Clock: it protects the disk, not due times.
type readBudget struct {
	rate  func() int64 // bytes per second; <= 0 = unlimited
	start time.Time
	used  int64
}

func newReadBudget(rate func() int64) *readBudget {
	return &readBudget{rate: rate, start: time.Now()}
}

// take accounts n bytes and waits as needed; it reports false when quit
// closed while waiting.
func (b *readBudget) take(n int, quit <-chan struct{}) bool {
	b.used += int64(n)
	r := b.rate()
	if r <= 0 {
		return true
	}
	ahead := time.Duration(float64(b.used)/float64(r)*float64(time.Second)) - time.Since(b.start)
	if ahead <= 0 {
		// Do not bank more than one second of unused budget.
		if -ahead > time.Second {
			b.start = time.Now().Add(-time.Second)
			b.used = r
		}
		return true
	}
	t := time.NewTimer(ahead)
	defer t.Stop()
	select {
	case <-quit:
		return false
	case <-t.C:
		return true
	}
}
