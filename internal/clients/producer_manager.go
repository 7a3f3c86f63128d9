package clients

import (
	"sync"
	"time"

	"github.com/spoolmq/spool/remoting/transport"
)

// ProducerManager keeps producer groups' connections from heartbeats: the
// transaction check-back and reply routing pick connections from it.
type ProducerManager struct {
	mu     sync.RWMutex
	groups map[string]map[uint64]*Channel // group -> conn id -> channel
}

func NewProducerManager() *ProducerManager {
	return &ProducerManager{groups: make(map[string]map[uint64]*Channel)}
}

// Register records ch under group.
func (m *ProducerManager) Register(group string, ch *Channel) {
	m.mu.Lock()
	g := m.groups[group]
	if g == nil {
		g = make(map[uint64]*Channel)
		m.groups[group] = g
	}
	g[ch.Conn.ID()] = ch
	m.mu.Unlock()
}

// Unregister removes conn from group.
func (m *ProducerManager) Unregister(group string, conn *transport.Conn) {
	m.mu.Lock()
	if g := m.groups[group]; g != nil {
		delete(g, conn.ID())
		if len(g) == 0 {
			delete(m.groups, group)
		}
	}
	m.mu.Unlock()
}

// RemoveConn removes a closed connection from every group.
func (m *ProducerManager) RemoveConn(conn *transport.Conn) {
	m.removeWhere(func(ch *Channel) bool { return ch.Conn.ID() == conn.ID() })
}

// ScanExpired removes channels whose last heartbeat is older than expiry.
func (m *ProducerManager) ScanExpired(now time.Time, expiry time.Duration) {
	m.removeWhere(func(ch *Channel) bool { return now.Sub(ch.LastUpdate) > expiry })
}

func (m *ProducerManager) removeWhere(match func(*Channel) bool) {
	m.mu.Lock()
	for name, g := range m.groups {
		for id, ch := range g {
			if match(ch) {
				delete(g, id)
			}
		}
		if len(g) == 0 {
			delete(m.groups, name)
		}
	}
	m.mu.Unlock()
}

// AnyConn returns a live connection of group, or nil.
func (m *ProducerManager) AnyConn(group string) *transport.Conn {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var best *Channel
	for _, ch := range m.groups[group] {
		select {
		case <-ch.Conn.Closed():
			continue
		default:
		}
		if best == nil || ch.LastUpdate.After(best.LastUpdate) {
			best = ch
		}
	}
	if best == nil {
		return nil
	}
	return best.Conn
}

// ConnByClientID returns a live connection of the client, or nil.
func (m *ProducerManager) ConnByClientID(clientID string) *transport.Conn {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, g := range m.groups {
		for _, ch := range g {
			if ch.ClientID == clientID {
				return ch.Conn
			}
		}
	}
	return nil
}
