package metadata

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

// topicsFilePause is the least time between two background writes of
// topics.json: a change is durable in the topic journal before it is
// answered, so the whole table is rewritten at most this often.
const topicsFilePause = time.Second

// TopicConfigFile is the JSON document of config/topics.json.
type TopicConfigFile struct {
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
	File    *File
	Journal *topicJournal
	logger  *slog.Logger
	snapAt  int64        // data version counter of the snapshot being written (file's writeMu)
	burst   atomic.Int64 // changes since memory was last returned to the OS
	// autoCreate is the template topic whose inherit bit follows
	// autoCreateTopicEnable (Deps.AutoCreateTopic).
	autoCreate string

	// onChange is called, without locks held, with the created or
	// updated topic (or nil and the deleted topic's name) and the data
	// version the change made.
	OnChange func(tc *TopicConfig, deleted string, v DataVersion)
}

func NewTopicConfigManager(d Deps) *TopicConfigManager {
	configDir, logger := d.ConfigDir, d.Logger
	m := &TopicConfigManager{
		table:    make(map[string]*TopicConfig),
		version:  newVersionStamp(d.Clock),
		Journal:  newTopicJournal(filepath.Join(configDir, "topics.journal")),
		logger:   logger,
		OnChange: func(*TopicConfig, string, DataVersion) {},
	}
	m.File = NewFile(filepath.Join(configDir, "topics.json"), m.encode, logger)
	m.File.pause = topicsFilePause
	m.File.written = func() {
		if err := m.Journal.covered(m.snapAt); err != nil {
			logger.Error("empty topic journal", "err", err)
		}
		m.afterBurst()
	}
	for _, tc := range d.BuiltinTopics {
		m.table[tc.TopicName] = tc
	}
	m.autoCreate = d.AutoCreateTopic
	return m
}

// Load reads topics.json (its entries override the built-in ones) and
// applies the journal's newer changes.
func (m *TopicConfigManager) Load() error {
	b, err := m.File.Load()
	if err != nil {
		return err
	}
	var doc TopicConfigFile
	if b != nil {
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("%w: decode %s: %w", ErrMetadata, m.File.Path, corrupt.Wrap(err))
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
	changes, torn, err := m.Journal.read(doc.DataVersion.Counter)
	if err != nil {
		return err
	}
	if torn > 0 {
		m.logger.Warn("skipped torn lines of the topic journal (changes never acknowledged)", "file", m.Journal.path, "lines", torn)
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
	m.File.MarkDirty() // topics.json takes them over at start
	return nil
}

func normalizeTopicConfig(tc *TopicConfig) *TopicConfig {
	if tc.Attributes == nil {
		tc.Attributes = map[string]string{}
	}
	if tc.TopicFilterType == "" {
		tc.TopicFilterType = FilterSingleTag
	}
	return tc
}

func (m *TopicConfigManager) encode() ([]byte, error) {
	m.mu.RLock()
	doc := TopicConfigFile{TopicConfigTable: make(map[string]*TopicConfig, len(m.table)), DataVersion: m.version.get()}
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
	m.File.MarkDirty()
	m.OnChange(tc, deleted, v)
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
	if defaultTopic == m.autoCreate && !autoCreateEnable {
		perm = PermRead | PermWrite
	}
	if !isInherited(perm) {
		m.mu.Unlock()
		return nil, false
	}
	n := max(min(clientQueueNums, def.WriteQueueNums), 0)
	tc := NewTopicConfig(topic, n, n, perm&^PermInherit)
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
	tc := NewTopicConfig(topic, queueNums, queueNums, perm)
	tc.TopicSysFlag = topicSysFlag
	m.table[topic] = tc
	m.version.next()
	v := m.version.get()
	m.mu.Unlock()
	m.changed(tc, "", v)
	return tc, true
}

// Preload adds topics without a change notification: benchmarks and tests
// build large tables with it.
func (m *TopicConfigManager) Preload(tcs []*TopicConfig) {
	m.mu.Lock()
	for _, tc := range tcs {
		m.table[tc.TopicName] = tc
	}
	m.mu.Unlock()
}

// NextStateVersion advances the data version and sets its state version
// to state: in controller mode the master epoch of the broker's latest
// role, which a name server compares when two brokers claim one broker
// id (a deposed master's late registration loses to its successor's).
func (m *TopicConfigManager) NextStateVersion(state int64) {
	m.mu.Lock()
	m.version.nextState(state)
	m.mu.Unlock()
}

// StepVersion advances the data version without a change, as a changed
// version makes a name server apply every topic (benchmarks).
func (m *TopicConfigManager) StepVersion() { m.version.next() }

// HoldWrites stops topics.json from being rewritten until release is
// called, as if a crash came before the writer ran (tests).
func (m *TopicConfigManager) HoldWrites() (release func()) {
	m.File.writeMu.Lock()
	return m.File.writeMu.Unlock
}
