package stats

import (
	"sync"
	"testing"
	"time"
)

func TestPageCacheRTBucketBoundaries(t *testing.T) {
	cases := []struct {
		ms   int64
		want int
	}{
		{-5, 0}, {0, 0}, {1, 1}, {9, 1}, {10, 2}, {49, 2}, {50, 3}, {99, 3}, {100, 4}, {199, 4},
		{200, 5}, {499, 5}, {500, 6}, {999, 6}, {1000, 7}, {1999, 7}, {2000, 8}, {2999, 8},
		{3000, 9}, {3999, 9}, {4000, 10}, {4999, 10}, {5000, 11}, {9999, 11}, {10000, 12}, {1 << 40, 12},
	}
	for _, c := range cases {
		if got := PageCacheRTBucket(c.ms); got != c.want {
			t.Errorf("%d ms -> bucket %d (%s), want %d (%s)", c.ms, got, PageCacheRTBuckets[got], c.want, PageCacheRTBuckets[c.want])
		}
	}
}

func TestPageCacheRTLineExact(t *testing.T) {
	var p PageCacheRT
	p.Record(200 * time.Microsecond) // 0 ms
	p.Record(999 * time.Microsecond) // still 0 ms
	p.Record(3 * time.Millisecond)
	p.Record(75 * time.Millisecond)
	p.Record(11 * time.Second)
	c := p.Rotate()
	want := "[PAGECACHERT] TotalPut 5, PutMessageDistributeTime [<=0ms]:2 [0~10ms]:1 [10~50ms]:0 [50~100ms]:1 " +
		"[100~200ms]:0 [200~500ms]:0 [500ms~1s]:0 [1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:1 "
	if got := c.PageCacheRTLine(); got != want {
		t.Fatalf("line\n got %q\nwant %q", got, want)
	}
	if p.MaxMillis() != 11000 {
		t.Fatalf("max %d", p.MaxMillis())
	}
	// The next interval starts empty; nothing recorded in between is lost.
	p.Record(time.Millisecond)
	c = p.Rotate()
	if c.Total() != 1 || c[1] != 1 {
		t.Fatalf("second interval %v", c)
	}
	last, ok := p.LastInterval()
	if !ok || last != c {
		t.Fatalf("last interval %v %v", last, ok)
	}
	if cum := p.Cumulative(); cum.Total() != 6 {
		t.Fatalf("cumulative %v", cum)
	}
}

func TestPageCacheRTEmptyLine(t *testing.T) {
	var p PageCacheRT
	if _, ok := p.LastInterval(); ok {
		t.Fatal("interval before first rotate")
	}
	want := "[PAGECACHERT] TotalPut 0, PutMessageDistributeTime [<=0ms]:0 [0~10ms]:0 [10~50ms]:0 [50~100ms]:0 " +
		"[100~200ms]:0 [200~500ms]:0 [500ms~1s]:0 [1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 "
	if got := p.Rotate().PageCacheRTLine(); got != want {
		t.Fatalf("got %q", got)
	}
}

// Records racing with Rotate: every record lands in exactly one interval.
func TestPageCacheRTRotateLosesNothing(t *testing.T) {
	var p PageCacheRT
	const workers, per = 4, 10000
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				p.Record(time.Duration(i%30) * time.Millisecond)
			}
		}()
	}
	var total int64
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		total += p.Rotate().Total()
	}
	if total != workers*per {
		t.Fatalf("rotated %d, want %d", total, workers*per)
	}
}
