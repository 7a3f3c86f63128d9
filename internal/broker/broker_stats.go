package broker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/store/stats"
)

// timerTPSWindow is the window (one-second samples) of timerEnqueueTps and
// timerDequeueTps: RocketMQ's timer perf counters report the rate of their
// last period of 10 s.
const timerTPSWindow = 10

// brokerStats counts what the broker itself sees for
// GET_BROKER_RUNTIME_INFO, as RocketMQ's BrokerStatsManager and BrokerStats:
// messages put by producers and delivered by the delay and timer services,
// and messages got by pulls, both without system topics (msgPutTotalTodayNow,
// msgGetTotalTodayNow), with their totals at the last two local midnights;
// and the timing wheel's enqueue and dequeue rates.
type brokerStats struct {
	putMsgs, getMsgs atomic.Int64

	mu           sync.Mutex
	day          int // day of year of the "today" counters
	putAtDayOpen int64
	getAtDayOpen int64
	putYesterday int64
	getYesterday int64

	timerEnq, timerDeq stats.RateSampler
}

func newBrokerStats(now time.Time) *brokerStats {
	return &brokerStats{day: now.YearDay()}
}

// countPut counts a stored message of topic (a batch counts its messages).
func (s *brokerStats) countPut(topic string, r store.PutResult) {
	if (r.Status != store.PutOK && r.Status != store.FlushDiskTimeout) || isSystemTopic(topic) {
		return
	}
	s.putMsgs.Add(int64(max(r.MsgNum, 1)))
}

// countGet counts msgs messages a pull of topic returned.
func (s *brokerStats) countGet(topic string, msgs, _ int) {
	if isSystemTopic(topic) {
		return
	}
	s.getMsgs.Add(int64(msgs))
}

// sample is called every second with the timing wheel's totals (accepted
// and delivered timers; 0 without the wheel). It rolls the day totals at
// local midnight.
func (s *brokerStats) sample(now time.Time, timerEnq, timerDeq int64) {
	ms := now.UnixMilli()
	s.timerEnq.Sample(ms, timerEnq)
	s.timerDeq.Sample(ms, timerDeq)
	put, get := s.putMsgs.Load(), s.getMsgs.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := now.YearDay(); d != s.day {
		s.day = d
		s.putYesterday, s.getYesterday = s.putAtDayOpen, s.getAtDayOpen
		s.putAtDayOpen, s.getAtDayOpen = put, get
	}
}

// timerTPS returns the timing wheel's enqueue and dequeue rates over the
// last timerTPSWindow seconds (0 until that much has been sampled).
func (s *brokerStats) timerTPS() (enq, deq float32) {
	e, _ := s.timerEnq.Rate(timerTPSWindow)
	d, _ := s.timerDeq.Rate(timerTPSWindow)
	return float32(e), float32(d)
}

func (s *brokerStats) today() (putMorning, putNow, getMorning, getNow, putYesterday, getYesterday int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.putAtDayOpen, s.putMsgs.Load(), s.getAtDayOpen, s.getMsgs.Load(), s.putYesterday, s.getYesterday
}

// run samples once a second until stop; timerTotals reports the wheel's
// accepted and delivered counts.
func (s *brokerStats) run(stop <-chan struct{}, timerTotals func() (enq, deq int64), clk clock.Clock) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			enq, deq := timerTotals()
			s.sample(clk.Now(), enq, deq)
		}
	}
}
