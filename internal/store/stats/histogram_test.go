package stats

import (
	"math"
	"math/rand"
	"sync"
	"testing"
	"time"
)

func TestBucketIndexMonotonicAndBounds(t *testing.T) {
	prev := -1
	for us := uint64(0); us < 1<<20; us++ {
		i := bucketIndex(us)
		if i < prev || i > prev+1 {
			t.Fatalf("index jumps at %d: %d after %d", us, i, prev)
		}
		if up := bucketUpper(i); us > up {
			t.Fatalf("value %d above its bucket %d upper bound %d", us, i, up)
		}
		if i > 0 && us <= bucketUpper(i-1) {
			t.Fatalf("value %d also fits bucket %d", us, i-1)
		}
		prev = i
	}
	// 100 s still has a regular bucket; 1000 s goes to the overflow bucket.
	if i := bucketIndex(100_000_000); i >= overflowBucket {
		t.Fatalf("100 s lands in overflow bucket")
	}
	if i := bucketIndex(1_000_000_000); i != overflowBucket {
		t.Fatalf("1000 s index %d, want overflow %d", i, overflowBucket)
	}
	if bucketIndex(maxTrackedMicros-1) != overflowBucket-1 {
		t.Fatalf("last regular bucket %d, want %d", bucketIndex(maxTrackedMicros-1), overflowBucket-1)
	}
}

func TestBucketRelativeError(t *testing.T) {
	for _, us := range []uint64{1, 63, 64, 65, 1000, 12345, 999_999, 100_000_000} {
		i := bucketIndex(us)
		up := bucketUpper(i)
		if float64(up-us) > 0.016*float64(us)+1 {
			t.Errorf("value %d: bucket upper %d too far", us, up)
		}
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	s := h.Snapshot()
	if s.Count != 1000 {
		t.Fatalf("count %d", s.Count)
	}
	if s.Max != 1000*time.Microsecond {
		t.Fatalf("max %v", s.Max)
	}
	if s.Mean != 500500*time.Nanosecond {
		t.Fatalf("mean %v", s.Mean)
	}
	within := func(name string, got time.Duration, want int) {
		t.Helper()
		w := time.Duration(want) * time.Microsecond
		if got < w || float64(got-w) > 0.016*float64(w) {
			t.Errorf("%s = %v, want about %v", name, got, w)
		}
	}
	within("p50", s.P50, 500)
	within("p99", s.P99, 990)
	within("p999", s.P999, 999)
	if s.Quantile(1) != s.Max {
		t.Errorf("q=1 %v != max %v", s.Quantile(1), s.Max)
	}
}

func TestHistogramEmptyAndNegative(t *testing.T) {
	var h Histogram
	s := h.Snapshot()
	if s.Count != 0 || s.P99 != 0 || s.Mean != 0 || s.Max != 0 {
		t.Fatalf("empty snapshot %+v", s)
	}
	h.Record(-time.Second)
	s = h.Snapshot()
	if s.Count != 1 || s.Max != 0 || s.P50 != 0 {
		t.Fatalf("negative recorded as %+v", s)
	}
}

func TestHistogramOverflowKeepsExactMax(t *testing.T) {
	var h Histogram
	h.Record(time.Millisecond)
	h.Record(500 * time.Second)
	s := h.Snapshot()
	if s.Max != 500*time.Second || s.Quantile(1) != 500*time.Second {
		t.Fatalf("max %v q1 %v", s.Max, s.Quantile(1))
	}
}

func TestHistogramSub(t *testing.T) {
	var h Histogram
	for i := 0; i < 100; i++ {
		h.Record(10 * time.Millisecond)
	}
	a := h.Snapshot()
	for i := 0; i < 10; i++ {
		h.Record(20 * time.Microsecond)
	}
	d := h.Snapshot().Sub(a)
	if d.Count != 10 || d.P99 != 20*time.Microsecond || d.Max != 20*time.Microsecond || d.Mean != 20*time.Microsecond {
		t.Fatalf("delta %v", d)
	}
}

func TestHistogramConcurrent(t *testing.T) {
	var h Histogram
	const workers, per = 8, 5000
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed))
			for i := 0; i < per; i++ {
				h.Record(time.Duration(r.Intn(10_000_000)))
			}
		}(int64(w))
	}
	// Snapshots taken concurrently must be self-consistent.
	for i := 0; i < 20; i++ {
		s := h.Snapshot()
		if s.Count > 0 && (s.P50 > s.P99 || s.P99 > s.P999 || s.P999 > s.Max) {
			t.Fatalf("inconsistent snapshot %v", s)
		}
	}
	wg.Wait()
	if s := h.Snapshot(); s.Count != workers*per {
		t.Fatalf("count %d, want %d", s.Count, workers*per)
	}
}

// BenchmarkHistogramRecord8 records from 8 goroutines at once.
func BenchmarkHistogramRecord8(b *testing.B) {
	var h Histogram
	const workers = 8
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := 0; w < workers; w++ {
		n := b.N / workers
		if w == 0 {
			n += b.N % workers
		}
		wg.Add(1)
		go func(n int, seed int) {
			defer wg.Done()
			d := time.Duration(seed) * 7 * time.Microsecond
			for i := 0; i < n; i++ {
				h.Record(d + time.Duration(i&1023)*time.Microsecond)
			}
		}(n, w)
	}
	wg.Wait()
}

func BenchmarkHistogramRecord1(b *testing.B) {
	var h Histogram
	for i := 0; i < b.N; i++ {
		h.Record(time.Duration(i&1023) * time.Microsecond)
	}
}

func TestHistogramBucketsAndSum(t *testing.T) {
	var h Histogram
	h.Record(3 * time.Microsecond)
	h.Record(3 * time.Microsecond)
	h.Record(1000 * time.Second)
	s := h.Snapshot()
	b := s.Buckets()
	if len(b) != 2 || b[0] != (Bucket{UpperMicros: 3, Count: 2}) || b[1].Count != 1 || b[1].UpperMicros != math.MaxInt64 {
		t.Fatalf("buckets %+v", b)
	}
	if s.Sum != 1000*time.Second+6*time.Microsecond {
		t.Fatalf("sum %v", s.Sum)
	}
}
