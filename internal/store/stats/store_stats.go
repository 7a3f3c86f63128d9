package stats

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// printInterval is how often the STORETPS and PAGECACHERT lines are
// produced, as RocketMQ's printTPSInterval (60 s).
const printInterval = 60 * time.Second

// StoreStats is the store's equivalent of RocketMQ's StoreStatsService: put
// and get counters, the put-latency histogram (microseconds) and PAGECACHERT
// distribution, the rate samplers behind putTps/getFoundTps/..., and the
// day totals behind msgPutTotalTodayNow. The Record* methods are lock-free
// and safe from any goroutine; Tick is called once a second by one driver
// (Run, or a test with its own clock).
type StoreStats struct {
	// PutLatency is the whole put time (lock wait, append, flush wait).
	PutLatency Histogram
	// PageCacheRT is the same put time in RocketMQ's millisecond buckets.
	PageCacheRT PageCacheRT

	putTimes       Counter
	putSize        Counter
	putFailed      Counter
	putNonSystem   Counter
	getFound       Counter
	getMiss        Counter
	getTransferred Counter
	getNonSystem   Counter
	getMaxMs       Counter
	dispatchMaxBuf Counter

	bootMillis int64

	putSampler         RateSampler
	getFoundSampler    RateSampler
	getMissSampler     RateSampler
	transferredSampler RateSampler

	tickMu      sync.Mutex // held by Tick and the readers of the fields below
	lastPrint   time.Time
	lastDay     int // yyyymmdd of the previous Tick, 0 before the first
	putMorning  int64
	putYestMorn int64
	getMorning  int64
	getYestMorn int64
	lastHist    HistogramSnapshot
	minuteHist  HistogramSnapshot // put latency over the last complete minute
}

// NewStoreStats returns stats whose boot time (and first print interval)
// starts at now.
func NewStoreStats(now time.Time) *StoreStats {
	s := &StoreStats{bootMillis: now.UnixMilli(), lastPrint: now}
	return s
}

// RecordPut counts n messages of total size bytes appended in one put that
// took elapsed. systemTopic puts are left out of msgPutTotalTodayNow, as
// RocketMQ's "without system topic" totals.
func (s *StoreStats) RecordPut(n int, bytes int64, elapsed time.Duration, systemTopic bool) {
	s.putTimes.Add(int64(n))
	s.putSize.Add(bytes)
	if !systemTopic {
		s.putNonSystem.Add(int64(n))
	}
	s.PutLatency.Record(elapsed)
	s.PageCacheRT.Record(elapsed)
}

// RecordPutFailed counts a put that was refused or failed.
func (s *StoreStats) RecordPutFailed() { s.putFailed.Inc() }

// RecordGet counts one read: found or missed, msgs messages transferred, the
// time it took (for getMessageEntireTimeMax). systemTopic reads are left out
// of msgGetTotalTodayNow.
func (s *StoreStats) RecordGet(found bool, msgs int, elapsed time.Duration, systemTopic bool) {
	if found {
		s.getFound.Inc()
	} else {
		s.getMiss.Inc()
	}
	s.getTransferred.Add(int64(msgs))
	if !systemTopic {
		s.getNonSystem.Add(int64(msgs))
	}
	if ms := elapsed.Milliseconds(); ms > s.getMaxMs.Load() {
		s.getMaxMs.StoreMax(ms)
	}
}

// RecordDispatchBuffer raises dispatchMaxBuffer (bytes the dispatcher was
// behind) to n if larger.
func (s *StoreStats) RecordDispatchBuffer(n int64) { s.dispatchMaxBuf.StoreMax(n) }

// PutTimesTotal is the number of messages put since start.
func (s *StoreStats) PutTimesTotal() int64 { return s.putTimes.Load() }

// PutSizeTotal is the number of bytes put since start.
func (s *StoreStats) PutSizeTotal() int64 { return s.putSize.Load() }

// PutFailedTimes is the number of failed puts since start.
func (s *StoreStats) PutFailedTimes() int64 { return s.putFailed.Load() }

// MsgPutTotalTodayNow is RocketMQ's msgPutTotalTodayNow: messages put to
// non-system topics since start.
func (s *StoreStats) MsgPutTotalTodayNow() int64 { return s.putNonSystem.Load() }

// MsgGetTotalTodayNow is RocketMQ's msgGetTotalTodayNow: messages read from
// non-system topics since start.
func (s *StoreStats) MsgGetTotalTodayNow() int64 { return s.getNonSystem.Load() }

// DayTotals returns msgPutTotalTodayMorning, msgPutTotalYesterdayMorning,
// msgGetTotalTodayMorning, msgGetTotalYesterdayMorning: the TodayNow figures
// as they were at the last two local midnights seen by Tick (0 before).
func (s *StoreStats) DayTotals() (putToday, putYesterday, getToday, getYesterday int64) {
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	return s.putMorning, s.putYestMorn, s.getMorning, s.getYestMorn
}

// Tick samples the rates (call it once a second) and, when a minute has
// passed since the last print, returns the lines RocketMQ logs then: the
// STORETPS line and the PAGECACHERT line of that minute, in that order. It
// also rolls the day totals at local midnight.
func (s *StoreStats) Tick(now time.Time) []string {
	ms := now.UnixMilli()
	s.putSampler.Sample(ms, s.putTimes.Load())
	s.getFoundSampler.Sample(ms, s.getFound.Load())
	s.getMissSampler.Sample(ms, s.getMiss.Load())
	s.transferredSampler.Sample(ms, s.getTransferred.Load())

	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	y, m, d := now.Date()
	day := y*10000 + int(m)*100 + d
	if s.lastDay != 0 && day != s.lastDay {
		s.putYestMorn, s.putMorning = s.putMorning, s.putNonSystem.Load()
		s.getYestMorn, s.getMorning = s.getMorning, s.getNonSystem.Load()
	}
	s.lastDay = day

	if now.Sub(s.lastPrint) <= printInterval {
		return nil
	}
	s.lastPrint = now
	w := RateWindows[1]
	tps := "[STORETPS] put_tps " + s.putSampler.RateString(w) +
		" get_found_tps " + s.getFoundSampler.RateString(w) +
		" get_miss_tps " + s.getMissSampler.RateString(w) +
		" get_transferred_tps " + s.transferredSampler.RateString(w)
	counts := s.PageCacheRT.Rotate()
	h := s.PutLatency.Snapshot()
	s.minuteHist = h.Sub(s.lastHist)
	s.lastHist = h
	return []string{tps, counts.PageCacheRTLine()}
}

// LastMinutePutLatency is the put-latency histogram of the last complete
// print interval (empty before the first).
func (s *StoreStats) LastMinutePutLatency() HistogramSnapshot {
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	return s.minuteHist
}

// Run calls Tick every second until ctx ends and logs the lines it returns
// at Info level. now is the store's clock (nil = time.Now).
func (s *StoreStats) Run(ctx context.Context, logger *slog.Logger, now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.Default()
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, line := range s.Tick(now()) {
				logger.Info(line)
			}
		}
	}
}

// PutTPS is RocketMQ's "putTps" figure: rates over 10 s, 60 s and 600 s.
func (s *StoreStats) PutTPS() string { return s.putSampler.TPSString() }

// GetFoundTPS is RocketMQ's "getFoundTps" figure.
func (s *StoreStats) GetFoundTPS() string { return s.getFoundSampler.TPSString() }

// GetMissTPS is RocketMQ's "getMissTps" figure.
func (s *StoreStats) GetMissTPS() string { return s.getMissSampler.TPSString() }

// GetTotalTPS is RocketMQ's "getTotalTps" figure (found + miss, never empty).
func (s *StoreStats) GetTotalTPS() string { return SumTPSString(&s.getFoundSampler, &s.getMissSampler) }

// GetTransferredTPS is RocketMQ's "getTransferredTps" figure.
func (s *StoreStats) GetTransferredTPS() string { return s.transferredSampler.TPSString() }

// formatRuntime renders an uptime as RocketMQ's "runtime" figure.
func formatRuntime(ms int64) string {
	const sec, min, hour, day = 1000, 60 * 1000, 3600 * 1000, 24 * 3600 * 1000
	if ms < 0 {
		ms = 0
	}
	return fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]",
		ms/day, (ms%day)/hour, (ms%hour)/min, (ms%min)/sec)
}

// RuntimeInfo returns the figures of RocketMQ's
// StoreStatsService.getRuntimeInfo under its keys and in its formats:
// bootTimestamp and getMessageEntireTimeMax/putMessageEntireTimeMax
// (milliseconds), runtime ("[ 0 days, 1 hours, 2 minutes, 3 seconds ]"),
// putMessageTimesTotal (1 when nothing was put, as RocketMQ divides by it),
// putMessageFailedTimes, putMessageSizeTotal, putMessageAverageSize (Java
// double), putMessageDistributeTime (the last complete minute's PAGECACHERT
// buckets, "null" before the first minute ends), dispatchMaxBuffer, the TPS
// figures putTps, getFoundTps, getMissTps, getTotalTps and getTransferredTps
// (three windows, see RateSampler.TPSString; getTransferedTps is the same
// figure under RocketMQ 4.x's spelling, which 4.x tools read) and
// putLatency99/putLatency999 ("%.2f" milliseconds). It adds the day totals
// (msgPutTotalTodayNow, msgPutTotalTodayMorning, ...). putLatency99/999 come
// from the microsecond histogram of the last minute (bucket upper bound)
// instead of RocketMQ's interpolation over millisecond buckets.
func (s *StoreStats) RuntimeInfo(now time.Time) map[string]string {
	m := make(map[string]string, 32)
	total := max(s.putTimes.Load(), 1)
	m["bootTimestamp"] = strconv.FormatInt(s.bootMillis, 10)
	m["runtime"] = formatRuntime(now.UnixMilli() - s.bootMillis)
	m["putMessageEntireTimeMax"] = strconv.FormatInt(s.PageCacheRT.MaxMillis(), 10)
	m["putMessageTimesTotal"] = strconv.FormatInt(total, 10)
	m["putMessageFailedTimes"] = strconv.FormatInt(s.putFailed.Load(), 10)
	m["putMessageSizeTotal"] = strconv.FormatInt(s.putSize.Load(), 10)
	if c, ok := s.PageCacheRT.LastInterval(); ok {
		m["putMessageDistributeTime"] = c.DistributionString()
	} else {
		m["putMessageDistributeTime"] = "null"
	}
	m["putMessageAverageSize"] = JavaDouble(float64(s.putSize.Load()) / float64(total))
	m["dispatchMaxBuffer"] = strconv.FormatInt(s.dispatchMaxBuf.Load(), 10)
	m["getMessageEntireTimeMax"] = strconv.FormatInt(s.getMaxMs.Load(), 10)
	m["putTps"] = s.PutTPS()
	m["getFoundTps"] = s.GetFoundTPS()
	m["getMissTps"] = s.GetMissTPS()
	m["getTotalTps"] = s.GetTotalTPS()
	m["getTransferredTps"] = s.GetTransferredTPS()
	m["getTransferedTps"] = m["getTransferredTps"]
	h := s.LastMinutePutLatency()
	m["putLatency99"] = JavaFixed(float64(h.P99)/float64(time.Millisecond), 2)
	m["putLatency999"] = JavaFixed(float64(h.P999)/float64(time.Millisecond), 2)
	pt, py, gt, gy := s.DayTotals()
	m["msgPutTotalTodayNow"] = strconv.FormatInt(s.MsgPutTotalTodayNow(), 10)
	m["msgPutTotalTodayMorning"] = strconv.FormatInt(pt, 10)
	m["msgPutTotalYesterdayMorning"] = strconv.FormatInt(py, 10)
	m["msgGetTotalTodayNow"] = strconv.FormatInt(s.MsgGetTotalTodayNow(), 10)
	m["msgGetTotalTodayMorning"] = strconv.FormatInt(gt, 10)
	m["msgGetTotalYesterdayMorning"] = strconv.FormatInt(gy, 10)
	return m
}
