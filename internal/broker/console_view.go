package broker

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spoolmq/spool/internal/brokerstats"
	"github.com/spoolmq/spool/internal/console"
	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/message"
)

// consoleView is what the console reads of the broker (console.Broker).
type consoleView struct{ b *Broker }

// consoleMaxBody is how much of a message body the lookup page shows.
const consoleMaxBody = 4096

func (v consoleView) Overview() console.Overview {
	b := v.b
	cfg := b.config()
	topics, _ := b.topics.Snapshot()
	return console.Overview{
		Cluster: cfg.BrokerClusterName, BrokerName: cfg.BrokerName, BrokerID: cfg.BrokerID, Addr: b.addr,
		Permission: cfg.BrokerPermission, Version: versionDesc, Namesrv: cfg.NamesrvAddr,
		Topics: len(topics), Groups: len(b.groups.Document().SubscriptionGroupTable),
		ProducerConnections: len(b.producers.ProducerChannels()),
		ConsumerConnections: len(b.consumers.ConsumerChannels()),
		StoreSizeBytes:      max(b.store.MaxPhyOffset()-b.store.MinPhyOffset(), 0),
	}
}

func (v consoleView) Topics() []console.Topic {
	b := v.b
	topics, _ := b.topics.Snapshot()
	out := make([]console.Topic, 0, len(topics))
	for name, tc := range topics {
		t := console.Topic{Name: name, ReadQueues: tc.ReadQueueNums, WriteQueues: tc.WriteQueueNums, Perm: tc.Perm,
			System: systopic.IsSystem(name), PutTps: finite(b.traffic.TopicPutTps(name))}
		t.MessagesIn, _ = b.traffic.Totals(brokerstats.TopicPutNums, brokerstats.Key{Topic: name})
		for id := int32(0); id < int32(max(tc.ReadQueueNums, tc.WriteQueueNums)); id++ {
			q := console.Queue{ID: id, MinOffset: b.store.MinOffsetInQueue(name, id), MaxOffset: b.store.MaxOffsetInQueue(name, id)}
			if q.MaxOffset > 0 {
				if ts := b.store.MessageStoreTimeStamp(name, id, q.MaxOffset-1); ts > 0 {
					q.LastStored = time.UnixMilli(ts)
				}
			}
			t.Queues = append(t.Queues, q)
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// groupNames are the subscription groups, the groups with offsets and the
// groups online.
func (v consoleView) groupNames() map[string]bool {
	b := v.b
	names := map[string]bool{}
	for g := range b.groups.Document().SubscriptionGroupTable {
		names[g] = true
	}
	for _, tg := range b.offsets.TopicGroups() {
		names[tg.Group] = true
	}
	for _, g := range b.consumers.Groups() {
		names[g] = true
	}
	return names
}

func (v consoleView) online() map[string]int {
	n := map[string]int{}
	for _, ch := range v.b.consumers.ConsumerChannels() {
		n[ch.Group]++
	}
	return n
}

func (v consoleView) Groups() []console.GroupSummary {
	b := v.b
	online := v.online()
	topicsOf := map[string][]string{}
	for _, tg := range b.offsets.TopicGroups() {
		topicsOf[tg.Group] = append(topicsOf[tg.Group], tg.Topic)
	}
	var out []console.GroupSummary
	for g := range v.groupNames() {
		s := console.GroupSummary{Name: g, Online: online[g], Topics: len(topicsOf[g]), System: systopic.IsSystem(g)}
		for _, t := range topicsOf[g] {
			for _, q := range b.groupQueues(g, t) {
				s.Lag += q.lag
			}
			s.GetTps += finite(b.traffic.GroupGetTps(g, t))
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (v consoleView) Group(name string) (console.Group, bool) {
	b := v.b
	if !v.groupNames()[name] {
		return console.Group{}, false
	}
	g := console.Group{Name: name, Online: v.online()[name]}
	for _, ch := range b.consumers.ConsumerChannels() {
		if ch.Group == name {
			g.ConsumeType, g.Model = ch.ConsumeType, ch.MessageModel
			break
		}
	}
	topics := map[string]bool{}
	for _, tg := range b.offsets.TopicGroups() {
		if tg.Group == name {
			topics[tg.Topic] = true
		}
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		for _, q := range b.groupQueues(name, t) {
			gq := console.GroupQueue{Topic: t, QueueID: q.id, Produced: q.produced, Committed: q.committed, Lag: q.lag}
			if q.committed > 0 {
				if ts := b.store.MessageStoreTimeStamp(t, q.id, q.committed-1); ts > 0 {
					gq.LastConsumed = time.UnixMilli(ts)
				}
			}
			g.Queues = append(g.Queues, gq)
		}
	}
	return g, true
}

// MessageByID looks id up as an offset message id, then (with topic) as a
// producer's unique key in the index, as mqadmin's queryMsgById does.
func (v consoleView) MessageByID(topic, id string) ([]console.Message, error) {
	b := v.b
	if _, off, err := message.ParseOffsetMsgID(id); err == nil {
		if rec, err := b.store.LookMessageByOffset(off); err == nil {
			if m, err := consoleMessage(rec); err == nil && m.MsgID == id {
				return []console.Message{m}, nil
			}
		}
	}
	if topic == "" {
		return nil, fmt.Errorf("no message with offset id %s here; a unique key needs its topic", id)
	}
	found, err := v.MessagesByKey(topic, id)
	if err != nil {
		return nil, err
	}
	var out []console.Message
	for _, m := range found {
		if m.UniqKey == id {
			out = append(out, m)
		}
	}
	return out, nil
}

func (v consoleView) MessagesByKey(topic, key string) ([]console.Message, error) {
	b := v.b
	res, err := b.store.QueryMessage(topic, key, b.storeConfig().DefaultQueryMaxNum, 0, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	var out []console.Message
	for _, rec := range res.Records {
		m, err := consoleMessage(rec)
		if err != nil || m.Topic != topic {
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

func consoleMessage(rec []byte) (console.Message, error) {
	e, err := message.DecodeRecord(rec)
	if err != nil {
		return console.Message{}, err
	}
	body := e.Body
	if len(body) > consoleMaxBody {
		body = body[:consoleMaxBody]
	}
	text := string(body)
	if !utf8.ValidString(text) {
		text = fmt.Sprintf("(%d bytes, not UTF-8)", len(e.Body))
	}
	return console.Message{
		MsgID: e.MsgID(), UniqKey: e.Properties[message.PropertyUniqClientMessageIDKeyIdx], Topic: e.Topic,
		Tags: e.Properties[message.PropertyTags], Keys: strings.TrimSpace(e.Properties[message.PropertyKeys]),
		QueueID: e.QueueID, QueueOffset: e.QueueOffset, CommitLogOffset: e.PhysicalOffset,
		StoreHost: e.StoreHost.String(), BornHost: e.BornHost.String(),
		BornAt: time.UnixMilli(e.BornTimestamp), StoredAt: time.UnixMilli(e.StoreTimestamp),
		ReconsumeTimes: e.ReconsumeTimes, Properties: e.Properties, Body: text, BodySize: len(e.Body),
	}, nil
}

func (v consoleView) Throughput() console.Throughput {
	b := v.b
	t := console.Throughput{AtMillis: b.clock.Now().UnixMilli()}
	t.MessagesIn, _ = b.traffic.Totals(brokerstats.BrokerPutNums, brokerstats.Key{})
	t.MessagesOut, _ = b.traffic.Totals(brokerstats.BrokerGetNums, brokerstats.Key{})
	b.traffic.Each(brokerstats.TopicPutSize, func(_ brokerstats.Key, _ string, v, _ int64) { t.BytesIn += v })
	b.traffic.Each(brokerstats.GroupGetSize, func(_ brokerstats.Key, _ string, v, _ int64) { t.BytesOut += v })
	return t
}

// finite is f, or 0 for the NaN and infinities of a window not yet
// sampled twice.
func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}
