package metadata

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/spoolmq/spool/internal/corrupt"
)

// subscriptionGroupFile is the JSON document of config/subscriptionGroup.json
// and the GET_ALL_SUBSCRIPTIONGROUP_CONFIG body.
type subscriptionGroupFile struct {
	SubscriptionGroupTable map[string]*SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	DataVersion            DataVersion                         `json:"dataVersion"`
}

// systemGroups are the groups RocketMQ's broker creates at start-up.
var systemGroups = []string{
	"TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY",
	"CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_RMQ_SYS_TRANS",
}

// SubscriptionGroupManager owns the consumer-group configs, persisted to
// config/subscriptionGroup.json in the background.
type SubscriptionGroupManager struct {
	mu      sync.RWMutex
	table   map[string]*SubscriptionGroupConfig // values are never mutated in place
	version *versionStamp
	File    *File
	// validate names an illegal group name (Deps.ValidateGroup).
	validate func(group string) string
	// OnDelete, when set before use, is told of every group Delete
	// removed (after the table's lock is released).
	OnDelete func(group string)
}

func NewSubscriptionGroupManager(d Deps) *SubscriptionGroupManager {
	m := &SubscriptionGroupManager{table: make(map[string]*SubscriptionGroupConfig), version: newVersionStamp(d.Clock), validate: d.ValidateGroup}
	m.File = NewFile(filepath.Join(d.ConfigDir, "subscriptionGroup.json"), m.encode, d.Logger)
	for _, g := range systemGroups {
		m.table[g] = NewSubscriptionGroupConfig(g)
	}
	return m
}

func (m *SubscriptionGroupManager) Load() error {
	b, err := m.File.Load()
	if err != nil || b == nil {
		return err
	}
	var doc subscriptionGroupFile
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%w: decode %s: %w", ErrMetadata, m.File.Path, corrupt.Wrap(err))
	}
	m.mu.Lock()
	for name, g := range doc.SubscriptionGroupTable {
		if g == nil {
			continue
		}
		if g.GroupName == "" {
			g.GroupName = name
		}
		if g.Attributes == nil {
			g.Attributes = map[string]string{}
		}
		m.table[name] = g
	}
	m.mu.Unlock()
	m.version.set(doc.DataVersion)
	return nil
}

func (m *SubscriptionGroupManager) Document() subscriptionGroupFile {
	m.mu.RLock()
	defer m.mu.RUnlock()
	doc := subscriptionGroupFile{
		SubscriptionGroupTable: make(map[string]*SubscriptionGroupConfig, len(m.table)),
		DataVersion:            m.version.get(),
	}
	for k, v := range m.table {
		doc.SubscriptionGroupTable[k] = v
	}
	return doc
}

func (m *SubscriptionGroupManager) encode() ([]byte, error) {
	doc := m.Document()
	return json.MarshalIndent(&doc, "", "\t")
}

// Find returns the group's config, or nil.
func (m *SubscriptionGroupManager) Find(group string) *SubscriptionGroupConfig {
	m.mu.RLock()
	g := m.table[group]
	m.mu.RUnlock()
	return g
}

// FindOrCreate returns the group's config, creating it with defaults when
// autoCreate is set and the name is legal; nil otherwise.
func (m *SubscriptionGroupManager) FindOrCreate(group string, autoCreate bool) *SubscriptionGroupConfig {
	if g := m.Find(group); g != nil || !autoCreate {
		return g
	}
	if m.validate(group) != "" {
		return nil
	}
	m.mu.Lock()
	g := m.table[group]
	if g == nil {
		g = NewSubscriptionGroupConfig(group)
		m.table[group] = g
		m.version.next()
		m.mu.Unlock()
		m.File.MarkDirty()
		return g
	}
	m.mu.Unlock()
	return g
}

// Put creates or replaces a group config.
func (m *SubscriptionGroupManager) Put(g *SubscriptionGroupConfig) {
	c := *g
	if c.Attributes == nil {
		c.Attributes = map[string]string{}
	}
	m.mu.Lock()
	m.table[c.GroupName] = &c
	m.version.next()
	m.mu.Unlock()
	m.File.MarkDirty()
}

// Delete removes a group config and reports whether it existed.
func (m *SubscriptionGroupManager) Delete(group string) bool {
	m.mu.Lock()
	_, ok := m.table[group]
	if ok {
		delete(m.table, group)
		m.version.next()
	}
	m.mu.Unlock()
	if ok {
		m.File.MarkDirty()
		if m.OnDelete != nil {
			m.OnDelete(group)
		}
	}
	return ok
}
