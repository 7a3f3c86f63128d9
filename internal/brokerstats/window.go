package brokerstats

import (
	"sync"
	"sync/atomic"
	"time"
)

// The windows' snapshot periods and lengths, as RocketMQ's StatsItem
// samples them: every 10 s keeping 7 (a minute), every 10 min keeping 7 (an
// hour), every hour keeping 25 (a day).
const (
	MinutePeriod = 10 * time.Second
	HourPeriod   = 10 * time.Minute
	DayPeriod    = time.Hour

	minuteKeep = 7
	hourKeep   = 7
	dayKeep    = 25
)

type snapshot struct {
	atMillis int64
	times    int64
	value    int64
}

// ring holds the newest snapshots of one window, oldest first.
type ring struct {
	buf [dayKeep]snapshot
	n   int
}

// add appends s, seeding the ring with a zero snapshot one period before
// when it is empty and dropping the oldest beyond keep, as StatsItem does.
func (r *ring) add(s snapshot, period time.Duration, keep int) {
	if r.n == 0 {
		r.buf[0] = snapshot{atMillis: s.atMillis - period.Milliseconds()}
		r.n = 1
	}
	if r.n == keep {
		copy(r.buf[:keep-1], r.buf[1:keep])
		r.n--
	}
	r.buf[r.n] = s
	r.n++
}

// Window is one window's figures, RocketMQ's StatsSnapshot: the value
// added between the window's first and last snapshot (Sum), per second
// (Tps) and per increment (Avgpt), and the increments (Times).
type Window struct {
	Sum   int64
	Tps   float64
	Avgpt float64
	Times int64
}

func (r *ring) window() Window {
	if r.n == 0 {
		return Window{}
	}
	first, last := r.buf[0], r.buf[r.n-1]
	w := Window{Sum: last.value - first.value, Times: last.times - first.times}
	// As Java computes it: a zero interval gives NaN or an infinity.
	w.Tps = float64(w.Sum) * 1000 / float64(last.atMillis-first.atMillis)
	if w.Times > 0 {
		w.Avgpt = float64(w.Sum) / float64(w.Times)
	}
	return w
}

type item struct {
	value atomic.Int64
	times atomic.Int64
	_     [48]byte // keep the next item's counters off this cache line

	parts Key
	key   string

	mu         sync.Mutex
	minute     ring
	hour       ring
	day        ring
	lastValue  int64
	lastTimes  int64
	lastUpdate int64 // ms, moved by SampleMinute when the figures moved
}

// Stats is an item's three windows, as VIEW_BROKER_STATS_DATA answers them.
type Stats struct {
	Minute, Hour, Day Window
}

// View returns the windows of the item RocketMQ names statsName and
// statsKey (VIEW_BROKER_STATS_DATA's header fields); false when there is
// no such item (RocketMQ answers SYSTEM_ERROR "The stats <name> <key> not
// exist").
func (m *Manager) View(statsName, statsKey string) (Stats, bool) {
	n, ok := ParseName(statsName)
	if !ok {
		return Stats{}, false
	}
	s := &m.sets[n]
	s.mu.RLock()
	it := s.byString[statsKey]
	s.mu.RUnlock()
	if it == nil {
		return Stats{}, false
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	return Stats{Minute: it.minute.window(), Hour: it.hour.window(), Day: it.day.window()}, true
}

// Minute returns the minute window of the item of name and k (zeros when
// there is none), as RocketMQ's getStatsDataInMinute.
func (m *Manager) Minute(name Name, k Key) Window {
	s := &m.sets[name]
	s.mu.RLock()
	it := s.byKey[names[name].shape.mask(k)]
	s.mu.RUnlock()
	if it == nil {
		return Window{}
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.minute.window()
}

// TopicPutTps is the minute TPS of TOPIC_PUT_NUMS for topic (RocketMQ's
// tpsTopicPutNums).
func (m *Manager) TopicPutTps(topic string) float64 {
	return m.Minute(TopicPutNums, Key{Topic: topic}).Tps
}

// GroupGetTps is the minute TPS of GROUP_GET_NUMS for group on topic
// (RocketMQ's tpsGroupGetNums, ConsumeStats' consumeTps).
func (m *Manager) GroupGetTps(group, topic string) float64 {
	return m.Minute(GroupGetNums, Key{Topic: topic, Group: group}).Tps
}

// SampleMinute takes every item's 10-second snapshot.
func (m *Manager) SampleMinute() {
	m.sample(func(it *item) *ring { return &it.minute }, MinutePeriod, minuteKeep, true)
}

// SampleHour takes every item's 10-minute snapshot.
func (m *Manager) SampleHour() {
	m.sample(func(it *item) *ring { return &it.hour }, HourPeriod, hourKeep, false)
}

// SampleDay takes every item's hourly snapshot.
func (m *Manager) SampleDay() {
	m.sample(func(it *item) *ring { return &it.day }, DayPeriod, dayKeep, false)
}

func (m *Manager) sample(which func(*item) *ring, period time.Duration, keep int, markUpdate bool) {
	now := m.clock.Now().UnixMilli()
	var items []*item
	for n := range m.sets {
		s := &m.sets[n]
		s.mu.RLock()
		for _, it := range s.byKey {
			items = append(items, it)
		}
		s.mu.RUnlock()
	}
	for _, it := range items {
		v, t := it.value.Load(), it.times.Load()
		it.mu.Lock()
		which(it).add(snapshot{atMillis: now, times: t, value: v}, period, keep)
		if markUpdate && (v != it.lastValue || t != it.lastTimes) {
			it.lastValue, it.lastTimes, it.lastUpdate = v, t, now
		}
		it.mu.Unlock()
	}
}

// Run samples the windows until stop is closed: all three at once, as
// RocketMQ schedules them with no initial delay, then the minute window
// every 10 s, the hour window every 10 min and the day window every hour.
func (m *Manager) Run(stop <-chan struct{}) {
	m.SampleMinute()
	m.SampleHour()
	m.SampleDay()
	start := m.clock.Now()
	for tick := int64(1); ; tick++ {
		wait := start.Add(time.Duration(tick) * MinutePeriod).Sub(m.clock.Now())
		select {
		case <-stop:
			return
		case <-m.clock.After(wait):
		}
		m.SampleMinute()
		if tick%int64(HourPeriod/MinutePeriod) == 0 {
			m.SampleHour()
		}
		if tick%int64(DayPeriod/MinutePeriod) == 0 {
			m.SampleDay()
		}
	}
}
