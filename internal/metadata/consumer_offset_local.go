package metadata

// A slave's consumers may commit offsets to it while its master is down.
// The slave copies its master's offsets only forward (Advance) and keeps a
// ledger of the commits its own clients made (TrackLocalCommits), so the
// wiring can hand them to the master once it is back.

// OffsetKey names one queue's offset of a consumer group.
type OffsetKey struct {
	Topic, Group string
	QueueID      int32
}

// TrackLocalCommits makes every later Commit note its offset in the
// ledger LocalCommits returns (a slave's consumers' commits).
func (m *ConsumerOffsetManager) TrackLocalCommits() {
	m.mu.Lock()
	if m.local == nil {
		m.local = make(map[OffsetKey]int64)
	}
	m.mu.Unlock()
}

// Advance sets the offset only when it is ahead of the one held (or none
// is held), and reports whether it did. It is not a commit of a client:
// the ledger does not note it.
func (m *ConsumerOffsetManager) Advance(group, topic string, queueID int32, offset int64) bool {
	key := offsetKey(topic, group)
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.table[key]
	if old, ok := t[queueID]; ok && old >= offset {
		return false
	}
	if t == nil {
		t = make(map[int32]int64)
		m.table[key] = t
	}
	t[queueID] = offset
	m.version.next()
	m.dirty.Store(true)
	return true
}

// LocalCommits returns a copy of the ledger: each queue's latest offset
// committed through Commit since tracking began (or restored) and not yet
// settled.
func (m *ConsumerOffsetManager) LocalCommits() map[OffsetKey]int64 {
	out, _ := m.LocalCommitsVersion()
	return out
}

// LocalCommitsVersion is LocalCommits with the ledger's change count, so
// that whoever keeps the ledger on disk writes it only when it changed.
func (m *ConsumerOffsetManager) LocalCommitsVersion() (map[OffsetKey]int64, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[OffsetKey]int64, len(m.local))
	for k, v := range m.local {
		out[k] = v
	}
	return out, m.localVersion
}

// RestoreLocalCommits notes entries in the ledger (a slave's ledger kept
// on disk, read back at start) unless the ledger already notes the queue;
// it does nothing unless TrackLocalCommits was called.
func (m *ConsumerOffsetManager) RestoreLocalCommits(entries map[OffsetKey]int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.local == nil {
		return
	}
	for k, off := range entries {
		if _, ok := m.local[k]; !ok {
			m.local[k] = off
			m.localVersion++
		}
	}
}

// SettleLocal removes a queue from the ledger if its noted offset is
// still offset (a later commit keeps it).
func (m *ConsumerOffsetManager) SettleLocal(k OffsetKey, offset int64) {
	m.mu.Lock()
	if v, ok := m.local[k]; ok && v == offset {
		delete(m.local, k)
		m.localVersion++
	}
	m.mu.Unlock()
}

// OffsetsToPush decides which of a slave's local commits its master must
// be given: those ahead of the master's offset for the queue (or that the
// master lacks). The rest are settled: the master holds them or more.
func OffsetsToPush(local map[OffsetKey]int64, master map[OffsetKey]int64) (push, settled map[OffsetKey]int64) {
	push, settled = map[OffsetKey]int64{}, map[OffsetKey]int64{}
	for k, off := range local {
		if m, ok := master[k]; ok && m >= off {
			settled[k] = off
			continue
		}
		push[k] = off
	}
	return push, settled
}
