package stats

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// PageCacheRTBuckets names the buckets of RocketMQ's put-latency
// distribution, in the order and spelling of its PAGECACHERT line.
var PageCacheRTBuckets = [PageCacheRTBucketCount]string{
	"[<=0ms]", "[0~10ms]", "[10~50ms]", "[50~100ms]", "[100~200ms]", "[200~500ms]",
	"[500ms~1s]", "[1~2s]", "[2~3s]", "[3~4s]", "[4~5s]", "[5~10s]", "[10s~]",
}

// PageCacheRTBucketCount is the number of PAGECACHERT buckets.
const PageCacheRTBucketCount = 13

// pageCacheRTBounds are the exclusive upper bounds (milliseconds) of buckets
// 1..11; bucket 0 is "<= 0 ms" and bucket 12 everything from 10 s.
var pageCacheRTBounds = [...]int64{10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10000}

// PageCacheRTBucket returns the PAGECACHERT bucket of a put that took ms
// whole milliseconds (RocketMQ's rule: <= 0 is bucket 0, then upper bounds
// exclusive).
func PageCacheRTBucket(ms int64) int {
	if ms <= 0 {
		return 0
	}
	for i, b := range pageCacheRTBounds {
		if ms < b {
			return i + 1
		}
	}
	return PageCacheRTBucketCount - 1
}

// PageCacheRT is RocketMQ's put-latency distribution in milliseconds. The
// counters are cumulative and lock-free; Rotate (called once a minute by one
// goroutine) returns the counts since the previous Rotate, so no
// observation is lost at the minute boundary.
type PageCacheRT struct {
	counts [PageCacheRTBucketCount]Counter
	maxMs  Counter

	rotateMu sync.Mutex // held only by Rotate (never by Record)
	last     [PageCacheRTBucketCount]int64
	lastMin  atomic.Pointer[PageCacheRTCounts]
}

// PageCacheRTCounts is one interval's distribution.
type PageCacheRTCounts [PageCacheRTBucketCount]int64

// Record adds one put that took d. Sub-millisecond puts count as 0 ms, as
// RocketMQ's millisecond clock does.
func (p *PageCacheRT) Record(d time.Duration) {
	ms := d.Milliseconds()
	p.counts[PageCacheRTBucket(ms)].Inc()
	if ms > p.maxMs.Load() {
		p.maxMs.StoreMax(ms)
	}
}

// MaxMillis is the longest put seen since start (putMessageEntireTimeMax).
func (p *PageCacheRT) MaxMillis() int64 { return p.maxMs.Load() }

// Cumulative returns the counts since start.
func (p *PageCacheRT) Cumulative() PageCacheRTCounts {
	var c PageCacheRTCounts
	for i := range c {
		c[i] = p.counts[i].Load()
	}
	return c
}

// Rotate returns the counts recorded since the previous Rotate (since start
// for the first) and remembers them as the last complete interval.
func (p *PageCacheRT) Rotate() PageCacheRTCounts {
	p.rotateMu.Lock()
	defer p.rotateMu.Unlock()
	var c PageCacheRTCounts
	for i := range c {
		now := p.counts[i].Load()
		c[i] = now - p.last[i]
		p.last[i] = now
	}
	cp := c
	p.lastMin.Store(&cp)
	return c
}

// LastInterval returns the counts of the last complete interval (what
// RocketMQ reports as putMessageDistributeTime), and false before the first
// Rotate.
func (p *PageCacheRT) LastInterval() (PageCacheRTCounts, bool) {
	c := p.lastMin.Load()
	if c == nil {
		return PageCacheRTCounts{}, false
	}
	return *c, true
}

// Total is the number of puts in c.
func (c PageCacheRTCounts) Total() int64 {
	var t int64
	for _, v := range c {
		t += v
	}
	return t
}

// DistributionString formats c the way RocketMQ's putMessageDistributeTime
// does: "[<=0ms]:N [0~10ms]:N ... [10s~]:N " (each bucket followed by one
// space, the last one included).
func (c PageCacheRTCounts) DistributionString() string {
	b := make([]byte, 0, 192)
	for i, v := range c {
		b = append(b, PageCacheRTBuckets[i]...)
		b = append(b, ':')
		b = strconv.AppendInt(b, v, 10)
		b = append(b, ' ')
	}
	return string(b)
}

// PageCacheRTLine formats the line RocketMQ logs once a minute:
//
//	[PAGECACHERT] TotalPut N, PutMessageDistributeTime [<=0ms]:N [0~10ms]:N ... [10s~]:N
//
// with a trailing space after the last bucket, exactly as RocketMQ prints it.
func (c PageCacheRTCounts) PageCacheRTLine() string {
	return "[PAGECACHERT] TotalPut " + strconv.FormatInt(c.Total(), 10) +
		", PutMessageDistributeTime " + c.DistributionString()
}
