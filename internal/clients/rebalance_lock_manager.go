package clients

import (
	"sync"
	"time"

	"github.com/spoolmq/spool/internal/clock"
)

// lockMaxLiveTime is how long a queue lock lives without renewal
// (rocketmq.broker.rebalance.lockMaxLiveTime).
const lockMaxLiveTime = 60 * time.Second

// MessageQueue names one queue of a topic on a broker.
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
}

type lockEntry struct {
	clientID   string
	lastUpdate time.Time
}

// RebalanceLockManager is the orderly-consumption lock table: (group,
// queue) -> owner client id, expiring after lockMaxLiveTime without renewal.
type RebalanceLockManager struct {
	mu    sync.Mutex
	table map[string]map[MessageQueue]*lockEntry
	now   func() time.Time
}

// NewRebalanceLockManager builds the lock table; its expiry reads clk
// (nil = the wall clock).
func NewRebalanceLockManager(clk clock.Clock) *RebalanceLockManager {
	return &RebalanceLockManager{table: make(map[string]map[MessageQueue]*lockEntry), now: clock.Or(clk).Now}
}

// TryLockBatch locks the queues that are free, expired, or already held
// by clientID (renewing them), and returns those now held by clientID.
func (m *RebalanceLockManager) TryLockBatch(group string, mqs []MessageQueue, clientID string) []MessageQueue {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.table[group]
	if g == nil {
		g = make(map[MessageQueue]*lockEntry)
		m.table[group] = g
	}
	out := make([]MessageQueue, 0, len(mqs))
	for _, mq := range mqs {
		e := g[mq]
		switch {
		case e == nil || now.Sub(e.lastUpdate) > lockMaxLiveTime:
			g[mq] = &lockEntry{clientID: clientID, lastUpdate: now}
		case e.clientID == clientID:
			e.lastUpdate = now
		default:
			continue
		}
		out = append(out, mq)
	}
	return out
}

// UnlockBatch releases the queues held by clientID.
func (m *RebalanceLockManager) UnlockBatch(group string, mqs []MessageQueue, clientID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.table[group]
	for _, mq := range mqs {
		if e := g[mq]; e != nil && e.clientID == clientID {
			delete(g, mq)
		}
	}
	if len(g) == 0 {
		delete(m.table, group)
	}
}

// IsLockAllExpired reports whether group holds no unexpired lock.
func (m *RebalanceLockManager) IsLockAllExpired(group string) bool {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.table[group] {
		if now.Sub(e.lastUpdate) <= lockMaxLiveTime {
			return false
		}
	}
	return true
}
