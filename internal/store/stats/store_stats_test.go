package stats

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStoreStatsTickPrintsEachMinute(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 23, 58, 0, 0, time.Local)
	s := NewStoreStats(t0)
	var lines []string
	now := t0
	for sec := 1; sec <= 61; sec++ {
		now = t0.Add(time.Duration(sec) * time.Second)
		for i := 0; i < 10; i++ {
			s.RecordPut(1, 100, 2*time.Millisecond, false)
		}
		s.RecordGet(true, 3, time.Millisecond, false)
		s.RecordGet(false, 0, 0, false)
		lines = append(lines, s.Tick(now)...)
	}
	if len(lines) != 2 {
		t.Fatalf("lines %q", lines)
	}
	if want := "[STORETPS] put_tps 10.0 get_found_tps 1.0 get_miss_tps 1.0 get_transferred_tps 3.0"; lines[0] != want {
		t.Fatalf("tps line %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "[PAGECACHERT] TotalPut 610, PutMessageDistributeTime [<=0ms]:0 [0~10ms]:610 [10~50ms]:0 ") ||
		!strings.HasSuffix(lines[1], "[10s~]:0 ") {
		t.Fatalf("pagecache line %q", lines[1])
	}
	info := s.RuntimeInfo(now)
	checks := map[string]string{
		"putMessageTimesTotal":     "610",
		"putMessageSizeTotal":      "61000",
		"putMessageAverageSize":    "100.0",
		"putMessageEntireTimeMax":  "2",
		"putTps":                   "10.0 10.0 ",
		"getTotalTps":              "2.0 2.0 0.0",
		"msgPutTotalTodayNow":      "610",
		"msgGetTotalTodayNow":      "183",
		"runtime":                  "[ 0 days, 0 hours, 1 minutes, 1 seconds ]",
		"putLatency99":             "2.00",
		"putMessageDistributeTime": "[<=0ms]:0 [0~10ms]:610 [10~50ms]:0 [50~100ms]:0 [100~200ms]:0 [200~500ms]:0 [500ms~1s]:0 [1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 ",
	}
	for k, want := range checks {
		if info[k] != want {
			t.Errorf("%s = %q, want %q", k, info[k], want)
		}
	}
	if h := s.LastMinutePutLatency(); h.Count != 610 {
		t.Fatalf("minute histogram %v", h)
	}
	// No new line until another minute passes.
	if l := s.Tick(now.Add(time.Second)); l != nil {
		t.Fatalf("extra lines %q", l)
	}
}

func TestStoreStatsDayRollover(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 23, 59, 58, 0, time.Local)
	s := NewStoreStats(t0)
	s.Tick(t0)
	s.RecordPut(5, 10, 0, false)
	s.RecordPut(7, 10, 0, true) // system topic: not in the day totals
	s.RecordGet(true, 4, 0, false)
	s.Tick(t0.Add(time.Second))
	if a, b, c, d := s.DayTotals(); a|b|c|d != 0 {
		t.Fatalf("totals before midnight %d %d %d %d", a, b, c, d)
	}
	s.Tick(t0.Add(3 * time.Second)) // next day
	if a, b, c, d := s.DayTotals(); a != 5 || b != 0 || c != 4 || d != 0 {
		t.Fatalf("after first midnight %d %d %d %d", a, b, c, d)
	}
	s.RecordPut(1, 1, 0, false)
	s.Tick(t0.Add(24*time.Hour + 3*time.Second))
	if a, b, _, _ := s.DayTotals(); a != 6 || b != 5 {
		t.Fatalf("after second midnight %d %d", a, b)
	}
	if s.MsgPutTotalTodayNow() != 6 || s.PutTimesTotal() != 13 {
		t.Fatalf("now %d total %d", s.MsgPutTotalTodayNow(), s.PutTimesTotal())
	}
}

func TestStoreStatsConcurrentRecord(t *testing.T) {
	s := NewStoreStats(time.Unix(0, 0))
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				s.RecordPut(1, 10, time.Duration(i)*time.Microsecond, false)
				s.RecordGet(i%2 == 0, 1, time.Microsecond, false)
				s.RecordPutFailed()
				s.RecordDispatchBuffer(int64(i))
			}
		}()
	}
	for i := 0; i < 50; i++ {
		s.Tick(time.Unix(int64(i), 0))
		_ = s.RuntimeInfo(time.Unix(int64(i), 0))
	}
	wg.Wait()
	if s.PutTimesTotal() != 16000 || s.PutFailedTimes() != 16000 || s.PutLatency.Snapshot().Count != 16000 {
		t.Fatalf("totals %d %d", s.PutTimesTotal(), s.PutFailedTimes())
	}
}

func TestStoreStatsRunStops(t *testing.T) {
	s := NewStoreStats(time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx, nil, nil); close(done) }()
	cancel()
	<-done
}

func TestCounter(t *testing.T) {
	var c Counter
	c.Add(5)
	c.Inc()
	if c.Load() != 6 {
		t.Fatal(c.Load())
	}
	if c.StoreMax(3) != 6 || c.StoreMax(9) != 9 || c.Load() != 9 {
		t.Fatal("StoreMax")
	}
	c.Store(1)
	if c.Load() != 1 {
		t.Fatal("Store")
	}
}
