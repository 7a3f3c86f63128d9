package metadata

// Snapshot returns a copy of the offset table ("topic@group" -> queue id
// -> committed offset) and its data version.
func (m *ConsumerOffsetManager) Snapshot() (map[string]map[int32]int64, DataVersion) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]map[int32]int64, len(m.table))
	for key, queues := range m.table {
		t := make(map[int32]int64, len(queues))
		for q, off := range queues {
			t[q] = off
		}
		out[key] = t
	}
	return out, m.version.get()
}
