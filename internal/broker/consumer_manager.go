package broker

import (
	"sort"
	"sync"
	"time"

	"github.com/spoolmq/spool/remoting/transport"
)

// Message models and consume types of heartbeats.
const (
	modelClustering   = "CLUSTERING"
	modelBroadcasting = "BROADCASTING"
)

// consumerGroupInfo is what the broker knows about one consumer group from
// heartbeats: its members (one entry per connection) and the group's
// subscription table.
type consumerGroupInfo struct {
	group            string
	consumeType      string
	messageModel     string
	consumeFromWhere string
	channels         map[uint64]*clientChannel // conn id -> member
	subscriptions    map[string]*subscription  // topic -> subscription
	lastUpdate       time.Time
}

// ConsumerManager keeps consumer groups registered by heartbeats. A member
// leaves when its connection closes, when it unregisters, or after
// channelExpiredTimeout without a heartbeat; membership changes call
// onChange (which sends NOTIFY_CONSUMER_IDS_CHANGED to the members).
type ConsumerManager struct {
	mu     sync.RWMutex
	groups map[string]*consumerGroupInfo

	// onChange is called, without locks held, with the group and its
	// remaining member connections after a membership change.
	onChange func(group string, conns []*transport.Conn)
}

func newConsumerManager() *ConsumerManager {
	return &ConsumerManager{groups: make(map[string]*consumerGroupInfo), onChange: func(string, []*transport.Conn) {}}
}

// consumerRegistration is one group's part of a heartbeat.
type consumerRegistration struct {
	group            string
	consumeType      string
	messageModel     string
	consumeFromWhere string
	subscriptions    []*subscription
}

// Register records ch as a member of the group with its subscriptions and
// reports whether the membership changed.
func (m *ConsumerManager) Register(ch *clientChannel, r consumerRegistration, notify bool) bool {
	m.mu.Lock()
	gi := m.groups[r.group]
	if gi == nil {
		gi = &consumerGroupInfo{
			group:         r.group,
			channels:      make(map[uint64]*clientChannel),
			subscriptions: make(map[string]*subscription),
		}
		m.groups[r.group] = gi
	}
	gi.consumeType, gi.messageModel, gi.consumeFromWhere = r.consumeType, r.messageModel, r.consumeFromWhere
	gi.lastUpdate = ch.lastUpdate
	changed := false
	if old := gi.channels[ch.conn.ID()]; old == nil || old.clientID != ch.clientID {
		changed = true
	}
	gi.channels[ch.conn.ID()] = ch
	// The newest heartbeat's subscription set replaces the group's table.
	next := make(map[string]*subscription, len(r.subscriptions))
	for _, s := range r.subscriptions {
		if old := gi.subscriptions[s.data.Topic]; old != nil && old.data.SubString == s.data.SubString &&
			old.data.ExpressionType == s.data.ExpressionType && old.data.SubVersion >= s.data.SubVersion {
			next[s.data.Topic] = old
			continue
		}
		next[s.data.Topic] = s
	}
	gi.subscriptions = next
	var conns []*transport.Conn
	if changed && notify {
		conns = gi.connsLocked()
	}
	m.mu.Unlock()
	if conns != nil {
		m.onChange(r.group, conns)
	}
	return changed
}

func (gi *consumerGroupInfo) connsLocked() []*transport.Conn {
	out := make([]*transport.Conn, 0, len(gi.channels))
	for _, ch := range gi.channels {
		out = append(out, ch.conn)
	}
	return out
}

// Unregister removes the member with clientID (on connection conn) from
// group.
func (m *ConsumerManager) Unregister(group string, conn *transport.Conn, notify bool) {
	m.removeWhere(func(g string, ch *clientChannel) bool {
		return g == group && ch.conn.ID() == conn.ID()
	}, notify)
}

// RemoveConn removes a closed connection from every group.
func (m *ConsumerManager) RemoveConn(conn *transport.Conn, notify bool) {
	m.removeWhere(func(_ string, ch *clientChannel) bool { return ch.conn.ID() == conn.ID() }, notify)
}

// ScanExpired removes members whose last heartbeat is older than expiry.
func (m *ConsumerManager) ScanExpired(now time.Time, expiry time.Duration, notify bool) {
	m.removeWhere(func(_ string, ch *clientChannel) bool { return now.Sub(ch.lastUpdate) > expiry }, notify)
}

func (m *ConsumerManager) removeWhere(match func(group string, ch *clientChannel) bool, notify bool) {
	type change struct {
		group string
		conns []*transport.Conn
	}
	var changes []change
	m.mu.Lock()
	for name, gi := range m.groups {
		removed := false
		for id, ch := range gi.channels {
			if match(name, ch) {
				delete(gi.channels, id)
				removed = true
			}
		}
		if !removed {
			continue
		}
		if len(gi.channels) == 0 {
			delete(m.groups, name)
			continue
		}
		if notify {
			changes = append(changes, change{name, gi.connsLocked()})
		}
	}
	m.mu.Unlock()
	for _, c := range changes {
		m.onChange(c.group, c.conns)
	}
}

// ClientIDs returns the group's member client ids, sorted, or nil when the
// group has none.
func (m *ConsumerManager) ClientIDs(group string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	gi := m.groups[group]
	if gi == nil || len(gi.channels) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(gi.channels))
	out := make([]string, 0, len(gi.channels))
	for _, ch := range gi.channels {
		if !seen[ch.clientID] {
			seen[ch.clientID] = true
			out = append(out, ch.clientID)
		}
	}
	sort.Strings(out)
	return out
}

// groupView is what the pull path needs from a group's registration.
type groupView struct {
	messageModel string
	sub          *subscription
}

// FindSubscription returns the group's subscription of topic. found
// reports whether the group is registered at all.
func (m *ConsumerManager) FindSubscription(group, topic string) (v groupView, found bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	gi := m.groups[group]
	if gi == nil {
		return groupView{}, false
	}
	return groupView{messageModel: gi.messageModel, sub: gi.subscriptions[topic]}, true
}

// Groups returns the registered group names, sorted.
func (m *ConsumerManager) Groups() []string {
	m.mu.RLock()
	out := make([]string, 0, len(m.groups))
	for g := range m.groups {
		out = append(out, g)
	}
	m.mu.RUnlock()
	sort.Strings(out)
	return out
}
