package namesrv

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/spoolmq/spool/internal/corrupt"
)

// KVConfig is the name server's namespace -> key -> value table (PUT/GET/
// DELETE_KV_CONFIG, GET_KVLIST_BY_NAMESPACE). Like RouteTable it has no
// lock; the server serialises access.
type KVConfig struct {
	table map[string]map[string]string
}

// NewKVConfig returns an empty table.
func NewKVConfig() *KVConfig {
	return &KVConfig{table: make(map[string]map[string]string)}
}

// kvConfigFile is the on-disk form, RocketMQ's KVConfigSerializeWrapper, so
// a kvConfig.json written by either server is read by the other.
type kvConfigFile struct {
	ConfigTable map[string]map[string]string `json:"configTable"`
}

// DecodeKVConfig parses the on-disk form.
func DecodeKVConfig(data []byte) (*KVConfig, error) {
	var f kvConfigFile
	if err := unmarshalJavaJSON(data, &f); err != nil {
		return nil, corrupt.Wrap(fmt.Errorf("%w: %v", ErrBadKVConfigFile, err))
	}
	kv := NewKVConfig()
	for ns, m := range f.ConfigTable {
		if len(m) == 0 {
			continue
		}
		c := make(map[string]string, len(m))
		for k, v := range m {
			c[k] = v
		}
		kv.table[ns] = c
	}
	return kv, nil
}

// Encode returns the on-disk form (keys sorted, as encoding/json writes
// maps).
func (kv *KVConfig) Encode() []byte {
	f := kvConfigFile{ConfigTable: kv.table}
	b, err := json.MarshalIndent(&f, "", "\t")
	if err != nil {
		panic("namesrv: marshal kv config: " + err.Error())
	}
	return append(b, '\n')
}

// Put sets ns/key to value and reports whether the table changed.
func (kv *KVConfig) Put(ns, key, value string) bool {
	m := kv.table[ns]
	if m == nil {
		m = make(map[string]string)
		kv.table[ns] = m
	}
	if old, ok := m[key]; ok && old == value {
		return false
	}
	m[key] = value
	return true
}

// Get returns ns/key.
func (kv *KVConfig) Get(ns, key string) (string, bool) {
	v, ok := kv.table[ns][key]
	return v, ok
}

// Delete removes ns/key and reports whether it existed. An emptied
// namespace is removed.
func (kv *KVConfig) Delete(ns, key string) bool {
	m := kv.table[ns]
	if _, ok := m[key]; !ok {
		return false
	}
	delete(m, key)
	if len(m) == 0 {
		delete(kv.table, ns)
	}
	return true
}

// Namespace returns a copy of ns's entries; false when ns has none.
func (kv *KVConfig) Namespace(ns string) (map[string]string, bool) {
	m := kv.table[ns]
	if len(m) == 0 {
		return nil, false
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c, true
}

// Namespaces returns the namespaces holding entries, sorted.
func (kv *KVConfig) Namespaces() []string {
	l := make([]string, 0, len(kv.table))
	for ns := range kv.table {
		l = append(l, ns)
	}
	sort.Strings(l)
	return l
}
