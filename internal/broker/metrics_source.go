package broker

import (
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/spoolmq/spool/internal/brokerstats"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/metrics"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/internal/timer"
	"github.com/spoolmq/spool/message"
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

	s.Topics = b.topicFigures()
	s.Groups = b.groupFigures()
	s.ProducerConnections, s.ConsumerConnections = b.connectionFigures()
	st := b.store.Stats()
	s.Storage = metrics.StorageFigures{
		SizeBytes:            max(b.store.MaxPhyOffset()-b.store.MinPhyOffset(), 0),
		FlushBehindBytes:     max(st.CommitLogMax-st.CommitLogFlushed, 0),
		DispatchBehindBytes:  b.store.DispatchBehindBytes(),
		MessageReserveTimeMs: b.reserveTimeMs(),
	}
	s.Timer = b.timerFigures()
	s.Processors = b.processorFigures()
	s.RPC = b.rpc.figures()
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

// topicFigures are the put figures per topic: messages, bytes and sizes
// from the traffic stats, transaction ends and pending halves, and the
// timing wheel's per-topic counts.
func (b *Broker) topicFigures() []metrics.TopicFigures {
	byTopic := map[string]*metrics.TopicFigures{}
	get := func(topic string) *metrics.TopicFigures {
		t := byTopic[topic]
		if t == nil {
			t = &metrics.TopicFigures{Topic: topic, MessageType: metrics.MessageNormal, IsSystem: systopic.IsSystem(topic)}
			byTopic[topic] = t
		}
		return t
	}
	b.traffic.Each(brokerstats.TopicPutNums, func(k brokerstats.Key, _ string, v, _ int64) { get(k.Topic).MessagesIn = uint64(v) })
	b.traffic.Each(brokerstats.TopicPutSize, func(k brokerstats.Key, _ string, v, _ int64) { get(k.Topic).BytesIn = uint64(v) })
	for _, to := range b.traffic.Topics() {
		t := get(to.Topic)
		t.Commits, t.Rollbacks = to.Commits, to.Rollbacks
		h := &metrics.Histogram{Count: to.Sizes.Count, Sum: float64(to.Sizes.Sum)}
		for i, bound := range brokerstats.MessageSizeBounds {
			h.Bounds = append(h.Bounds, float64(bound))
			h.Counts = append(h.Counts, to.Sizes.Counts[i])
		}
		t.MessageSize = h
	}
	if b.txCheck != nil {
		if idx := b.txCheck.Index(); idx != nil {
			for topic, n := range idx.HalvesByTopic() {
				if b.topics.Find(topic) == nil {
					continue // a deleted topic's halves: no series
				}
				get(topic).HalfMessages = n
			}
		}
	}
	if w := b.wheel(); w != nil {
		for _, tt := range w.TopicTimers() {
			if b.topics.Find(tt.Topic) == nil {
				continue
			}
			t := get(tt.Topic)
			t.TimingMessages, t.TimerEnqueued, t.TimerDequeued = tt.Pending, uint64(tt.Enqueued), uint64(tt.Dequeued)
		}
	}
	out := make([]metrics.TopicFigures, 0, len(byTopic))
	for _, t := range byTopic {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}

// processorFigures are the waiting requests of each executor.
func (b *Broker) processorFigures() []metrics.ProcessorWatermark {
	out := make([]metrics.ProcessorWatermark, 0, len(b.executors))
	for name, ex := range b.executors {
		out = append(out, metrics.ProcessorWatermark{Processor: name, Waiting: ex.QueueLen()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Processor < out[j].Processor })
	return out
}

// reserveTimeMs is the age of the oldest message the CommitLog keeps.
func (b *Broker) reserveTimeMs() int64 {
	first := b.store.MinPhyOffset()
	if first >= b.store.MaxPhyOffset() {
		return 0
	}
	rec, err := b.store.LookMessageByOffset(first)
	if err != nil {
		return 0
	}
	h, err := message.ParseRecordHeader(rec)
	if err != nil || h.StoreTimestamp <= 0 {
		return 0
	}
	return max(b.clock.Now().UnixMilli()-h.StoreTimestamp, 0)
}

// timerBoundsSeconds are rocketmq_timer_message_snapshot's timer_bound_s
// values, RocketMQ's TimerMetrics distribution.
var timerBoundsSeconds = []int64{5, 60, 300, 900, 3600, 14400, 28800, 86400}

// timerFigures are the timing wheel's gauges as GET_BROKER_RUNTIME_INFO
// reads them: the enqueue lag is the timer messages stored but not yet
// linked into the wheel (timerOffsetBehind), the dequeue latency how far
// the wheel's hand is behind the clock (timerReadBehind, in ms). Zero
// without the wheel.
func (b *Broker) timerFigures() metrics.TimerFigures {
	var f metrics.TimerFigures
	if w := b.wheel(); w != nil {
		ts := w.Stats()
		now := b.clock.Now()
		f.EnqueueLag = max(b.store.MaxOffsetInQueue(timer.Topic, 0)-ts.EnqueueOffset, 0)
		if f.EnqueueLag > 0 {
			if st := b.store.MessageStoreTimeStamp(timer.Topic, 0, ts.EnqueueOffset); st > 0 {
				f.EnqueueLatencyMs = max(now.UnixMilli()-st, 0)
			}
		}
		if ts.Cursor > 0 {
			f.DequeueLatencyMs = max(now.Unix()-ts.Cursor, 0) * 1000
		}
		f.DequeueLag = w.DueNotDelivered()
		for i, n := range w.PendingByDelay(timerBoundsSeconds) {
			f.Snapshot = append(f.Snapshot, metrics.TimerBound{BoundSeconds: timerBoundsSeconds[i], Messages: n})
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
	for k, n := range b.traffic.SentToDLQ() {
		get(k.Group, k.Topic).SentToDLQ = n
	}
	now := b.clock.Now().UnixMilli()
	for _, tg := range b.offsets.TopicGroups() {
		g := get(tg.Group, tg.Topic)
		pulled := b.traffic.Pulled(tg.Group, tg.Topic)
		for _, q := range b.groupQueues(tg.Group, tg.Topic) {
			g.LagMessages += q.lag
			if q.lag > 0 {
				if ts := b.store.MessageStoreTimeStamp(tg.Topic, q.id, max(q.committed, 0)); ts > 0 {
					g.LagLatencyMs = max(g.LagLatencyMs, now-ts)
				}
			}
			// Pulled and not committed, and produced and not pulled (a
			// queue not pulled since the start counts from its commit).
			from := max(q.committed, 0)
			next := max(pulled[q.id], from)
			g.InflightMessages += max(min(next, q.produced)-from, 0)
			ready := max(q.produced-next, 0)
			g.ReadyMessages += ready
			if ready > 0 {
				if ts := b.store.MessageStoreTimeStamp(tg.Topic, q.id, next); ts > 0 {
					g.QueueingLatencyMs = max(g.QueueingLatencyMs, now-ts)
				}
			}
		}
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

// topicChanged tells the name-server registration of a topic change and,
// for a deleted topic, drops its traffic stats and timer figures, so its
// metric series go with it (as RocketMQ's BrokerStatsManager
// onTopicDeleted).
func (b *Broker) topicChanged(tc *metadata.TopicConfig, deleted string, v metadata.DataVersion) {
	b.registrar.topicChanged(tc, deleted, v)
	if deleted == "" {
		return
	}
	b.traffic.RemoveTopic(deleted)
	if t := b.wheel(); t != nil {
		t.ForgetTopic(deleted)
	}
}

// groupDeleted drops a deleted subscription group's traffic stats (as
// RocketMQ's onGroupDeleted): its metric series go with them.
func (b *Broker) groupDeleted(group string) { b.traffic.RemoveGroup(group) }
