package broker

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/corrupt"
)

// scheduleQueueNums is the number of SCHEDULE_TOPIC_XXXX queues: one per
// delay level of the default level table.
const scheduleQueueNums = 18

// topicsFilePause is the least time between two background writes of
// topics.json: a change is durable in the topic journal before it is
// answered, so the whole table is rewritten at most this often.
const topicsFilePause = time.Second

// topicConfigFile is the JSON document of config/topics.json.
type topicConfigFile struct {
	TopicConfigTable map[string]*TopicConfig `json:"topicConfigTable"`
	DataVersion      DataVersion             `json:"dataVersion"`
}

// TopicConfigManager owns the topic table: the system topics created at
// start-up, topics created by admin calls, by auto-create on send and by
// consumers' retry and dead-letter topics. It persists the table to
// config/topics.json in the background (one write for the changes made
// while the previous write ran) and calls onChange after every change so
// the broker registers it with its name servers.
type TopicConfigManager struct {
	mu      sync.RWMutex
	table   map[string]*TopicConfig // values are never mutated in place
	version *versionStamp
	file    *metadataFile
	journal *topicJournal
	logger  *slog.Logger
	snapAt  int64        // data version counter of the snapshot being written (file's writeMu)
	burst   atomic.Int64 // changes since memory was last returned to the OS

	// onChange is called, without locks held, with the created or
	// updated topic (or nil and the deleted topic's name) and the data
	// version the change made.
	onChange func(tc *TopicConfig, deleted string, v DataVersion)
}

func newTopicConfigManager(cfg *Config, configDir string, logger *slog.Logger) *TopicConfigManager {
	m := &TopicConfigManager{
		table:    make(map[string]*TopicConfig),
		version:  newVersionStamp(),
		journal:  newTopicJournal(filepath.Join(configDir, "topics.journal")),
		logger:   logger,
		onChange: func(*TopicConfig, string, DataVersion) {},
	}
	m.file = newMetadataFile(filepath.Join(configDir, "topics.json"), m.encode, logger)
	m.file.pause = topicsFilePause
	m.file.written = func() {
		if err := m.journal.covered(m.snapAt); err != nil {
			logger.Error("empty topic journal", "err", err)
		}
		m.afterBurst()
	}
	m.createSystemTopics(cfg)
	return m
}

// createSystemTopics adds the topics RocketMQ's broker creates at start-up.
func (m *TopicConfigManager) createSystemTopics(cfg *Config) {
	add := func(tc *TopicConfig) { m.table[tc.TopicName] = tc }
	add(newTopicConfig(topicSelfTest, 1, 1, permRead|permWrite))
	if cfg.AutoCreateTopicEnable {
		n := cfg.DefaultTopicQueueNums
		add(newTopicConfig(topicAutoCreate, n, n, permInherit|permRead|permWrite))
	}
	add(newTopicConfig(topicBenchmark, 1024, 1024, permRead|permWrite))
	clusterPerm := permInherit
	if cfg.ClusterTopicEnable {
		clusterPerm |= permRead | permWrite
	}
	add(newTopicConfig(cfg.BrokerClusterName, 16, 16, clusterPerm))
	brokerPerm := permInherit
	if cfg.BrokerTopicEnable {
		brokerPerm |= permRead | permWrite
	}
	add(newTopicConfig(cfg.BrokerName, 1, 1, brokerPerm))
	add(newTopicConfig(topicOffsetMovedEvent, 1, 1, permRead|permWrite))
	add(newTopicConfig(topicSchedule, scheduleQueueNums, scheduleQueueNums, permRead|permWrite))
	if cfg.TraceTopicEnable {
		add(newTopicConfig(cfg.MsgTraceTopicName, 1, 1, permRead|permWrite))
	}
	add(newTopicConfig(cfg.BrokerClusterName+replyTopicSuffix, 1, 1, permRead|permWrite))
	add(newTopicConfig(topicTransHalf, 1, 1, permRead|permWrite))
	add(newTopicConfig(topicTransOpHalf, 1, 1, permRead|permWrite))
}

// load reads topics.json (its entries override the built-in ones) and
// applies the journal's newer changes.
func (m *TopicConfigManager) load() error {
	b, err := m.file.load()
	if err != nil {
		return err
	}
	var doc topicConfigFile
	if b != nil {
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("%w: decode %s: %w", ErrMetadata, m.file.path, corrupt.Wrap(err))
		}
	}
	m.mu.Lock()
	for name, tc := range doc.TopicConfigTable {
		if tc == nil {
			continue
		}
		if tc.TopicName == "" {
			tc.TopicName = name
		}
		m.table[name] = normalizeTopicConfig(tc)
	}
	m.mu.Unlock()
	if b != nil {
		m.version.set(doc.DataVersion)
	}
	changes, torn, err := m.journal.read(doc.DataVersion.Counter)
	if err != nil {
		return err
	}
	if torn > 0 {
		m.logger.Warn("skipped torn lines of the topic journal (changes never acknowledged)", "file", m.journal.path, "lines", torn)
	}
	if len(changes) == 0 {
		return nil
	}
	m.mu.Lock()
	for _, c := range changes {
		if c.TopicConfig != nil {
			m.table[c.TopicConfig.TopicName] = normalizeTopicConfig(c.TopicConfig)
		} else {
			delete(m.table, c.Deleted)
		}
	}
	m.mu.Unlock()
	m.version.set(changes[len(changes)-1].DataVersion)
	m.file.markDirty() // topics.json takes them over at start
	return nil
}

func normalizeTopicConfig(tc *TopicConfig) *TopicConfig {
	if tc.Attributes == nil {
		tc.Attributes = map[string]string{}
	}
	if tc.TopicFilterType == "" {
		tc.TopicFilterType = filterSingleTag
	}
	return tc
}

func (m *TopicConfigManager) encode() ([]byte, error) {
	m.mu.RLock()
	doc := topicConfigFile{TopicConfigTable: make(map[string]*TopicConfig, len(m.table)), DataVersion: m.version.get()}
	m.snapAt = doc.DataVersion.Counter
	for k, v := range m.table {
		doc.TopicConfigTable[k] = v
	}
	b, err := json.MarshalIndent(&doc, "", "\t")
	m.mu.RUnlock()
	return b, err
}

// Find returns the topic's config, or nil. The result must not be modified.
func (m *TopicConfigManager) Find(topic string) *TopicConfig {
	m.mu.RLock()
	tc := m.table[topic]
	m.mu.RUnlock()
	return tc
}

// Snapshot returns the whole table (values must not be modified) and its
// data version.
func (m *TopicConfigManager) Snapshot() (map[string]*TopicConfig, DataVersion) {
	m.mu.RLock()
	out := make(map[string]*TopicConfig, len(m.table))
	for k, v := range m.table {
		out[k] = v
	}
	v := m.version.get()
	m.mu.RUnlock()
	return out, v
}

// Names lists the topics, sorted.
func (m *TopicConfigManager) Names() []string {
	m.mu.RLock()
	out := make([]string, 0, len(m.table))
	for k := range m.table {
		out = append(out, k)
	}
	m.mu.RUnlock()
	sort.Strings(out)
	return out
}

// Version returns the table's data version.
func (m *TopicConfigManager) Version() DataVersion { return m.version.get() }

// Put creates or replaces a topic config and reports whether it changed.
func (m *TopicConfigManager) Put(tc *TopicConfig) bool {
	tc = tc.clone()
	m.mu.Lock()
	old := m.table[tc.TopicName]
	if old != nil && old.equal(tc) {
		m.mu.Unlock()
		return false
	}
	m.table[tc.TopicName] = tc
	m.version.next()
	v := m.version.get()
	m.mu.Unlock()
	m.changed(tc, "", v)
	return true
}

// Delete removes a topic and reports whether it existed.
func (m *TopicConfigManager) Delete(topic string) bool {
	m.mu.Lock()
	_, ok := m.table[topic]
	var v DataVersion
	if ok {
		delete(m.table, topic)
		m.version.next()
		v = m.version.get()
	}
	m.mu.Unlock()
	if ok {
		m.changed(nil, topic, v)
	}
	return ok
}

// burstReleaseChanges is how many topic changes make a burst after which
// the heap's free memory is returned to the OS.
const burstReleaseChanges = 1000

// afterBurst returns the heap's free memory to the OS once a burst of at
// least burstReleaseChanges changes is over (topics.json, just written,
// holds the newest change): the garbage of the burst (request headers,
// registration and topics.json encodings) would otherwise stay resident
// long after, as the Go runtime gives memory back only slowly.
func (m *TopicConfigManager) afterBurst() {
	if m.burst.Load() < burstReleaseChanges || m.version.get().Counter != m.snapAt {
		return
	}
	m.burst.Store(0)
	debug.FreeOSMemory()
}

func (m *TopicConfigManager) changed(tc *TopicConfig, deleted string, v DataVersion) {
	m.burst.Add(1)
	m.file.markDirty()
	m.onChange(tc, deleted, v)
}

// CreateInSendMessage auto-creates topic from defaultTopic when the latter
// exists with the inherit bit (TBW102 while autoCreateTopicEnable). It
// returns the topic's config (existing or new; nil when it cannot be
// created) and whether it was created now.
func (m *TopicConfigManager) CreateInSendMessage(topic, defaultTopic string, clientQueueNums, topicSysFlag int, autoCreateEnable bool) (*TopicConfig, bool) {
	m.mu.Lock()
	if tc := m.table[topic]; tc != nil {
		m.mu.Unlock()
		return tc, false
	}
	def := m.table[defaultTopic]
	if def == nil {
		m.mu.Unlock()
		return nil, false
	}
	perm := def.Perm
	if defaultTopic == topicAutoCreate && !autoCreateEnable {
		perm = permRead | permWrite
	}
	if !isInherited(perm) {
		m.mu.Unlock()
		return nil, false
	}
	n := max(min(clientQueueNums, def.WriteQueueNums), 0)
	tc := newTopicConfig(topic, n, n, perm&^permInherit)
	tc.TopicSysFlag = topicSysFlag
	tc.TopicFilterType = def.TopicFilterType
	m.table[topic] = tc
	m.version.next()
	v := m.version.get()
	m.mu.Unlock()
	m.changed(tc, "", v)
	return tc, true
}

// CreateInSendBack creates a retry or dead-letter topic when missing.
func (m *TopicConfigManager) CreateInSendBack(topic string, queueNums, perm, topicSysFlag int) (*TopicConfig, bool) {
	m.mu.Lock()
	if tc := m.table[topic]; tc != nil {
		m.mu.Unlock()
		return tc, false
	}
	tc := newTopicConfig(topic, queueNums, queueNums, perm)
	tc.TopicSysFlag = topicSysFlag
	m.table[topic] = tc
	m.version.next()
	v := m.version.get()
	m.mu.Unlock()
	m.changed(tc, "", v)
	return tc, true
}
