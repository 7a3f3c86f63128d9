package clients

import (
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/spoolmq/spool/remoting/transport"
)

// Message models and consume types of heartbeats.
const (
	modelClustering   = "CLUSTERING"
	ModelBroadcasting = "BROADCASTING"
)

// consumerGroupInfo is what the broker knows about one consumer group from
// heartbeats: its members (one entry per connection) and the group's
// subscription table.
type consumerGroupInfo struct {
	group            string
	consumeType      string
	messageModel     string
	consumeFromWhere string
	channels         map[uint64]*Channel      // conn id -> member
	subscriptions    map[string]*Subscription // topic -> subscription
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
	logger   *slog.Logger
}

func NewConsumerManager(d Deps) *ConsumerManager {
	m := &ConsumerManager{groups: make(map[string]*consumerGroupInfo), logger: d.Logger}
	m.onChange = m.notifyConsumerIdsChanged
	return m
}

// Registration is one group's part of a heartbeat.
type Registration struct {
	Group            string
	ConsumeType      string
	MessageModel     string
	ConsumeFromWhere string
	Subscriptions    []*Subscription
}

// Register records ch as a member of the group with its subscriptions and
// reports whether the membership changed.
func (m *ConsumerManager) Register(ch *Channel, r Registration, notify bool) bool {
	m.mu.Lock()
	gi := m.groups[r.Group]
	if gi == nil {
		gi = &consumerGroupInfo{
			group:         r.Group,
			channels:      make(map[uint64]*Channel),
			subscriptions: make(map[string]*Subscription),
		}
		m.groups[r.Group] = gi
	}
	gi.consumeType, gi.messageModel, gi.consumeFromWhere = r.ConsumeType, r.MessageModel, r.ConsumeFromWhere
	gi.lastUpdate = ch.LastUpdate
	changed := false
	if old := gi.channels[ch.Conn.ID()]; old == nil || old.ClientID != ch.ClientID {
		changed = true
	}
	gi.channels[ch.Conn.ID()] = ch
	// The newest heartbeat's subscription set replaces the group's table.
	next := make(map[string]*Subscription, len(r.Subscriptions))
	for _, s := range r.Subscriptions {
		if old := gi.subscriptions[s.Data.Topic]; old != nil && old.Data.SubString == s.Data.SubString &&
			old.Data.ExpressionType == s.Data.ExpressionType && old.Data.SubVersion >= s.Data.SubVersion {
			next[s.Data.Topic] = old
			continue
		}
		next[s.Data.Topic] = s
	}
	gi.subscriptions = next
	var conns []*transport.Conn
	if changed && notify {
		conns = gi.connsLocked()
	}
	m.mu.Unlock()
	if conns != nil {
		m.onChange(r.Group, conns)
	}
	return changed
}

func (gi *consumerGroupInfo) connsLocked() []*transport.Conn {
	out := make([]*transport.Conn, 0, len(gi.channels))
	for _, ch := range gi.channels {
		out = append(out, ch.Conn)
	}
	return out
}

// Unregister removes the member with clientID (on connection conn) from
// group.
func (m *ConsumerManager) Unregister(group string, conn *transport.Conn, notify bool) {
	m.removeWhere(func(g string, ch *Channel) bool {
		return g == group && ch.Conn.ID() == conn.ID()
	}, notify)
}

// RemoveConn removes a closed connection from every group.
func (m *ConsumerManager) RemoveConn(conn *transport.Conn, notify bool) {
	m.removeWhere(func(_ string, ch *Channel) bool { return ch.Conn.ID() == conn.ID() }, notify)
}

// ScanExpired removes members whose last heartbeat is older than expiry.
func (m *ConsumerManager) ScanExpired(now time.Time, expiry time.Duration, notify bool) {
	m.removeWhere(func(_ string, ch *Channel) bool { return now.Sub(ch.LastUpdate) > expiry }, notify)
}

func (m *ConsumerManager) removeWhere(match func(group string, ch *Channel) bool, notify bool) {
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
		if !seen[ch.ClientID] {
			seen[ch.ClientID] = true
			out = append(out, ch.ClientID)
		}
	}
	sort.Strings(out)
	return out
}

// GroupView is what the pull path needs from a group's registration.
type GroupView struct {
	MessageModel string
	Sub          *Subscription
}

// FindSubscription returns the group's subscription of topic. found
// reports whether the group is registered at all.
func (m *ConsumerManager) FindSubscription(group, topic string) (v GroupView, found bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	gi := m.groups[group]
	if gi == nil {
		return GroupView{}, false
	}
	return GroupView{MessageModel: gi.messageModel, Sub: gi.subscriptions[topic]}, true
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
