package processor

import (
	"encoding/json"
	"fmt"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// HandleGetTopicConfig answers GET_TOPIC_CONFIG: the topic's config
// (RocketMQ's TopicConfigAndQueueMapping, without a queue mapping: Spool
// has no static topics).
func (a *Admin) HandleGetTopicConfig(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	topic := r.Str("topic", true)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	tc := a.d.Topics.Find(topic)
	if tc == nil {
		return response(req, remoting.TopicNotExist, "No topic in this broker. topic: "+topic)
	}
	return encoded(req, tc)
}

// HandleQueryTopicConsumeByWho answers QUERY_TOPIC_CONSUME_BY_WHO: the
// groups subscribed to the topic online and those that committed offsets
// of it (GroupList).
func (a *Admin) HandleQueryTopicConsumeByWho(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	topic := r.Str("topic", true)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	seen := map[string]bool{}
	out := adminbody.GroupList{GroupList: adminbody.List[string]{}}
	for _, g := range append(a.d.Consumers.GroupsOfTopic(topic), a.groupsOfTopic(topic)...) {
		if !seen[g] {
			seen[g] = true
			out.GroupList = append(out.GroupList, g)
		}
	}
	return encoded(req, &out)
}

// HandleQueryTopicsByConsumer answers QUERY_TOPICS_BY_CONSUMER: the
// topics the group committed offsets of (TopicList).
func (a *Admin) HandleQueryTopicsByConsumer(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	group := r.Str("group", true)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	out := adminbody.TopicList{BrokerAddr: a.d.Config().BrokerAddr, TopicList: adminbody.List[string]{}}
	out.TopicList = append(out.TopicList, a.topicsOfGroup(group)...)
	return encoded(req, &out)
}

// HandleGetSystemTopicListFromBroker answers
// GET_SYSTEM_TOPIC_LIST_FROM_BROKER: the topics the broker creates for
// itself (TopicList).
func (a *Admin) HandleGetSystemTopicListFromBroker(c *transport.Conn, req *remoting.Command) *remoting.Command {
	out := adminbody.TopicList{TopicList: adminbody.List[string]{}}
	out.TopicList = append(out.TopicList, a.d.SystemTopics()...)
	sortStrings(out.TopicList)
	return encoded(req, &out)
}

// HandleGetAllConsumerOffset answers GET_ALL_CONSUMER_OFFSET: every
// committed offset (ConsumerOffsetSerializeWrapper).
func (a *Admin) HandleGetAllConsumerOffset(c *transport.Conn, req *remoting.Command) *remoting.Command {
	table, version := a.d.Offsets.Snapshot()
	out := adminbody.ConsumerOffsetSerializeWrapper{DataVersion: version,
		OffsetTable: adminbody.Map[string, map[adminbody.IntKey]int64]{}}
	for key, queues := range table {
		t := make(map[adminbody.IntKey]int64, len(queues))
		for q, off := range queues {
			t[adminbody.IntKey(q)] = off
		}
		out.OffsetTable[key] = t
	}
	return encoded(req, &out)
}

// HandleGetAllDelayOffset answers GET_ALL_DELAY_OFFSET: the schedule
// service's next offset of every delay level
// (DelayOffsetSerializeWrapper).
func (a *Admin) HandleGetAllDelayOffset(c *transport.Conn, req *remoting.Command) *remoting.Command {
	if a.d.DelayOffsets == nil {
		return response(req, remoting.SystemError, "No delay offset in this broker")
	}
	out := adminbody.DelayOffsetSerializeWrapper{OffsetTable: adminbody.Map[adminbody.IntKey, int64]{}}
	for level, off := range a.d.DelayOffsets() {
		out.OffsetTable[adminbody.IntKey(level)] = off
	}
	out.DataVersion.Timestamp = a.nowMillis()
	return encoded(req, &out)
}

// checkTopicConfig names what is wrong with a topic config of a request
// ("" if nothing), by the rules of UPDATE_AND_CREATE_TOPIC.
func (a *Admin) checkTopicConfig(tc *metadata.TopicConfig) string {
	topic := tc.TopicName
	if rem := a.d.ValidateTopic(topic); rem != "" {
		return rem
	}
	if a.d.IsSystemTopic(topic) {
		return fmt.Sprintf("The topic[%s] is conflict with system topic.", topic)
	}
	cfg := a.d.Config()
	if topic == cfg.BrokerClusterName || topic == cfg.BrokerName {
		return fmt.Sprintf("The topic[%s] is conflict with system reserved words.", topic)
	}
	if tc.ReadQueueNums < 0 || tc.WriteQueueNums < 0 || tc.ReadQueueNums > 65535 || tc.WriteQueueNums > 65535 {
		return fmt.Sprintf("readQueueNums %d / writeQueueNums %d out of range [0, 65535]", tc.ReadQueueNums, tc.WriteQueueNums)
	}
	if tc.Perm&^(metadata.PermRead|metadata.PermWrite|metadata.PermInherit|metadata.PermPriority) != 0 {
		return fmt.Sprintf("perm %d has unknown bits", tc.Perm)
	}
	switch tc.TopicFilterType {
	case "":
		tc.TopicFilterType = metadata.FilterSingleTag
	case metadata.FilterSingleTag, metadata.FilterMultiTag:
	default:
		return fmt.Sprintf("topicFilterType %q is neither SINGLE_TAG nor MULTI_TAG", tc.TopicFilterType)
	}
	return ""
}

// listElements reads a body object's list field as raw elements, the body
// in fastjson's form or standard JSON.
func listElements(body []byte, field string) ([]json.RawMessage, error) {
	norm, err := adminbody.Normalize(body)
	if err != nil {
		return nil, err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(norm, &doc); err != nil {
		return nil, err
	}
	var out []json.RawMessage
	if raw, ok := doc[field]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
	}
	return out, nil
}

// HandleUpdateAndCreateTopicList answers UPDATE_AND_CREATE_TOPIC_LIST:
// every topic of the body is checked first, then all are created or
// updated, and the answer waits until they are registered with the name
// servers. A field the body leaves out has TopicConfig's default.
func (a *Admin) HandleUpdateAndCreateTopicList(c *transport.Conn, req *remoting.Command) *remoting.Command {
	elems, err := listElements(req.Body, "topicConfigList")
	if err != nil {
		return response(req, remoting.SystemError, fmt.Sprintf("%v: create topic list body: %v", ErrBadBody, err))
	}
	if len(elems) == 0 {
		return response(req, remoting.InvalidParameter, "the topic config list is empty")
	}
	tcs := make([]*metadata.TopicConfig, 0, len(elems))
	for _, raw := range elems {
		tc := metadata.NewTopicConfig("", 16, 16, metadata.PermRead|metadata.PermWrite)
		if err := json.Unmarshal(raw, tc); err != nil {
			return response(req, remoting.SystemError, fmt.Sprintf("%v: topic config %s: %v", ErrBadBody, raw, err))
		}
		if rem := a.checkTopicConfig(tc); rem != "" {
			return response(req, remoting.InvalidParameter, rem)
		}
		tcs = append(tcs, tc)
	}
	for _, tc := range tcs {
		a.d.Topics.Put(tc)
	}
	for _, tc := range tcs {
		a.d.HoldRoute(req, tc.TopicName)
	}
	return response(req, remoting.Success, "")
}

// HandleUpdateAndCreateSubscriptionGroupList answers
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST: every group of the body is
// checked first, then all are stored. A field the body leaves out has
// SubscriptionGroupConfig's default.
func (a *Admin) HandleUpdateAndCreateSubscriptionGroupList(c *transport.Conn, req *remoting.Command) *remoting.Command {
	elems, err := listElements(req.Body, "groupConfigList")
	if err != nil {
		return response(req, remoting.SystemError, fmt.Sprintf("%v: subscription group list body: %v", ErrBadBody, err))
	}
	if len(elems) == 0 {
		return response(req, remoting.InvalidParameter, "the subscription group config list is empty")
	}
	gs := make([]*metadata.SubscriptionGroupConfig, 0, len(elems))
	for _, raw := range elems {
		g := metadata.NewSubscriptionGroupConfig("")
		if err := json.Unmarshal(raw, g); err != nil {
			return response(req, remoting.SystemError, fmt.Sprintf("%v: subscription group config %s: %v", ErrBadBody, raw, err))
		}
		if rem := a.d.ValidateGroup(g.GroupName); rem != "" {
			return response(req, remoting.InvalidParameter, rem)
		}
		gs = append(gs, g)
	}
	for _, g := range gs {
		a.d.Groups.Put(g)
	}
	return response(req, remoting.Success, "")
}

// HandleCleanExpiredConsumeQueue answers CLEAN_EXPIRED_CONSUMEQUEUE with
// an error: the store offers no sweep of expired consume queues to run on
// request, so nothing is cleaned.
func (a *Admin) HandleCleanExpiredConsumeQueue(c *transport.Conn, req *remoting.Command) *remoting.Command {
	return response(req, remoting.SystemError,
		"CLEAN_EXPIRED_CONSUMEQUEUE is not supported by Spool: the store has no consume-queue sweep to run on request; nothing was cleaned")
}

// HandleCleanUnusedTopic answers CLEAN_UNUSED_TOPIC with an error: the
// store cannot list consume queues of topics missing from the topic
// table, so none are removed (DELETE_TOPIC_IN_BROKER removes a topic's
// queues).
func (a *Admin) HandleCleanUnusedTopic(c *transport.Conn, req *remoting.Command) *remoting.Command {
	return response(req, remoting.SystemError,
		"CLEAN_UNUSED_TOPIC is not supported by Spool: the store cannot list queues of topics missing from the topic table; nothing was cleaned (DELETE_TOPIC_IN_BROKER removes a topic's queues)")
}
