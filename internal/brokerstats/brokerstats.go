package brokerstats

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/clock"
)

// Name is one stats name of RocketMQ's BrokerStatsManager.
type Name int

// The stats names kept, with RocketMQ's spelling (Name.String).
const (
	TopicPutNums Name = iota
	TopicPutSize
	QueuePutNums
	QueuePutSize
	TopicPutLatency
	GroupGetNums
	GroupGetSize
	QueueGetNums
	QueueGetSize
	GroupGetLatency
	GroupAckNums
	GroupCkNums
	SndbckPutNums
	BrokerPutNums
	BrokerGetNums
	BrokerAckNums
	BrokerCkNums
	BrokerPutNumsWithoutSystemTopic
	BrokerGetNumsWithoutSystemTopic
	numNames
)

// shape says which parts of a Key make an item's RocketMQ key.
type shape uint8

const (
	byTopic           shape = iota // "topic"
	byTopicGroup                   // "topic@group"
	byTopicQueue                   // "topic@queueId"
	byTopicQueueGroup              // "topic@queueId@group"
	byQueueTopicGroup              // "queueId@topic@group"
	byQueueTopic                   // "queueId@topic"
	byCluster                      // the cluster name
)

var names = [numNames]struct {
	s     string
	shape shape
}{
	TopicPutNums:                    {"TOPIC_PUT_NUMS", byTopic},
	TopicPutSize:                    {"TOPIC_PUT_SIZE", byTopic},
	QueuePutNums:                    {"QUEUE_PUT_NUMS", byTopicQueue},
	QueuePutSize:                    {"QUEUE_PUT_SIZE", byTopicQueue},
	TopicPutLatency:                 {"TOPIC_PUT_LATENCY", byQueueTopic},
	GroupGetNums:                    {"GROUP_GET_NUMS", byTopicGroup},
	GroupGetSize:                    {"GROUP_GET_SIZE", byTopicGroup},
	QueueGetNums:                    {"QUEUE_GET_NUMS", byTopicQueueGroup},
	QueueGetSize:                    {"QUEUE_GET_SIZE", byTopicQueueGroup},
	GroupGetLatency:                 {"GROUP_GET_LATENCY", byQueueTopicGroup},
	GroupAckNums:                    {"GROUP_ACK_NUMS", byTopicGroup},
	GroupCkNums:                     {"GROUP_CK_NUMS", byTopicGroup},
	SndbckPutNums:                   {"SNDBCK_PUT_NUMS", byTopicGroup},
	BrokerPutNums:                   {"BROKER_PUT_NUMS", byCluster},
	BrokerGetNums:                   {"BROKER_GET_NUMS", byCluster},
	BrokerAckNums:                   {"BROKER_ACK_NUMS", byCluster},
	BrokerCkNums:                    {"BROKER_CK_NUMS", byCluster},
	BrokerPutNumsWithoutSystemTopic: {"BROKER_PUT_NUMS_WITHOUT_SYSTEM_TOPIC", byCluster},
	BrokerGetNumsWithoutSystemTopic: {"BROKER_GET_NUMS_WITHOUT_SYSTEM_TOPIC", byCluster},
}

// String is RocketMQ's stats name.
func (n Name) String() string {
	if n < 0 || n >= numNames {
		return "Name(" + strconv.Itoa(int(n)) + ")"
	}
	return names[n].s
}

// ParseName returns the Name RocketMQ spells s.
func ParseName(s string) (Name, bool) {
	for i, e := range names {
		if e.s == s {
			return Name(i), true
		}
	}
	return 0, false
}

// Key names the subject of one stats item; a stats name uses only the
// parts its RocketMQ key has (TOPIC_PUT_NUMS the topic, GROUP_GET_NUMS the
// topic and the group, ...), the others are ignored.
type Key struct {
	Topic   string
	Group   string
	QueueID int32
}

// mask keeps the parts of k that shape uses, so equal RocketMQ keys are
// equal map keys.
func (s shape) mask(k Key) Key {
	switch s {
	case byTopic:
		return Key{Topic: k.Topic}
	case byTopicGroup:
		return Key{Topic: k.Topic, Group: k.Group}
	case byTopicQueue, byQueueTopic:
		return Key{Topic: k.Topic, QueueID: k.QueueID}
	case byCluster:
		return Key{}
	}
	return k
}

func (s shape) format(k Key, cluster string) string {
	q := strconv.Itoa(int(k.QueueID))
	switch s {
	case byTopic:
		return k.Topic
	case byTopicGroup:
		return k.Topic + "@" + k.Group
	case byTopicQueue:
		return k.Topic + "@" + q
	case byTopicQueueGroup:
		return k.Topic + "@" + q + "@" + k.Group
	case byQueueTopicGroup:
		if k.QueueID == noQueue {
			return k.Topic + "@" + k.Group
		}
		return q + "@" + k.Topic + "@" + k.Group
	case byQueueTopic:
		return q + "@" + k.Topic
	}
	return cluster
}

// DefaultMaxKeys is the cap on the items of one stats name when
// Options.MaxKeys is zero: enough for thousands of topics and their
// groups, small enough that a flood of names cannot grow the broker
// without bound.
const DefaultMaxKeys = 10000

// Options configure a Manager.
type Options struct {
	// Clock is the time the samplers read; nil is the wall clock.
	Clock clock.Clock
	// ClusterName keys the broker-wide items (BROKER_PUT_NUMS, ...), as
	// RocketMQ keys them by brokerClusterName.
	ClusterName string
	// DetailStats keeps the per-queue items (QUEUE_PUT_NUMS, ..., and
	// GROUP_GET_LATENCY by queue), as brokerConfig enableDetailStat does.
	DetailStats bool
	// MaxKeys caps the items of each stats name; 0 is DefaultMaxKeys.
	MaxKeys int
	// IsSystemTopic tells the topics the *_WITHOUT_SYSTEM_TOPIC items
	// skip; nil counts every topic.
	IsSystemTopic func(topic string) bool
}

// Manager holds every stats item of a broker. It is safe for concurrent
// use.
type Manager struct {
	clock    clock.Clock
	cluster  string
	detail   bool
	maxKeys  int
	isSystem func(string) bool
	sets     [numNames]set
	dropped  atomic.Int64

	// The broker-wide items, created with the Manager and never removed.
	brokerPut, brokerPutNoSys, brokerGet, brokerGetNoSys, brokerAck, brokerCk *item

	// puts and gets cache, per topic and queue (and group), the items one
	// put or one pull touches, so the hot path does one lookup.
	puts composite
	gets composite

	ops ops // ops.go
}

// entry holds the per-key items one call of IncTopicPut or IncGroupGet
// adds to: the topic's (or topic@group's) numbers and sizes, and the
// queue's when DetailStats is on.
type entry struct {
	nums, size, qnums, qsize *item
	system                   bool
	ops                      *topicOps            // puts only
	lat                      atomic.Pointer[item] // puts only: TOPIC_PUT_LATENCY, set on first use
}

type composite struct {
	mu sync.RWMutex
	m  map[Key]*entry
}

func (c *composite) get(k Key) *entry {
	c.mu.RLock()
	e := c.m[k]
	c.mu.RUnlock()
	return e
}

func (c *composite) put(k Key, e *entry) {
	c.mu.Lock()
	c.m[k] = e
	c.mu.Unlock()
}

func (c *composite) reset() {
	c.mu.Lock()
	c.m = make(map[Key]*entry)
	c.mu.Unlock()
}

// New returns an empty Manager.
func New(o Options) *Manager {
	m := &Manager{clock: clock.Or(o.Clock), cluster: o.ClusterName, detail: o.DetailStats,
		maxKeys: o.MaxKeys, isSystem: o.IsSystemTopic}
	if m.maxKeys <= 0 {
		m.maxKeys = DefaultMaxKeys
	}
	for i := range m.sets {
		m.sets[i].byKey = make(map[Key]*item)
		m.sets[i].byString = make(map[string]*item)
	}
	m.puts.m = make(map[Key]*entry)
	m.gets.m = make(map[Key]*entry)
	m.ops.init()
	m.brokerPut = m.create(BrokerPutNums, Key{})
	m.brokerPutNoSys = m.create(BrokerPutNumsWithoutSystemTopic, Key{})
	m.brokerGet = m.create(BrokerGetNums, Key{})
	m.brokerGetNoSys = m.create(BrokerGetNumsWithoutSystemTopic, Key{})
	m.brokerAck = m.create(BrokerAckNums, Key{})
	m.brokerCk = m.create(BrokerCkNums, Key{})
	return m
}

// add adds to it when it exists (a capped key has none).
func (it *item) add(value, times int64) {
	if it == nil {
		return
	}
	it.value.Add(value)
	if times != 0 {
		it.times.Add(times)
	}
}

// entryFor returns the cached entry of k, building it on first use from
// the items of nums and size (and qnums and qsize with DetailStats). An
// entry missing an item (its name is full) is not cached.
func (m *Manager) entryFor(c *composite, k Key, nums, size, qnums, qsize Name) *entry {
	if e := c.get(k); e != nil {
		return e
	}
	e := &entry{nums: m.item(nums, k), size: m.item(size, k)}
	complete := e.nums != nil && e.size != nil
	if m.detail {
		e.qnums, e.qsize = m.item(qnums, k), m.item(qsize, k)
		complete = complete && e.qnums != nil && e.qsize != nil
	}
	e.system = m.isSystem != nil && m.isSystem(k.Topic)
	if c == &m.puts {
		e.ops = m.topicOps(k.Topic)
	}
	if complete {
		c.put(k, e)
	}
	return e
}

type set struct {
	mu       sync.RWMutex
	byKey    map[Key]*item
	byString map[string]*item
}

// Add adds value and times to the item of name and k, creating it on the
// first increment.
func (m *Manager) Add(name Name, k Key, value, times int64) {
	m.item(name, k).add(value, times)
}

func (m *Manager) item(name Name, k Key) *item {
	k = names[name].shape.mask(k)
	s := &m.sets[name]
	s.mu.RLock()
	it := s.byKey[k]
	s.mu.RUnlock()
	if it != nil {
		return it
	}
	return m.create(name, k)
}

func (m *Manager) create(name Name, k Key) *item {
	s := &m.sets[name]
	s.mu.Lock()
	defer s.mu.Unlock()
	if it := s.byKey[k]; it != nil {
		return it
	}
	if len(s.byKey) >= m.maxKeys {
		m.dropped.Add(1)
		return nil
	}
	it := &item{parts: k, key: names[name].shape.format(k, m.cluster), lastUpdate: m.clock.Now().UnixMilli()}
	s.byKey[k] = it
	s.byString[it.key] = it
	return it
}

// IncTopicPut counts a put of msgs messages in one increment of size bytes
// to a queue of topic, as the send processor does: TOPIC_PUT_NUMS,
// TOPIC_PUT_SIZE, BROKER_PUT_NUMS (and without system topics), and with
// DetailStats QUEUE_PUT_NUMS and QUEUE_PUT_SIZE.
func (m *Manager) IncTopicPut(topic string, queueID int32, msgs int, size int64) {
	m.countPut(m.entryFor(&m.puts, Key{Topic: topic, QueueID: queueID}, TopicPutNums, TopicPutSize, QueuePutNums, QueuePutSize), msgs, size)
}

func (m *Manager) countPut(e *entry, msgs int, size int64) {
	e.ops.countSizes(msgs, size)
	e.nums.add(int64(msgs), 1)
	e.size.add(size, 1)
	if m.detail {
		e.qnums.add(int64(msgs), 1)
		e.qsize.add(size, 1)
	}
	m.brokerPut.add(int64(msgs), 0)
	if !e.system {
		m.brokerPutNoSys.add(int64(msgs), 0)
	}
}

// IncTopicPutTimed is IncTopicPut plus the put's latency in milliseconds
// (TOPIC_PUT_LATENCY, keyed "queueId@topic"), with one look-up of the
// queue's counters (the send path's call).
func (m *Manager) IncTopicPutTimed(topic string, queueID int32, msgs int, size, ms int64) {
	k := Key{Topic: topic, QueueID: queueID}
	e := m.entryFor(&m.puts, k, TopicPutNums, TopicPutSize, QueuePutNums, QueuePutSize)
	m.countPut(e, msgs, size)
	lat := e.lat.Load()
	if lat == nil {
		if lat = m.item(TopicPutLatency, k); lat != nil {
			e.lat.Store(lat)
		}
	}
	lat.add(ms, 1)
}

// IncGroupGet counts msgs messages of size bytes pulled by group from a
// queue of topic: GROUP_GET_NUMS, GROUP_GET_SIZE, BROKER_GET_NUMS (and
// without system topics), and with DetailStats QUEUE_GET_NUMS and
// QUEUE_GET_SIZE.
func (m *Manager) IncGroupGet(group, topic string, queueID int32, msgs int, size int64) {
	e := m.entryFor(&m.gets, Key{Topic: topic, Group: group, QueueID: queueID}, GroupGetNums, GroupGetSize, QueueGetNums, QueueGetSize)
	e.nums.add(int64(msgs), 1)
	e.size.add(size, 1)
	if m.detail {
		e.qnums.add(int64(msgs), 1)
		e.qsize.add(size, 1)
	}
	m.brokerGet.add(int64(msgs), 0)
	if !e.system {
		m.brokerGetNoSys.add(int64(msgs), 0)
	}
}

// IncGroupGetLatency counts the time in milliseconds a pulled message
// waited in the store (GROUP_GET_LATENCY, keyed "queueId@topic@group" with
// DetailStats, "topic@group" without).
func (m *Manager) IncGroupGetLatency(group, topic string, queueID int32, ms int64) {
	if !m.detail {
		// RocketMQ's key without detail stats is "topic@group", which is
		// not this name's shape: keep it under queue id -1, formatted
		// below as RocketMQ formats it.
		queueID = noQueue
	}
	m.Add(GroupGetLatency, Key{Topic: topic, Group: group, QueueID: queueID}, ms, 1)
}

// noQueue marks a GROUP_GET_LATENCY item kept without its queue.
const noQueue = -1 << 31

// IncSendBack counts a message sent back for retry by group
// (SNDBCK_PUT_NUMS, keyed "topic@group").
func (m *Manager) IncSendBack(group, topic string) {
	m.Add(SndbckPutNums, Key{Topic: topic, Group: group}, 1, 1)
}

// IncGroupAck counts acknowledgements of pop consumers (GROUP_ACK_NUMS
// and BROKER_ACK_NUMS).
func (m *Manager) IncGroupAck(group, topic string, n int) {
	m.Add(GroupAckNums, Key{Topic: topic, Group: group}, int64(n), 1)
	m.brokerAck.add(int64(n), 0)
}

// IncGroupCk counts check points of pop consumers (GROUP_CK_NUMS and
// BROKER_CK_NUMS).
func (m *Manager) IncGroupCk(group, topic string, n int) {
	m.Add(GroupCkNums, Key{Topic: topic, Group: group}, int64(n), 1)
	m.brokerCk.add(int64(n), 0)
}

// Dropped is how many increments found their stats name full and were not
// kept.
func (m *Manager) Dropped() int64 { return m.dropped.Load() }

// Len is the number of items of name.
func (m *Manager) Len(name Name) int {
	s := &m.sets[name]
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byKey)
}

// Totals returns the running value and increment count of the item of
// name and k (zeros when it does not exist).
func (m *Manager) Totals(name Name, k Key) (value, times int64) {
	s := &m.sets[name]
	s.mu.RLock()
	it := s.byKey[names[name].shape.mask(k)]
	s.mu.RUnlock()
	if it == nil {
		return 0, 0
	}
	return it.value.Load(), it.times.Load()
}

// Each calls fn with every item of name: its Key, its RocketMQ key and its
// running totals. fn must not call back into the Manager's writers.
func (m *Manager) Each(name Name, fn func(k Key, statsKey string, value, times int64)) {
	s := &m.sets[name]
	s.mu.RLock()
	items := make([]*item, 0, len(s.byKey))
	for _, it := range s.byKey {
		items = append(items, it)
	}
	s.mu.RUnlock()
	for _, it := range items {
		fn(it.parts, it.key, it.value.Load(), it.times.Load())
	}
}

// RemoveTopic drops every item of topic, as RocketMQ does when a topic is
// deleted.
func (m *Manager) RemoveTopic(topic string) {
	m.removeIf(func(n Name, k Key) bool { return k.Topic == topic })
	m.removeOps(topic, "")
}

// RemoveGroup drops every item of group, as RocketMQ does when a
// subscription group is deleted.
func (m *Manager) RemoveGroup(group string) {
	m.removeIf(func(n Name, k Key) bool {
		switch names[n].shape {
		case byTopicGroup, byTopicQueueGroup, byQueueTopicGroup:
			return k.Group == group
		}
		return false
	})
	m.removeOps("", group)
}

// CleanIdle drops the items whose figures have not moved for longer than
// maxIdle (RocketMQ's maxStatsIdleTimeInMinutes), as seen by the 10-second
// sampler.
func (m *Manager) CleanIdle(maxIdle time.Duration) {
	now := m.clock.Now().UnixMilli()
	m.removeIf(func(n Name, k Key) bool {
		s := &m.sets[n]
		it := s.byKey[k]
		it.mu.Lock()
		defer it.mu.Unlock()
		return now-it.lastUpdate > maxIdle.Milliseconds()
	})
}

// removeIf drops the matching items (never the broker-wide ones) and
// empties the entry caches, which rebuild on the next increments.
func (m *Manager) removeIf(match func(Name, Key) bool) {
	defer m.puts.reset()
	defer m.gets.reset()
	for n := range m.sets {
		if names[n].shape == byCluster {
			continue
		}
		s := &m.sets[n]
		s.mu.Lock()
		for k, it := range s.byKey {
			if match(Name(n), k) {
				delete(s.byKey, k)
				delete(s.byString, it.key)
			}
		}
		s.mu.Unlock()
	}
}
