package stats

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

const (
	subBucketBits  = 6
	subBucketCount = 1 << subBucketBits // 64
	// maxTrackedMicros is the first value that no longer has a bucket of
	// its own: 2^27 µs, about 134 s (the brief asks for at least 100 s).
	maxTrackedMicros = 1 << 27
	// histogramBuckets is the number of regular buckets plus one overflow
	// bucket for values at or above maxTrackedMicros.
	histogramBuckets = (27-subBucketBits)*subBucketCount + subBucketCount + 1
	overflowBucket   = histogramBuckets - 1
)

// Histogram is a lock-free latency histogram with microsecond resolution and
// log-linear buckets (64 per power of two, relative error below 1.6 %)
// covering 0 µs .. about 134 s; longer values land in one overflow bucket and
// the exact maximum is kept aside. The zero value is ready to use. Record is
// two atomic adds on one cache line plus a load (and a CAS only when a new
// maximum is seen); it never allocates or blocks.
type Histogram struct {
	// cells holds, per bucket, the count at 2*i and the sum of the recorded
	// durations in nanoseconds at 2*i+1, so one Record touches one line.
	cells [2 * histogramBuckets]atomic.Uint64
	max   atomic.Int64 // nanoseconds
}

// bucketIndex maps a value in microseconds to its bucket.
func bucketIndex(us uint64) int {
	if us < subBucketCount {
		return int(us)
	}
	if us >= maxTrackedMicros {
		return overflowBucket
	}
	e := bits.Len64(us) - (subBucketBits + 1)
	return e*subBucketCount + int(us>>uint(e))
}

// bucketUpper returns the largest value in microseconds that maps to bucket i
// (math.MaxInt64 for the overflow bucket).
func bucketUpper(i int) uint64 {
	if i < subBucketCount {
		return uint64(i)
	}
	if i >= overflowBucket {
		return math.MaxInt64
	}
	e := uint(i/subBucketCount - 1)
	m := uint64(i%subBucketCount + subBucketCount)
	return (m+1)<<e - 1
}

// Record adds one observation. Negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	i := bucketIndex(uint64(d / time.Microsecond))
	h.cells[2*i].Add(1)
	h.cells[2*i+1].Add(uint64(d))
	if int64(d) > h.max.Load() {
		for {
			cur := h.max.Load()
			if int64(d) <= cur || h.max.CompareAndSwap(cur, int64(d)) {
				break
			}
		}
	}
}

// Snapshot copies the histogram. Observations recorded while it runs may or
// may not be included, but Count always equals the sum of the copied buckets,
// so the percentiles agree with Count.
func (h *Histogram) Snapshot() HistogramSnapshot {
	s := HistogramSnapshot{counts: make([]uint64, histogramBuckets)}
	var sum uint64
	for i := 0; i < histogramBuckets; i++ {
		c := h.cells[2*i].Load()
		s.counts[i] = c
		s.Count += c
		sum += h.cells[2*i+1].Load()
	}
	s.Sum = time.Duration(sum)
	s.Max = time.Duration(h.max.Load())
	s.fill()
	return s
}

// HistogramSnapshot is a copy of a Histogram with its summary figures.
// Percentiles are the upper bound of the bucket holding that rank, never more
// than Max.
type HistogramSnapshot struct {
	Count uint64
	Mean  time.Duration
	P50   time.Duration
	P99   time.Duration
	P999  time.Duration
	Max   time.Duration
	// Sum is the total of all observations (for a Prometheus _sum).
	Sum time.Duration

	counts []uint64
}

func (s *HistogramSnapshot) fill() {
	if s.Count == 0 {
		s.Mean, s.P50, s.P99, s.P999 = 0, 0, 0, 0
		return
	}
	s.Mean = s.Sum / time.Duration(s.Count)
	s.P50 = s.Quantile(0.50)
	s.P99 = s.Quantile(0.99)
	s.P999 = s.Quantile(0.999)
}

// Quantile returns the value at quantile q (0 < q <= 1): the upper bound (in
// whole microseconds) of the bucket that holds the ceil(q*Count)-th
// observation, capped at Max.
func (s HistogramSnapshot) Quantile(q float64) time.Duration {
	if s.Count == 0 || len(s.counts) == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(s.Count)))
	if rank < 1 {
		rank = 1
	}
	if rank > s.Count {
		rank = s.Count
	}
	var seen uint64
	for i, c := range s.counts {
		seen += c
		if seen >= rank {
			up := bucketUpper(i)
			if up >= uint64(math.MaxInt64/int64(time.Microsecond)) {
				return s.Max
			}
			d := time.Duration(up) * time.Microsecond
			if s.Max > 0 && d > s.Max {
				d = s.Max
			}
			return d
		}
	}
	return s.Max
}

// Sub returns the observations recorded between prev and s (prev must be an
// earlier snapshot of the same histogram). Max of the result is the upper
// bound of the highest non-empty bucket in the interval, capped at s.Max.
func (s HistogramSnapshot) Sub(prev HistogramSnapshot) HistogramSnapshot {
	d := HistogramSnapshot{counts: make([]uint64, histogramBuckets)}
	top := -1
	for i := range d.counts {
		var a, b uint64
		if i < len(s.counts) {
			a = s.counts[i]
		}
		if i < len(prev.counts) {
			b = prev.counts[i]
		}
		if a > b {
			d.counts[i] = a - b
			d.Count += a - b
			top = i
		}
	}
	if s.Sum > prev.Sum {
		d.Sum = s.Sum - prev.Sum
	}
	if top >= 0 {
		up := bucketUpper(top)
		if up >= uint64(math.MaxInt64/int64(time.Microsecond)) {
			d.Max = s.Max
		} else {
			d.Max = time.Duration(up) * time.Microsecond
			if d.Max > s.Max {
				d.Max = s.Max
			}
		}
	}
	d.fill()
	return d
}

// String formats the summary for logs, in microseconds.
func (s HistogramSnapshot) String() string {
	us := func(d time.Duration) int64 { return int64(d / time.Microsecond) }
	return fmt.Sprintf("count=%d mean=%dus p50=%dus p99=%dus p999=%dus max=%dus",
		s.Count, us(s.Mean), us(s.P50), us(s.P99), us(s.P999), us(s.Max))
}

// Bucket is one non-empty histogram bucket: Count observations at or below
// UpperMicros (and above the previous bucket's bound).
type Bucket struct {
	UpperMicros int64 // math.MaxInt64 for the overflow bucket
	Count       uint64
}

// Buckets lists the non-empty buckets in increasing order, for exporters.
func (s HistogramSnapshot) Buckets() []Bucket {
	var out []Bucket
	for i, c := range s.counts {
		if c > 0 {
			out = append(out, Bucket{UpperMicros: int64(bucketUpper(i)), Count: c})
		}
	}
	return out
}
