package broker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/store"
)

// tpsWindow is how many one-second samples the rate sampler keeps.
const tpsWindow = 601

// brokerStats counts what the broker itself sees (messages put and got)
// for GET_BROKER_RUNTIME_INFO: totals since start, today's totals and
// rates over the last 10 s, 1 min and 10 min.
type brokerStats struct {
	putMsgs, putFailures, getMsgs, getBytes atomic.Int64

	mu           sync.Mutex
	samples      [tpsWindow][2]int64 // put, get totals, one per second
	head, filled int
	day          int // day of year of the "today" counters
	putAtDayOpen int64
	getAtDayOpen int64
	putYesterday int64
	getYesterday int64
	boot         time.Time
}

func newBrokerStats() *brokerStats {
	now := time.Now()
	return &brokerStats{boot: now, day: now.YearDay()}
}

func (s *brokerStats) countPut(_ string, r store.PutResult) {
	if r.Status == store.PutOK || r.Status == store.FlushDiskTimeout {
		n := int64(r.MsgNum)
		if n <= 0 {
			n = 1
		}
		s.putMsgs.Add(n)
		return
	}
	s.putFailures.Add(1)
}

func (s *brokerStats) countGet(_ string, msgs, bytes int) {
	s.getMsgs.Add(int64(msgs))
	s.getBytes.Add(int64(bytes))
}

// sample records one second's totals; called every second.
func (s *brokerStats) sample(now time.Time) {
	put, get := s.putMsgs.Load(), s.getMsgs.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples[s.head] = [2]int64{put, get}
	s.head = (s.head + 1) % tpsWindow
	s.filled = min(s.filled+1, tpsWindow)
	if d := now.YearDay(); d != s.day {
		s.day = d
		s.putYesterday, s.getYesterday = s.putAtDayOpen, s.getAtDayOpen
		s.putAtDayOpen, s.getAtDayOpen = put, get
	}
}

// rate returns messages per second of kind (0 put, 1 get) over the last
// secs seconds.
func (s *brokerStats) rate(kind, secs int) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.filled < 2 {
		return 0
	}
	secs = min(secs, s.filled-1)
	last := s.samples[(s.head-1+tpsWindow)%tpsWindow][kind]
	first := s.samples[(s.head-1-secs+2*tpsWindow)%tpsWindow][kind]
	return float64(last-first) / float64(secs)
}

func (s *brokerStats) today() (putMorning, putNow, getMorning, getNow, putYesterday, getYesterday int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.putAtDayOpen, s.putMsgs.Load(), s.getAtDayOpen, s.getMsgs.Load(), s.putYesterday, s.getYesterday
}

func (s *brokerStats) run(stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			s.sample(now)
		}
	}
}
