package clients

import (
	"sort"
	"time"

	"github.com/spoolmq/spool/remoting/transport"
)

// GroupInfo is a copy of what heartbeats registered for one consumer
// group: its members and its subscription table, for the admin requests.
type GroupInfo struct {
	ConsumeType      string
	MessageModel     string
	ConsumeFromWhere string
	LastUpdate       time.Time
	// Channels are the members, sorted by client id.
	Channels []Channel
	// Subscriptions maps a topic to the group's subscription of it.
	Subscriptions map[string]SubscriptionData
}

// Group returns a copy of the group's registration; false when no member
// of the group is online.
func (m *ConsumerManager) Group(group string) (GroupInfo, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	gi := m.groups[group]
	if gi == nil || len(gi.channels) == 0 {
		return GroupInfo{}, false
	}
	out := GroupInfo{
		ConsumeType: gi.consumeType, MessageModel: gi.messageModel, ConsumeFromWhere: gi.consumeFromWhere,
		LastUpdate:    gi.lastUpdate,
		Channels:      make([]Channel, 0, len(gi.channels)),
		Subscriptions: make(map[string]SubscriptionData, len(gi.subscriptions)),
	}
	for _, ch := range gi.channels {
		out.Channels = append(out.Channels, *ch)
	}
	sort.Slice(out.Channels, func(i, j int) bool { return out.Channels[i].ClientID < out.Channels[j].ClientID })
	for t, s := range gi.subscriptions {
		out.Subscriptions[t] = s.Data
	}
	return out, true
}

// GroupsOfTopic returns the online groups subscribed to topic, sorted.
func (m *ConsumerManager) GroupsOfTopic(topic string) []string {
	m.mu.RLock()
	var out []string
	for name, gi := range m.groups {
		if _, ok := gi.subscriptions[topic]; ok && len(gi.channels) > 0 {
			out = append(out, name)
		}
	}
	m.mu.RUnlock()
	sort.Strings(out)
	return out
}

// ConnOf returns the live connection of the group's member clientID, or
// nil.
func (m *ConsumerManager) ConnOf(group, clientID string) *transport.Conn {
	m.mu.RLock()
	defer m.mu.RUnlock()
	gi := m.groups[group]
	if gi == nil {
		return nil
	}
	for _, ch := range gi.channels {
		if ch.ClientID != clientID {
			continue
		}
		select {
		case <-ch.Conn.Closed():
		default:
			return ch.Conn
		}
	}
	return nil
}

// RemoteAddr is the address of a client's connection as RocketMQ prints
// it (host:port), or "".
func RemoteAddr(c *transport.Conn) string {
	if c == nil {
		return ""
	}
	return remoteAddr(c)
}

// Snapshot returns a copy of every producer group's channels, each group's
// sorted by client id.
func (m *ProducerManager) Snapshot() map[string][]Channel {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string][]Channel, len(m.groups))
	for name, g := range m.groups {
		chs := make([]Channel, 0, len(g))
		for _, ch := range g {
			chs = append(chs, *ch)
		}
		sort.Slice(chs, func(i, j int) bool { return chs[i].ClientID < chs[j].ClientID })
		out[name] = chs
	}
	return out
}
