package stats

import (
	"strings"
	"sync"
)

// RateWindows are the windows (in samples, one sample a second) of the
// three figures in RocketMQ's "putTps" style strings: 10 s, 60 s, 600 s.
var RateWindows = [3]int{10, 60, 600}

// rateSamplerCap keeps one sample more than the longest window, as RocketMQ
// keeps 601 snapshots.
const rateSamplerCap = 601

type rateSample struct {
	atMillis int64
	total    int64
}

// RateSampler turns a cumulative total sampled once a second into rates over
// the last N samples, as RocketMQ's CallSnapshot lists do. Sample is called
// by one background goroutine; the readers take the same small lock. Nothing
// on a hot path touches it.
type RateSampler struct {
	mu   sync.Mutex
	ring [rateSamplerCap]rateSample
	head int // index of the next write
	n    int // samples held (<= rateSamplerCap)
}

// Sample records the total at nowMillis.
func (r *RateSampler) Sample(nowMillis, total int64) {
	r.mu.Lock()
	r.ring[r.head] = rateSample{atMillis: nowMillis, total: total}
	r.head = (r.head + 1) % rateSamplerCap
	if r.n < rateSamplerCap {
		r.n++
	}
	r.mu.Unlock()
}

// Rate returns the per-second rate between the newest sample and the one
// window samples before it, and false when fewer than window+1 samples
// exist. Like RocketMQ's it is (Δtotal / Δmillis) * 1000, so equal stamps
// give NaN or ±Inf.
func (r *RateSampler) Rate(window int) (float64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rateLocked(window)
}

func (r *RateSampler) rateLocked(window int) (float64, bool) {
	if window < 1 || r.n <= window {
		return 0, false
	}
	last := r.ring[(r.head-1+rateSamplerCap)%rateSamplerCap]
	before := r.ring[(r.head-1-window+2*rateSamplerCap)%rateSamplerCap]
	total := float64(last.total - before.total)
	ms := float64(last.atMillis - before.atMillis)
	return total / ms * 1000, true
}

// RateString formats the rate over window samples as RocketMQ does: Java's
// Double.toString of the value, or "" when there are not enough samples.
func (r *RateSampler) RateString(window int) string {
	v, ok := r.Rate(window)
	if !ok {
		return ""
	}
	return JavaDouble(v)
}

// TPSString formats the three windows joined by single spaces, as RocketMQ's
// "putTps" runtime figure: "10s 60s 600s" (an unavailable window is empty,
// so a young broker shows e.g. "12.0  ").
func (r *RateSampler) TPSString() string {
	parts := make([]string, len(RateWindows))
	for i, w := range RateWindows {
		parts[i] = r.RateString(w)
	}
	return strings.Join(parts, " ")
}

// SumTPSString formats the three windows of the sum of several samplers'
// rates, each Java-formatted and never empty (a window without enough
// samples counts 0), as RocketMQ's "getTotalTps" (found + miss).
func SumTPSString(samplers ...*RateSampler) string {
	parts := make([]string, len(RateWindows))
	for i, w := range RateWindows {
		var sum float64
		for _, s := range samplers {
			if v, ok := s.Rate(w); ok {
				sum += v
			}
		}
		parts[i] = JavaDouble(sum)
	}
	return strings.Join(parts, " ")
}
