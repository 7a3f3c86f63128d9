package metadata

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/corrupt"
)

// consumerOffsetFile is the JSON document of config/consumerOffset.json:
// "topic@group" -> queue id (as a string key) -> next offset to consume.
type consumerOffsetFile struct {
	OffsetTable map[string]map[string]int64 `json:"offsetTable"`
	DataVersion DataVersion                 `json:"dataVersion"`
}

// ConsumerOffsetManager keeps committed consumer offsets. Commits only
// touch memory; a background flusher persists the table every
// flushConsumerOffsetInterval when it changed, and at shutdown.
type ConsumerOffsetManager struct {
	mu      sync.Mutex
	table   map[string]map[int32]int64 // "topic@group" -> queueId -> offset
	version *versionStamp
	dirty   atomic.Bool
	File    *File
	// local is the ledger of commits (nil unless TrackLocalCommits);
	// localVersion counts its changes.
	local        map[OffsetKey]int64
	localVersion uint64
}

func NewConsumerOffsetManager(d Deps) *ConsumerOffsetManager {
	m := &ConsumerOffsetManager{table: make(map[string]map[int32]int64), version: newVersionStamp(d.Clock)}
	m.File = NewFile(filepath.Join(d.ConfigDir, "consumerOffset.json"), m.encode, d.Logger)
	return m
}

func offsetKey(topic, group string) string { return topic + "@" + group }

func (m *ConsumerOffsetManager) Load() error {
	b, err := m.File.Load()
	if err != nil || b == nil {
		return err
	}
	var doc consumerOffsetFile
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%w: decode %s: %w", ErrMetadata, m.File.Path, corrupt.Wrap(err))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, queues := range doc.OffsetTable {
		t := make(map[int32]int64, len(queues))
		for q, off := range queues {
			id, err := strconv.ParseInt(q, 10, 32)
			if err != nil {
				return fmt.Errorf("%w: %s: queue id %q in %q: %w", ErrMetadata, m.File.Path, q, key, err)
			}
			t[int32(id)] = off
		}
		m.table[key] = t
	}
	m.version.set(doc.DataVersion)
	return nil
}

func (m *ConsumerOffsetManager) encode() ([]byte, error) {
	m.mu.Lock()
	doc := consumerOffsetFile{OffsetTable: make(map[string]map[string]int64, len(m.table)), DataVersion: m.version.get()}
	for key, queues := range m.table {
		t := make(map[string]int64, len(queues))
		for q, off := range queues {
			t[strconv.Itoa(int(q))] = off
		}
		doc.OffsetTable[key] = t
	}
	m.mu.Unlock()
	return json.MarshalIndent(&doc, "", "\t")
}

// Encode is the table in consumerOffset.json's form (the
// GET_ALL_CONSUMER_OFFSET answer body).
func (m *ConsumerOffsetManager) Encode() ([]byte, error) { return m.encode() }

// RunFlusher persists the table every interval while it is dirty, until
// stop is closed.
func (m *ConsumerOffsetManager) RunFlusher(interval time.Duration, stop <-chan struct{}) {
	if interval <= 0 {
		interval = 5 * time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if m.dirty.Swap(false) {
				m.File.MarkDirty()
			}
		}
	}
}

// Commit records offset as group's next offset for topic/queueID.
func (m *ConsumerOffsetManager) Commit(group, topic string, queueID int32, offset int64) {
	key := offsetKey(topic, group)
	m.mu.Lock()
	t := m.table[key]
	if t == nil {
		t = make(map[int32]int64)
		m.table[key] = t
	}
	if old, ok := t[queueID]; !ok || old != offset {
		t[queueID] = offset
		m.version.next()
		m.dirty.Store(true)
	}
	if m.local != nil {
		k := OffsetKey{Topic: topic, Group: group, QueueID: queueID}
		if old, ok := m.local[k]; !ok || old != offset {
			m.local[k] = offset
			m.localVersion++
		}
	}
	m.mu.Unlock()
}

// Query returns the committed offset, or -1.
func (m *ConsumerOffsetManager) Query(group, topic string, queueID int32) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.table[offsetKey(topic, group)]; t != nil {
		if off, ok := t[queueID]; ok {
			return off
		}
	}
	return -1
}

// QueryAll returns a copy of the group's offsets for topic.
func (m *ConsumerOffsetManager) QueryAll(group, topic string) map[int32]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[int32]int64)
	for q, off := range m.table[offsetKey(topic, group)] {
		out[q] = off
	}
	return out
}

// RemoveTopic drops every group's offsets of topic.
func (m *ConsumerOffsetManager) RemoveTopic(topic string) {
	m.removeIf(func(t, _ string) bool { return t == topic })
}

// RemoveGroup drops every offset of group.
func (m *ConsumerOffsetManager) RemoveGroup(group string) {
	m.removeIf(func(_, g string) bool { return g == group })
}

func (m *ConsumerOffsetManager) removeIf(match func(topic, group string) bool) {
	m.mu.Lock()
	removed := false
	for key := range m.table {
		i := strings.LastIndexByte(key, '@')
		if i < 0 {
			continue
		}
		if match(key[:i], key[i+1:]) {
			delete(m.table, key)
			removed = true
		}
	}
	for k := range m.local {
		if match(k.Topic, k.Group) {
			delete(m.local, k)
			m.localVersion++
		}
	}
	if removed {
		m.version.next()
	}
	m.mu.Unlock()
	if removed {
		m.File.MarkDirty()
	}
}

// CloneOffsets replaces dst's offsets of topic with a copy of src's, as
// RocketMQ's cloneOffset does; it reports whether src had any.
func (m *ConsumerOffsetManager) CloneOffsets(src, dst, topic string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	from := m.table[offsetKey(topic, src)]
	if from == nil {
		return false
	}
	to := make(map[int32]int64, len(from))
	for q, off := range from {
		to[q] = off
	}
	m.table[offsetKey(topic, dst)] = to
	m.version.next()
	m.dirty.Store(true)
	return true
}

// ClampTo lowers every committed offset above its queue's end (maxOffset)
// to that end and returns how many it lowered: after a replica cut its
// log for a role change, no group may point past what the queues hold
// (apache/rocketmq#7689, #4771).
func (m *ConsumerOffsetManager) ClampTo(maxOffset func(topic string, queueID int32) int64) int {
	m.mu.Lock()
	n := 0
	for key, t := range m.table {
		i := strings.LastIndexByte(key, '@')
		if i < 0 {
			continue
		}
		for q, off := range t {
			if max := maxOffset(key[:i], q); off > max {
				t[q] = max
				n++
			}
		}
	}
	if n > 0 {
		m.version.next()
		m.dirty.Store(true)
	}
	m.mu.Unlock()
	if n > 0 {
		m.File.MarkDirty()
	}
	return n
}
