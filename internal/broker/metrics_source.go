package broker

import (
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/spoolmq/spool/internal/brokerstats"
	"github.com/spoolmq/spool/internal/metrics"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/internal/timer"
)

// metricsSnapshot is the broker's metrics.Source: every figure is read
// from what the broker already keeps (the traffic stats, the client
// tables, the offsets and the store), at scrape time.
func (b *Broker) metricsSnapshot() *metrics.Snapshot {
	cfg := b.config()
	s := &metrics.Snapshot{BrokerPermission: cfg.BrokerPermission}
	topics, _ := b.topics.Snapshot()
	s.TopicNumber = len(topics)
	s.ConsumerGroupNumber = len(b.groups.Document().SubscriptionGroupTable)

	bytesIn := map[string]int64{}
	b.traffic.Each(brokerstats.TopicPutSize, func(k brokerstats.Key, _ string, v, _ int64) { bytesIn[k.Topic] = v })
	b.traffic.Each(brokerstats.TopicPutNums, func(k brokerstats.Key, _ string, v, _ int64) {
		s.Topics = append(s.Topics, metrics.TopicFigures{
			Topic: k.Topic, MessageType: metrics.MessageNormal, IsSystem: systopic.IsSystem(k.Topic),
			MessagesIn: uint64(v), BytesIn: uint64(bytesIn[k.Topic]),
		})
	})
	sort.Slice(s.Topics, func(i, j int) bool { return s.Topics[i].Topic < s.Topics[j].Topic })

	s.Groups = b.groupFigures()
	s.ProducerConnections, s.ConsumerConnections = b.connectionFigures()
	s.Storage = metrics.StorageFigures{
		SizeBytes:           max(b.store.MaxPhyOffset()-b.store.MinPhyOffset(), 0),
		DispatchBehindBytes: b.store.DispatchBehindBytes(),
	}
	s.Timer = b.timerFigures()
	st := b.store.Stats()
	s.Spool = metrics.SpoolFigures{
		PutLockHold: secondsHistogram(st.PutLockHold),
		Fsync:       secondsHistogram(st.Flush),
		Busy: []metrics.KindCount{
			{Kind: "page_cache", Count: uint64(b.flow.RejectPageCache.Load())},
			{Kind: "transient_pool", Count: uint64(b.flow.RejectPool.Load())},
			{Kind: "pc_synchronized", Count: uint64(b.flow.PCSynchronized.Load())},
			{Kind: "pc_busy_clean_queue", Count: uint64(b.flow.PCBusyCleaned.Load())},
		},
		ColdReadBytes:               uint64(b.flow.ColdBytes.Load()),
		ColdReadLimitBytesPerSecond: float64(cfg.ColdReadBytesPerSecond),
		ColdReadThrottled:           uint64(b.flow.ColdHeld.Load() + b.flow.ColdLimited.Load()),
	}
	return s
}

// timerFigures are the timing wheel's gauges as GET_BROKER_RUNTIME_INFO
// reads them: the enqueue lag is the timer messages stored but not yet
// linked into the wheel (timerOffsetBehind), the dequeue latency how far
// the wheel's hand is behind the clock (timerReadBehind, in ms). Zero
// without the wheel.
func (b *Broker) timerFigures() metrics.TimerFigures {
	var f metrics.TimerFigures
	if ts, ok := b.TimerStats(); ok {
		f.EnqueueLag = max(b.store.MaxOffsetInQueue(timer.Topic, 0)-ts.EnqueueOffset, 0)
		if ts.Cursor > 0 {
			f.DequeueLatencyMs = max(b.clock.Now().Unix()-ts.Cursor, 0) * 1000
		}
	}
	return f
}

// groupKey names one group's figures on one topic.
type groupKey struct{ group, topic string }

// groupFigures are the consume figures per group and topic: messages and
// bytes pulled from the traffic stats, lag from the committed offsets and
// the queues' max offsets.
func (b *Broker) groupFigures() []metrics.GroupFigures {
	byKey := map[groupKey]*metrics.GroupFigures{}
	get := func(group, topic string) *metrics.GroupFigures {
		k := groupKey{group, topic}
		g := byKey[k]
		if g == nil {
			g = &metrics.GroupFigures{Group: group, Topic: topic, IsRetry: systopic.IsRetry(topic),
				IsSystem: systopic.IsSystem(topic)}
			byKey[k] = g
		}
		return g
	}
	b.traffic.Each(brokerstats.GroupGetNums, func(k brokerstats.Key, _ string, v, _ int64) { get(k.Group, k.Topic).MessagesOut = uint64(v) })
	b.traffic.Each(brokerstats.GroupGetSize, func(k brokerstats.Key, _ string, v, _ int64) { get(k.Group, k.Topic).BytesOut = uint64(v) })
	now := b.clock.Now().UnixMilli()
	for _, tg := range b.offsets.TopicGroups() {
		g := get(tg.Group, tg.Topic)
		for _, q := range b.groupQueues(tg.Group, tg.Topic) {
			g.LagMessages += q.lag
			if q.lag > 0 {
				if ts := b.store.MessageStoreTimeStamp(tg.Topic, q.id, max(q.committed, 0)); ts > 0 {
					g.LagLatencyMs = max(g.LagLatencyMs, now-ts)
				}
			}
		}
		g.ReadyMessages = g.LagMessages
		g.QueueingLatencyMs = g.LagLatencyMs
	}
	out := make([]metrics.GroupFigures, 0, len(byKey))
	for _, g := range byKey {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Topic < out[j].Topic
	})
	return out
}

// queueLag is one queue of a topic as a group consumes it.
type queueLag struct {
	id                       int32
	produced, committed, lag int64
}

// groupQueues reads the group's committed offset and the max offset of
// every queue of topic, as RocketMQ's GET_CONSUME_STATS does: a queue
// without a committed offset lags by its whole content.
func (b *Broker) groupQueues(group, topic string) []queueLag {
	committed := b.offsets.QueryAll(group, topic)
	ids := b.store.QueueIDs(topic)
	seen := map[int32]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	for id := range committed {
		if !seen[id] {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([]queueLag, 0, len(ids))
	for _, id := range ids {
		q := queueLag{id: id, produced: b.store.MaxOffsetInQueue(topic, id), committed: -1}
		if c, ok := committed[id]; ok {
			q.committed = c
		}
		q.lag = max(q.produced-max(q.committed, 0), 0)
		out = append(out, q)
	}
	return out
}

// connectionFigures count the producer and consumer connections by their
// labels.
func (b *Broker) connectionFigures() ([]metrics.ProducerConnections, []metrics.ConsumerConnections) {
	type pk struct{ lang, ver string }
	prod := map[pk]int{}
	for _, ch := range b.producers.ProducerChannels() {
		prod[pk{ch.Language, strconv.Itoa(int(ch.Version))}]++
	}
	type ck struct{ group, lang, ver, mode string }
	cons := map[ck]int{}
	for _, ch := range b.consumers.ConsumerChannels() {
		mode := "pull"
		if ch.ConsumeType == "CONSUME_PASSIVELY" {
			mode = "push"
		}
		cons[ck{ch.Group, ch.Language, strconv.Itoa(int(ch.Version)), mode}]++
	}
	var ps []metrics.ProducerConnections
	for k, n := range prod {
		ps = append(ps, metrics.ProducerConnections{Language: k.lang, Version: k.ver, Count: n})
	}
	var cs []metrics.ConsumerConnections
	for k, n := range cons {
		cs = append(cs, metrics.ConsumerConnections{Group: k.group, Language: k.lang, Version: k.ver, ConsumeMode: k.mode,
			IsSystem: systopic.IsSystem(k.group), Count: n})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Language+ps[i].Version < ps[j].Language+ps[j].Version })
	sort.Slice(cs, func(i, j int) bool { return cs[i].Group+cs[i].Language < cs[j].Group+cs[j].Language })
	return ps, cs
}

// secondsHistogram turns a store histogram (microsecond buckets) into the
// cumulative seconds histogram the spool_ families expose.
func secondsHistogram(h store.Histogram) *metrics.Histogram {
	out := &metrics.Histogram{Count: h.Count, Sum: h.Sum.Seconds()}
	var cum uint64
	for _, bk := range h.Buckets() {
		cum += bk.Count
		if bk.UpperMicros == math.MaxInt64 {
			continue // the +Inf bucket is Count
		}
		out.Bounds = append(out.Bounds, (time.Duration(bk.UpperMicros) * time.Microsecond).Seconds())
		out.Counts = append(out.Counts, cum)
	}
	return out
}
