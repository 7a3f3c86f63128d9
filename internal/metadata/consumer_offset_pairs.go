package metadata

import (
	"sort"
	"strings"
)

// TopicGroup names one (topic, group) pair of the offset table.
type TopicGroup struct{ Topic, Group string }

// TopicGroups lists the (topic, group) pairs with committed offsets,
// sorted by group then topic.
func (m *ConsumerOffsetManager) TopicGroups() []TopicGroup {
	m.mu.Lock()
	out := make([]TopicGroup, 0, len(m.table))
	for k := range m.table {
		// The key is "topic@group"; a topic holds no '@'.
		if t, g, ok := strings.Cut(k, "@"); ok {
			out = append(out, TopicGroup{Topic: t, Group: g})
		}
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Topic < out[j].Topic
	})
	return out
}
