package processor

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// HandleUpdateAndCreateTopic creates or updates a topic; the answer waits
// until the topic is registered with the name servers and written to
// topics.json (see holdRoute), so the route exists when the call returns.
func (p *Processor) HandleUpdateAndCreateTopic(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	topic := r.Str("topic", true)
	read := r.I32("readQueueNums", true, 0)
	write := r.I32("writeQueueNums", true, 0)
	perm := r.I32("perm", true, 0)
	filterType := r.Str("topicFilterType", false)
	sysFlag := r.I32("topicSysFlag", false, 0)
	order := r.Bool("order", false)
	attrs := r.Str("attributes", false)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	if rem := p.validateTopic(topic); rem != "" {
		return response(req, remoting.InvalidParameter, rem)
	}
	if p.isSystemTopic(topic) {
		return response(req, remoting.InvalidParameter, fmt.Sprintf("The topic[%s] is conflict with system topic.", topic))
	}
	cfg := p.config()
	if topic == cfg.BrokerClusterName || topic == cfg.BrokerName {
		return response(req, remoting.InvalidParameter, fmt.Sprintf("The topic[%s] is conflict with system reserved words.", topic))
	}
	if read < 0 || write < 0 || read > 65535 || write > 65535 {
		return response(req, remoting.InvalidParameter, fmt.Sprintf(
			"readQueueNums %d / writeQueueNums %d out of range [0, 65535]", read, write))
	}
	if perm&^(metadata.PermRead|metadata.PermWrite|metadata.PermInherit|metadata.PermPriority) != 0 {
		return response(req, remoting.InvalidParameter, fmt.Sprintf("perm %d has unknown bits", perm))
	}
	tc := metadata.NewTopicConfig(topic, int(read), int(write), int(perm))
	switch filterType {
	case "", metadata.FilterSingleTag:
	case metadata.FilterMultiTag:
		tc.TopicFilterType = metadata.FilterMultiTag
	default:
		return response(req, remoting.InvalidParameter, fmt.Sprintf("topicFilterType %q is neither SINGLE_TAG nor MULTI_TAG", filterType))
	}
	tc.TopicSysFlag = int(sysFlag)
	tc.Order = order
	if attrs = strings.TrimSpace(attrs); attrs != "" {
		a, err := parseTopicAttributes(attrs)
		if err != nil {
			return response(req, remoting.InvalidParameter, err.Error())
		}
		tc.Attributes = a
	}
	p.topics.Put(tc)
	p.holdRoute(req, topic)
	return response(req, remoting.Success, "")
}

// parseTopicAttributes reads the attributes field: Java sends
// "+key=value,+key2=value2"; a JSON object is accepted too.
func parseTopicAttributes(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.HasPrefix(s, "{") {
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			return nil, fmt.Errorf("attributes %q: %w", s, err)
		}
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		kv = strings.TrimPrefix(kv, "+")
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("attributes entry %q: want +key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

// HandleDeleteTopic removes a topic's config, consumer offsets and queues.
func (p *Processor) HandleDeleteTopic(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	topic := r.Str("topic", true)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	if p.isSystemTopic(topic) {
		return response(req, remoting.InvalidParameter, fmt.Sprintf("The topic[%s] is conflict with system topic.", topic))
	}
	p.topics.Delete(topic)
	p.offsets.RemoveTopic(topic)
	p.store.DeleteTopics([]string{topic})
	p.holdRoute(req, topic) // the whole table is registered again
	return response(req, remoting.Success, "")
}

// HandleGetAllTopicConfig answers the topic table (topics.json's form),
// or a page of it (topicSeq, maxTopicNum, dataVersion) with the table's
// size in totalTopicNum.
func (p *Processor) HandleGetAllTopicConfig(c *transport.Conn, req *remoting.Command) *remoting.Command {
	table, version := p.topics.Snapshot()
	page := readPage(req, "topicSeq", "maxTopicNum")
	body, err := json.Marshal(&metadata.TopicConfigFile{TopicConfigTable: pageNames(table, page, version), DataVersion: version})
	if err != nil {
		return response(req, remoting.SystemError, err.Error())
	}
	resp := response(req, remoting.Success, "")
	resp.SetExt("totalTopicNum", strconv.Itoa(len(table)))
	resp.Body = body
	return resp
}

// HandleUpdateAndCreateSubscriptionGroup stores the group config of the
// body.
func (p *Processor) HandleUpdateAndCreateSubscriptionGroup(c *transport.Conn, req *remoting.Command) *remoting.Command {
	g := metadata.NewSubscriptionGroupConfig("")
	if err := json.Unmarshal(req.Body, g); err != nil {
		return response(req, remoting.SystemError, fmt.Sprintf("%v: subscription group config: %v", ErrBadBody, err))
	}
	if rem := p.validateGroup(g.GroupName); rem != "" {
		return response(req, remoting.InvalidParameter, rem)
	}
	p.groups.Put(g)
	return response(req, remoting.Success, "")
}

// HandleDeleteSubscriptionGroup removes a group config (and its offsets
// when cleanOffset is set).
func (p *Processor) HandleDeleteSubscriptionGroup(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	group := r.Str("groupName", true)
	clean := r.Bool("cleanOffset", false)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	p.groups.Delete(group)
	if clean {
		p.offsets.RemoveGroup(group)
	}
	return response(req, remoting.Success, "")
}

// HandleGetAllSubscriptionGroupConfig answers every group config in strict
// JSON, or a page of them (groupSeq, maxGroupNum, dataVersion) with the
// table's size in totalGroupNum.
func (p *Processor) HandleGetAllSubscriptionGroupConfig(c *transport.Conn, req *remoting.Command) *remoting.Command {
	doc := p.groups.Document()
	total := len(doc.SubscriptionGroupTable)
	doc.SubscriptionGroupTable = pageNames(doc.SubscriptionGroupTable, readPage(req, "groupSeq", "maxGroupNum"), doc.DataVersion)
	body, err := json.Marshal(&doc)
	if err != nil {
		return response(req, remoting.SystemError, err.Error())
	}
	resp := response(req, remoting.Success, "")
	resp.SetExt("totalGroupNum", strconv.Itoa(total))
	resp.Body = body
	return resp
}
