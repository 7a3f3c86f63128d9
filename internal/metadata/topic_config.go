package metadata

import "strings"

// TopicConfig is one topic's configuration, in RocketMQ's JSON form (the
// values of topics.json's topicConfigTable, and of registration bodies).
type TopicConfig struct {
	TopicName       string            `json:"topicName"`
	ReadQueueNums   int               `json:"readQueueNums"`
	WriteQueueNums  int               `json:"writeQueueNums"`
	Perm            int               `json:"perm"`
	TopicFilterType string            `json:"topicFilterType"`
	TopicSysFlag    int               `json:"topicSysFlag"`
	Order           bool              `json:"order"`
	Attributes      map[string]string `json:"attributes"`
}

const (
	FilterSingleTag = "SINGLE_TAG"
	FilterMultiTag  = "MULTI_TAG"
)

// NewTopicConfig copies name: a name sliced from a request header would
// keep the whole header alive as long as the table holds the topic.
func NewTopicConfig(name string, read, write, perm int) *TopicConfig {
	return &TopicConfig{
		TopicName:       strings.Clone(name),
		ReadQueueNums:   read,
		WriteQueueNums:  write,
		Perm:            perm,
		TopicFilterType: FilterSingleTag,
		Attributes:      map[string]string{},
	}
}

// clone returns a deep copy (the strings too, see newTopicConfig).
func (t *TopicConfig) clone() *TopicConfig {
	c := *t
	c.TopicName = strings.Clone(t.TopicName)
	c.Attributes = make(map[string]string, len(t.Attributes))
	for k, v := range t.Attributes {
		c.Attributes[strings.Clone(k)] = strings.Clone(v)
	}
	return &c
}

// QueueIDBound is the exclusive bound of legal queue ids for sends.
func (t *TopicConfig) QueueIDBound() int { return max(t.ReadQueueNums, t.WriteQueueNums) }

func (t *TopicConfig) equal(o *TopicConfig) bool {
	if t.TopicName != o.TopicName || t.ReadQueueNums != o.ReadQueueNums || t.WriteQueueNums != o.WriteQueueNums ||
		t.Perm != o.Perm || t.TopicFilterType != o.TopicFilterType || t.TopicSysFlag != o.TopicSysFlag ||
		t.Order != o.Order || len(t.Attributes) != len(o.Attributes) {
		return false
	}
	for k, v := range t.Attributes {
		if ov, ok := o.Attributes[k]; !ok || ov != v {
			return false
		}
	}
	return true
}
