package brokerstats

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)

func newManual(o Options) (*Manager, *clock.Manual) {
	c := clock.NewManual(t0)
	o.Clock = c
	return New(o), c
}

// The minute window step by step: each step adds to TOPIC_PUT_NUMS "t",
// moves the clock 10 s (none at the first step) and samples.
func TestMinuteWindowAsStatsItemComputesIt(t *testing.T) {
	m, c := newManual(Options{})
	steps := []struct {
		value, times int64
		want         Window
	}{
		// seed (t0-10s: 0,0) and (t0: 5,1): 5 over 10 s.
		{5, 1, Window{Sum: 5, Tps: 0.5, Avgpt: 5, Times: 1}},
		// (t0+10s: 20,4): 20 over 20 s, 20 per 4 increments.
		{15, 3, Window{Sum: 20, Tps: 1, Avgpt: 5, Times: 4}},
		{0, 0, Window{Sum: 20, Tps: 20.0 / 30, Avgpt: 5, Times: 4}},
		{10, 1, Window{Sum: 30, Tps: 30.0 / 40, Avgpt: 6, Times: 5}},
		{0, 0, Window{Sum: 30, Tps: 30.0 / 50, Avgpt: 6, Times: 5}},
		{0, 0, Window{Sum: 30, Tps: 0.5, Avgpt: 6, Times: 5}},
		// Seven snapshots held: the seed drops, the window is (t0: 5,1) to
		// (t0+60s: 35,6).
		{5, 1, Window{Sum: 30, Tps: 0.5, Avgpt: 6, Times: 5}},
		// (t0+10s: 20,4) to (t0+70s: 35,6).
		{0, 0, Window{Sum: 15, Tps: 0.25, Avgpt: 7.5, Times: 2}},
	}
	for i, s := range steps {
		if i > 0 {
			c.Advance(MinutePeriod)
		}
		if s.value != 0 || s.times != 0 {
			m.Add(TopicPutNums, Key{Topic: "t"}, s.value, s.times)
		}
		m.SampleMinute()
		got := m.Minute(TopicPutNums, Key{Topic: "t"})
		if got.Sum != s.want.Sum || got.Times != s.want.Times || !near(got.Tps, s.want.Tps) || !near(got.Avgpt, s.want.Avgpt) {
			t.Fatalf("step %d: got %+v want %+v", i, got, s.want)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// The hour and day windows keep 7 and 25 snapshots of their own periods.
func TestHourAndDayWindows(t *testing.T) {
	cases := []struct {
		name    string
		period  time.Duration
		sample  func(*Manager)
		read    func(Stats) Window
		samples int
		want    Window
	}{
		// 10 samples of +6 each, 10 min apart: the last 7 hold 6 intervals.
		{"hour", HourPeriod, (*Manager).SampleHour, func(s Stats) Window { return s.Hour }, 10,
			Window{Sum: 36, Tps: 36.0 / 3600, Avgpt: 6, Times: 6}},
		{"hour before full", HourPeriod, (*Manager).SampleHour, func(s Stats) Window { return s.Hour }, 3,
			Window{Sum: 18, Tps: 18.0 / 1800, Avgpt: 6, Times: 3}},
		// 30 hourly samples: the last 25 hold 24 intervals.
		{"day", DayPeriod, (*Manager).SampleDay, func(s Stats) Window { return s.Day }, 30,
			Window{Sum: 144, Tps: 144.0 / 86400, Avgpt: 6, Times: 24}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, c := newManual(Options{})
			for i := 0; i < tc.samples; i++ {
				if i > 0 {
					c.Advance(tc.period)
				}
				m.Add(GroupGetNums, Key{Topic: "t", Group: "g"}, 6, 1)
				tc.sample(m)
			}
			st, ok := m.View("GROUP_GET_NUMS", "t@g")
			if !ok {
				t.Fatal("no item")
			}
			got := tc.read(st)
			if got.Sum != tc.want.Sum || got.Times != tc.want.Times || !near(got.Tps, tc.want.Tps) || !near(got.Avgpt, tc.want.Avgpt) {
				t.Fatalf("got %+v want %+v", got, tc.want)
			}
			if st.Minute != (Window{}) {
				t.Fatalf("minute window sampled by another sampler: %+v", st.Minute)
			}
		})
	}
}

// Every item is keyed as RocketMQ's BrokerStatsManager keys it.
func TestItemsAreKeyedAsRocketMQKeysThem(t *testing.T) {
	sys := func(topic string) bool { return topic == "RMQ_SYS_TRACE_TOPIC" }
	m, _ := newManual(Options{ClusterName: "DefaultCluster", DetailStats: true, IsSystemTopic: sys})
	m.IncTopicPut("t", 3, 2, 300)
	m.IncTopicPut("RMQ_SYS_TRACE_TOPIC", 0, 1, 50)
	m.Add(TopicPutLatency, Key{Topic: "t", QueueID: 3}, 7, 1)
	m.IncGroupGet("g", "t", 3, 4, 400)
	m.IncGroupGetLatency("g", "t", 3, 12)
	m.IncSendBack("g", "t")
	m.IncGroupAck("g", "t", 2)
	m.IncGroupCk("g", "t", 1)
	m.SampleMinute()
	for _, c := range []struct {
		name, key string
		sum       int64
	}{
		{"TOPIC_PUT_NUMS", "t", 2},
		{"TOPIC_PUT_SIZE", "t", 300},
		{"QUEUE_PUT_NUMS", "t@3", 2},
		{"QUEUE_PUT_SIZE", "t@3", 300},
		{"TOPIC_PUT_LATENCY", "3@t", 7},
		{"GROUP_GET_NUMS", "t@g", 4},
		{"GROUP_GET_SIZE", "t@g", 400},
		{"QUEUE_GET_NUMS", "t@3@g", 4},
		{"QUEUE_GET_SIZE", "t@3@g", 400},
		{"GROUP_GET_LATENCY", "3@t@g", 12},
		{"SNDBCK_PUT_NUMS", "t@g", 1},
		{"GROUP_ACK_NUMS", "t@g", 2},
		{"GROUP_CK_NUMS", "t@g", 1},
		{"BROKER_PUT_NUMS", "DefaultCluster", 3},
		{"BROKER_PUT_NUMS_WITHOUT_SYSTEM_TOPIC", "DefaultCluster", 2},
		{"BROKER_GET_NUMS", "DefaultCluster", 4},
		{"BROKER_GET_NUMS_WITHOUT_SYSTEM_TOPIC", "DefaultCluster", 4},
		{"BROKER_ACK_NUMS", "DefaultCluster", 2},
		{"BROKER_CK_NUMS", "DefaultCluster", 1},
	} {
		st, ok := m.View(c.name, c.key)
		if !ok || st.Minute.Sum != c.sum {
			t.Errorf("%s %s: %+v, %v; want sum %d", c.name, c.key, st.Minute, ok, c.sum)
		}
	}
	// BROKER_PUT_NUMS adds no increments (RocketMQ adds to its value only).
	if _, times := m.Totals(BrokerPutNums, Key{}); times != 0 {
		t.Errorf("BROKER_PUT_NUMS times %d", times)
	}
	for _, c := range [][2]string{{"TOPIC_PUT_NUMS", "t@g"}, {"NO_SUCH_STATS", "t"}, {"GROUP_GET_NUMS", "g@t"}} {
		if _, ok := m.View(c[0], c[1]); ok {
			t.Errorf("%v found", c)
		}
	}
}

func TestWithoutDetailStatsNoQueueItems(t *testing.T) {
	m, _ := newManual(Options{ClusterName: "c"})
	m.IncTopicPut("t", 1, 1, 10)
	m.IncGroupGet("g", "t", 1, 1, 10)
	m.IncGroupGetLatency("g", "t", 1, 5)
	m.SampleMinute()
	for _, n := range []Name{QueuePutNums, QueuePutSize, QueueGetNums, QueueGetSize} {
		if m.Len(n) != 0 {
			t.Errorf("%s has %d items", n, m.Len(n))
		}
	}
	if st, ok := m.View("GROUP_GET_LATENCY", "t@g"); !ok || st.Minute.Sum != 5 {
		t.Fatalf("GROUP_GET_LATENCY t@g: %+v %v", st, ok)
	}
}

func TestKeyCapDropsNewKeysOnly(t *testing.T) {
	m, _ := newManual(Options{MaxKeys: 2})
	for i := 0; i < 5; i++ {
		m.IncTopicPut("t"+strconv.Itoa(i), 0, 1, 10)
	}
	m.IncTopicPut("t0", 0, 1, 10)
	if m.Len(TopicPutNums) != 2 || m.Len(TopicPutSize) != 2 {
		t.Fatalf("items %d %d", m.Len(TopicPutNums), m.Len(TopicPutSize))
	}
	if v, _ := m.Totals(TopicPutNums, Key{Topic: "t0"}); v != 2 {
		t.Fatalf("t0 = %d", v)
	}
	// Three topics over the cap, two names each.
	if m.Dropped() != 6 {
		t.Fatalf("dropped %d", m.Dropped())
	}
}

func TestRemoveTopicGroupAndIdle(t *testing.T) {
	m, c := newManual(Options{ClusterName: "c", DetailStats: true})
	m.IncGroupGet("g1", "t1", 0, 1, 1)
	m.IncGroupGet("g2", "t1", 0, 1, 1)
	m.IncGroupGet("g1", "t2", 0, 1, 1)
	m.RemoveGroup("g1")
	if m.Len(GroupGetNums) != 1 || m.Len(QueueGetNums) != 1 || m.Len(BrokerGetNums) != 1 {
		t.Fatalf("after RemoveGroup: %d %d %d", m.Len(GroupGetNums), m.Len(QueueGetNums), m.Len(BrokerGetNums))
	}
	m.IncTopicPut("t1", 0, 1, 1)
	m.IncTopicPut("t3", 0, 1, 1)
	m.RemoveTopic("t1")
	if m.Len(GroupGetNums) != 0 || m.Len(TopicPutNums) != 1 || m.Len(BrokerPutNums) != 1 {
		t.Fatalf("after RemoveTopic: %d %d %d", m.Len(GroupGetNums), m.Len(TopicPutNums), m.Len(BrokerPutNums))
	}
	// t3 moves every sample; t4 stops after the first.
	m.IncTopicPut("t4", 0, 1, 1)
	for i := 0; i < 6; i++ {
		c.Advance(10 * time.Minute)
		m.IncTopicPut("t3", 0, 1, 1)
		m.SampleMinute()
	}
	m.CleanIdle(30 * time.Minute)
	if _, ok := m.View("TOPIC_PUT_NUMS", "t3"); !ok {
		t.Fatal("t3 cleaned")
	}
	if _, ok := m.View("TOPIC_PUT_NUMS", "t4"); ok {
		t.Fatal("t4 kept")
	}
}

func TestIncrementsDoNotAllocate(t *testing.T) {
	m, _ := newManual(Options{ClusterName: "c", DetailStats: true})
	m.IncTopicPut("topic", 1, 1, 100)
	m.IncGroupGet("group", "topic", 1, 1, 100)
	m.IncGroupGetLatency("group", "topic", 1, 3)
	if n := testing.AllocsPerRun(200, func() {
		m.IncTopicPut("topic", 1, 1, 100)
		m.IncGroupGet("group", "topic", 1, 1, 100)
		m.IncGroupGetLatency("group", "topic", 1, 3)
	}); n != 0 {
		t.Fatalf("%v allocations per increment", n)
	}
}

func TestRunSamplesOnTheClock(t *testing.T) {
	m, c := newManual(Options{})
	m.Add(TopicPutNums, Key{Topic: "t"}, 4, 1)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { m.Run(stop); close(done) }()
	waitFor(t, func() bool {
		st, _ := m.View("TOPIC_PUT_NUMS", "t")
		return st.Minute.Sum == 4 && st.Hour.Sum == 4 && st.Day.Sum == 4
	})
	m.Add(TopicPutNums, Key{Topic: "t"}, 6, 1)
	c.Advance(MinutePeriod)
	waitFor(t, func() bool { st, _ := m.View("TOPIC_PUT_NUMS", "t"); return st.Minute.Sum == 10 })
	if st, _ := m.View("TOPIC_PUT_NUMS", "t"); st.Hour.Sum != 4 {
		t.Fatalf("hour sampled early: %+v", st.Hour)
	}
	for i := 0; i < int(HourPeriod/MinutePeriod)-1; i++ {
		c.Advance(MinutePeriod)
	}
	waitFor(t, func() bool { st, _ := m.View("TOPIC_PUT_NUMS", "t"); return st.Hour.Sum == 10 })
	close(stop)
	<-done
}

// waitFor waits for the sampler goroutine; it bounds the wait so a broken
// sampler fails instead of hanging, and asserts nothing about time.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 10000; i++ {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("condition not reached")
}

func BenchmarkIncTopicPut(b *testing.B) {
	m := New(Options{ClusterName: "c"})
	m.IncTopicPut("topic", 0, 1, 100)
	b.ReportAllocs()
	for b.Loop() {
		m.IncTopicPut("topic", 0, 1, 100)
	}
}

func BenchmarkIncTopicPutParallel(b *testing.B) {
	m := New(Options{ClusterName: "c"})
	m.IncTopicPut("topic", 0, 1, 100)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.IncTopicPut("topic", 0, 1, 100)
		}
	})
}

func BenchmarkIncGroupGetDetail(b *testing.B) {
	m := New(Options{ClusterName: "c", DetailStats: true})
	m.IncGroupGet("group", "topic", 3, 1, 100)
	b.ReportAllocs()
	for b.Loop() {
		m.IncGroupGet("group", "topic", 3, 1, 100)
	}
}

// The figures of ops.go: sizes by RocketMQ's buckets, transaction ends,
// dead letters and pulled offsets, all removed with their topic or group.
func TestOpsFigures(t *testing.T) {
	m := New(Options{})
	m.IncTopicPut("T", 0, 1, 100)    // <= 1 KiB
	m.IncTopicPut("T", 1, 2, 2*5000) // two of 5000 B: <= 512 KiB
	m.IncTopicPut("T", 0, 1, 8<<20)  // above 4 MiB: +Inf only
	m.IncTransaction("T", true)
	m.IncTransaction("T", false)
	m.IncTransaction("T", false)
	m.IncSendToDLQ("g", "T")
	m.NotePulled("g", "T", 1, 7)
	m.NotePulled("g", "T", 1, 5) // never back
	m.NotePulled("h", "U", 0, 3)
	ts := m.Topics()
	if len(ts) != 1 || ts[0].Topic != "T" || ts[0].Commits != 1 || ts[0].Rollbacks != 2 {
		t.Fatalf("Topics: %+v", ts)
	}
	if h := ts[0].Sizes; h.Counts != [6]uint64{1, 1, 3, 3, 3, 3} || h.Count != 4 || h.Sum != 100+10000+8<<20 {
		t.Fatalf("sizes: %+v", h)
	}
	if d := m.SentToDLQ(); d[GroupTopic{"g", "T"}] != 1 {
		t.Fatalf("SentToDLQ: %v", d)
	}
	if p := m.Pulled("g", "T"); p[1] != 7 {
		t.Fatalf("Pulled: %v", p)
	}
	m.RemoveGroup("g")
	if len(m.SentToDLQ()) != 0 || len(m.Pulled("g", "T")) != 0 || len(m.Pulled("h", "U")) != 1 {
		t.Fatalf("after RemoveGroup: %v %v", m.SentToDLQ(), m.Pulled("h", "U"))
	}
	m.RemoveTopic("T")
	if len(m.Topics()) != 0 {
		t.Fatalf("after RemoveTopic: %+v", m.Topics())
	}
	// The put entry cache is rebuilt: a new put counts again.
	m.IncTopicPut("T", 0, 1, 10)
	if ts := m.Topics(); len(ts) != 1 || ts[0].Sizes.Count != 1 {
		t.Fatalf("after a new put: %+v", ts)
	}
}

// IncTopicPutTimed counts what IncTopicPut and a TOPIC_PUT_LATENCY Add count,
// also after the topic's counters were removed and made again.
func TestIncTopicPutTimedCountsBoth(t *testing.T) {
	pair, timed := New(Options{ClusterName: "c", DetailStats: true}), New(Options{ClusterName: "c", DetailStats: true})
	for round := 0; round < 2; round++ {
		for i := 0; i < 3; i++ {
			pair.IncTopicPut("t", 2, 4, 100)
			pair.Add(TopicPutLatency, Key{Topic: "t", QueueID: 2}, int64(i), 1)
			timed.IncTopicPutTimed("t", 2, 4, 100, int64(i))
		}
		k := Key{Topic: "t", QueueID: 2}
		for _, n := range []Name{TopicPutNums, TopicPutSize, QueuePutNums, QueuePutSize, TopicPutLatency, BrokerPutNums} {
			pv, pt := pair.Totals(n, k)
			tv, tt := timed.Totals(n, k)
			if pv != tv || pt != tt {
				t.Fatalf("round %d, %v: timed %d/%d, pair %d/%d", round, n, tv, tt, pv, pt)
			}
		}
		if v, _ := timed.Totals(TopicPutLatency, k); round == 0 && v != 3 {
			t.Fatalf("latency total %d, want 0+1+2", v)
		}
		pair.RemoveTopic("t")
		timed.RemoveTopic("t")
	}
}

// BenchmarkCountPut is what the send path counts per put: the put and
// its latency, as two calls and as IncTopicPutTimed.
func BenchmarkCountPut(b *testing.B) {
	b.Run("pair", func(b *testing.B) {
		m := New(Options{ClusterName: "c"})
		m.IncTopicPut("topic", 0, 1, 100)
		m.Add(TopicPutLatency, Key{Topic: "topic", QueueID: 0}, 1, 1)
		b.ReportAllocs()
		for b.Loop() {
			m.IncTopicPut("topic", 0, 1, 100)
			m.Add(TopicPutLatency, Key{Topic: "topic", QueueID: 0}, 1, 1)
		}
	})
	b.Run("timed", func(b *testing.B) {
		m := New(Options{ClusterName: "c"})
		m.IncTopicPutTimed("topic", 0, 1, 100, 1)
		b.ReportAllocs()
		for b.Loop() {
			m.IncTopicPutTimed("topic", 0, 1, 100, 1)
		}
	})
	b.Run("timed-parallel", func(b *testing.B) {
		m := New(Options{ClusterName: "c"})
		m.IncTopicPutTimed("topic", 0, 1, 100, 1)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.IncTopicPutTimed("topic", 0, 1, 100, 1)
			}
		})
	})
	b.Run("pair-parallel", func(b *testing.B) {
		m := New(Options{ClusterName: "c"})
		m.IncTopicPut("topic", 0, 1, 100)
		m.Add(TopicPutLatency, Key{Topic: "topic", QueueID: 0}, 1, 1)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.IncTopicPut("topic", 0, 1, 100)
				m.Add(TopicPutLatency, Key{Topic: "topic", QueueID: 0}, 1, 1)
			}
		})
	})
}
