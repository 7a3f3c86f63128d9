package auth

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spoolmq/spool/remoting"
)

// Kind is how a request code is checked.
type Kind int

const (
	// Checked: the user needs every one of the rule's Needs.
	Checked Kind = iota
	// Inner: broker registration, broker-to-broker and controller traffic,
	// and the requests a broker sends to clients: only the inner
	// credentials (innerClientAuthenticationCredentials) or a super user
	// may send them.
	Inner
	// InnerOrChecked: the inner credentials pass (a slave copying its
	// master's metadata signs with them); any other user needs every one
	// of the rule's Needs.
	InnerOrChecked
)

// BodySource names the request body a rule reads resource names from.
type BodySource int

// Bodies read for resource names.
const (
	NoBody BodySource = iota
	// HeartbeatBody: every consumer group (Group Sub) and every topic it
	// subscribes to but retry topics (Topic Sub), as RocketMQ 5.3.
	HeartbeatBody
	// LockBody: the consumer group (Group Sub) and the topics of the
	// queues but retry topics (Topic Sub).
	LockBody
	// SubscriptionGroupBody: the group of a SubscriptionGroupConfig
	// (groupName).
	SubscriptionGroupBody
	// ClientConfigBody: the group of a CheckClientRequestBody (group).
	ClientConfigBody
	// TopicListBody: every topic of a CreateTopicListRequestBody
	// (topicConfigList[].topicName), Topic Create.
	TopicListBody
	// GroupListBody: every group of a SubscriptionGroupList
	// (groupConfigList[].groupName), Group Create.
	GroupListBody
)

// Need is one resource a request needs actions on. The resource's name
// is the ext field Field (Cluster needs have none: the broker's cluster);
// a retry topic (%RETRY%<group>) in a Topic field needs the actions on
// Group:<group> instead, as RocketMQ 5.3 does. When Field is absent or
// blank the need is skipped if Optional, else it falls back to the
// actions on the cluster. When Split is set the field holds names
// separated by it, and each name is a resource of its own.
type Need struct {
	Type     ResourceType
	Field    string
	Actions  []Action
	Optional bool
	OnRetry  RetryRule
	Split    string
}

// RetryRule is what a retry topic in a Topic field needs.
type RetryRule int

// Retry rules (RocketMQ 5.3's DefaultAuthorizationContextBuilder).
const (
	// RetrySameActions: the need's actions on the group.
	RetrySameActions RetryRule = iota
	// RetrySub: Sub on the group (a consumer sending back to retry).
	RetrySub
	// RetrySubGet: Sub or Get on the group (a route query).
	RetrySubGet
	// RetrySkip: nothing (the rule's group need covers it).
	RetrySkip
)

// Rule is what one request code needs. Note says where Spool departs
// from RocketMQ 5.3 (which leaves some admin codes without a check).
type Rule struct {
	Code  int32
	Kind  Kind
	Needs []Need
	Body  BodySource
	Note  string
}

// Requirement is one resource and the actions (any one suffices) a
// request needs on it.
type Requirement struct {
	Resource Resource
	Actions  []Action
}

func acts(a ...Action) []Action { return a }

func topic(field string, a ...Action) Need { return Need{Type: Topic, Field: field, Actions: a} }
func send(field string) Need {
	return Need{Type: Topic, Field: field, Actions: acts(Pub), OnRetry: RetrySub}
}
func consume(field string, a ...Action) Need {
	return Need{Type: Topic, Field: field, Actions: a, OnRetry: RetrySkip}
}
func group(field string, a ...Action) Need { return Need{Type: Group, Field: field, Actions: a} }
func cluster(a ...Action) Need             { return Need{Type: Cluster, Actions: a} }

// optional is n, skipped when its field is absent or blank.
func optional(n Need) Need { n.Optional = true; return n }

const stricter = "RocketMQ 5.3 checks nothing beyond authentication; Spool requires this"

// copied is the note of the codes a slave sends its master, signed with
// the inner credentials, to copy the master's metadata.
const copied = "RocketMQ 5.3 checks nothing beyond authentication; Spool lets the inner credentials (a slave copying its master) pass and requires this of other users"

// Rules maps every request code Spool serves or sends to what it needs.
var Rules = map[int32]Rule{}

func init() {
	for _, r := range []Rule{
		{Code: remoting.SendMessage, Needs: []Need{send("topic")}},
		{Code: remoting.SendMessageV2, Needs: []Need{send("b")}},
		{Code: remoting.SendBatchMessage, Needs: []Need{send("b")}},
		{Code: remoting.SendReplyMessage, Needs: []Need{send("topic")}, Note: stricter},
		{Code: remoting.SendReplyMessageV2, Needs: []Need{send("b")}, Note: stricter},
		{Code: remoting.ConsumerSendMsgBack, Needs: []Need{group("group", Sub)}},
		{Code: remoting.EndTransaction, Needs: []Need{{Type: Topic, Field: "topic", Actions: acts(Pub), Optional: true}}},
		{Code: remoting.PullMessage, Needs: []Need{consume("topic", Sub), group("consumerGroup", Sub)}},
		{Code: remoting.LitePullMessage, Needs: []Need{consume("topic", Sub), group("consumerGroup", Sub)}, Note: stricter},
		{Code: remoting.QueryMessage, Needs: []Need{topic("topic", Sub, Get)}},
		{Code: remoting.ViewMessageByID, Needs: []Need{topic("topic", Get)},
			Note: "without a topic field (older clients) Spool requires Cluster Get"},
		{Code: remoting.HeartBeat, Body: HeartbeatBody},
		{Code: remoting.UnregisterClient, Needs: []Need{{Type: Group, Field: "consumerGroup", Actions: acts(Sub), Optional: true}}},
		{Code: remoting.CheckClientConfig, Body: ClientConfigBody, Note: stricter},
		{Code: remoting.GetConsumerListByGroup, Needs: []Need{group("consumerGroup", Sub, Get)}},
		{Code: remoting.QueryConsumerOffset, Needs: []Need{consume("topic", Sub, Get), group("consumerGroup", Sub, Get)}},
		{Code: remoting.UpdateConsumerOffset, Needs: []Need{consume("topic", Sub, Update), group("consumerGroup", Sub, Update)}},
		{Code: remoting.LockBatchMQ, Body: LockBody},
		{Code: remoting.UnlockBatchMQ, Body: LockBody},
		{Code: remoting.GetMaxOffset, Needs: []Need{topic("topic", Get)}},
		{Code: remoting.GetMinOffset, Needs: []Need{topic("topic", Get)}},
		{Code: remoting.SearchOffsetByTimestamp, Needs: []Need{topic("topic", Get)}},
		{Code: remoting.GetEarliestMsgStoretime, Needs: []Need{topic("topic", Get)}},
		{Code: remoting.UpdateAndCreateTopic, Needs: []Need{topic("topic", Create)}},
		{Code: remoting.DeleteTopicInBroker, Needs: []Need{topic("topic", Delete)}},
		{Code: remoting.GetAllTopicConfig, Kind: InnerOrChecked, Needs: []Need{cluster(Get)},
			Note: "RocketMQ 5.3 annotates Topic List but names no topic, so checks nothing beyond authentication; Spool lets the inner credentials (a slave copying its master) pass and requires this of other users"},
		{Code: remoting.UpdateAndCreateSubscriptionGroup, Body: SubscriptionGroupBody, Note: stricter},
		{Code: remoting.DeleteSubscriptionGroup, Needs: []Need{group("groupName", Delete)}},
		{Code: remoting.GetAllSubscriptionGroupConfig, Kind: InnerOrChecked, Needs: []Need{cluster(Get)}, Note: copied},
		{Code: remoting.GetBrokerRuntimeInfo, Needs: []Need{cluster(Get)}, Note: stricter},
		{Code: remoting.GetBrokerConfig, Needs: []Need{cluster(Get)}, Note: stricter},
		{Code: remoting.UpdateBrokerConfig, Needs: []Need{cluster(Update)}, Note: stricter},
		{Code: remoting.EvictPageCache, Needs: []Need{cluster(Update)}, Note: "a Spool extension"},
		{Code: remoting.GetConsumerRunningInfo, Needs: []Need{group("consumerGroup", Get)}},
		{Code: remoting.ConsumeMessageDirectly, Needs: []Need{group("consumerGroup", Sub), topic("topic", Sub)}},

		// Broker admin codes (mqadmin, the dashboard, the exporter), as
		// RocketMQ 5.3 annotates their request headers.
		{Code: remoting.UpdateAndCreateTopicList, Body: TopicListBody,
			Note: "RocketMQ 5.3 annotates Create but names no topic, so checks nothing beyond authentication; Spool requires Create on every topic of the body"},
		{Code: remoting.UpdateAndCreateSubscriptionGroupList, Body: GroupListBody,
			Note: "RocketMQ 5.3 checks nothing beyond authentication; Spool requires Create on every group of the body"},
		{Code: remoting.GetAllConsumerOffset, Kind: InnerOrChecked, Needs: []Need{cluster(Get)}, Note: copied},
		{Code: remoting.GetAllDelayOffset, Kind: InnerOrChecked, Needs: []Need{cluster(Get)}, Note: copied},
		{Code: remoting.GetTimerCheckPoint, Kind: InnerOrChecked, Needs: []Need{cluster(Get)}, Note: copied},
		{Code: remoting.GetTopicStatsInfo, Needs: []Need{topic("topic", Get)}},
		{Code: remoting.GetTopicConfig, Needs: []Need{topic("topic", Get)}},
		{Code: remoting.QueryTopicConsumeByWho, Needs: []Need{topic("topic", Get)}},
		{Code: remoting.GetConsumerConnectionList, Needs: []Need{group("consumerGroup", Get)}},
		{Code: remoting.QueryTopicsByConsumer, Needs: []Need{group("group", Get)}},
		{Code: remoting.GetConsumeStats, Needs: []Need{group("consumerGroup", Get), optional(topic("topic", Get)),
			{Type: Topic, Field: "topicList", Actions: acts(Get), Optional: true, Split: ";"}}},
		{Code: remoting.QueryConsumeTimeSpan, Needs: []Need{topic("topic", Get), group("group", Get)}},
		{Code: remoting.QueryConsumeQueue, Needs: []Need{topic("topic", Get), optional(group("consumerGroup", Get))}},
		{Code: remoting.InvokeBrokerToResetOffset, Needs: []Need{group("group", Update), topic("topic", Update)}},
		{Code: remoting.InvokeBrokerToGetConsumerStatus, Needs: []Need{topic("topic", Get), group("group", Get)}},
		{Code: remoting.CloneGroupOffset, Needs: []Need{group("destGroup", Update), optional(topic("topic", Update))}},
		{Code: remoting.RecallMessage, Needs: []Need{topic("topic", Pub)}},
		{Code: remoting.GetProducerConnectionList, Needs: []Need{cluster(Get)}},
		{Code: remoting.GetAllProducerInfo, Needs: []Need{cluster(Get)}},
		{Code: remoting.GetBrokerConsumeStats, Needs: []Need{cluster(Get)}},
		{Code: remoting.ViewBrokerStatsData, Needs: []Need{cluster(Get)}},
		{Code: remoting.GetSystemTopicListFromBroker, Needs: []Need{cluster(Get)}, Note: stricter},
		{Code: remoting.CleanExpiredConsumeQueue, Needs: []Need{cluster(Update)}, Note: stricter},
		{Code: remoting.CleanUnusedTopic, Needs: []Need{cluster(Update)}, Note: stricter},

		// Name server.
		{Code: remoting.GetRouteinfoByTopic, Needs: []Need{{Type: Topic, Field: "topic", Actions: acts(Pub, Sub, Get), OnRetry: RetrySubGet}}},
		{Code: remoting.GetBrokerClusterInfo, Needs: []Need{cluster(Get)}, Note: stricter},
		{Code: remoting.GetAllTopicListFromNameserver, Needs: []Need{cluster(Get)}, Note: stricter},
		{Code: remoting.DeleteTopicInNamesrv, Needs: []Need{cluster(Update)}},
		{Code: remoting.PutKVConfig, Needs: []Need{cluster(Update)}},
		{Code: remoting.DeleteKVConfig, Needs: []Need{cluster(Update)}},
		{Code: remoting.GetKVConfig, Needs: []Need{cluster(Get)}},
		{Code: remoting.GetKVListByNamespace, Needs: []Need{cluster(Get)}},
		{Code: remoting.WipeWritePermOfBroker, Needs: []Need{cluster(Update)}},
		{Code: remoting.AddWritePermOfBroker, Needs: []Need{cluster(Update)}},
		{Code: remoting.GetTopicsByCluster, Needs: []Need{cluster(Get)},
			Note: "RocketMQ 5.3 annotates Topic List but names no topic, so checks nothing beyond authentication; Spool requires Cluster Get, as for GET_ALL_TOPIC_LIST_FROM_NAMESERVER"},
		{Code: remoting.GetSystemTopicListFromNs, Needs: []Need{cluster(Get)}, Note: stricter},
		{Code: remoting.GetUnitTopicList, Needs: []Need{cluster(Get)}, Note: stricter},
		{Code: remoting.GetHasUnitSubTopicList, Needs: []Need{cluster(Get)}, Note: stricter},
		{Code: remoting.GetHasUnitSubUnunitTopicList, Needs: []Need{cluster(Get)}, Note: stricter},
		{Code: remoting.UpdateNamesrvConfig, Needs: []Need{cluster(Update)}, Note: stricter},
		{Code: remoting.GetNamesrvConfig, Needs: []Need{cluster(Get)}, Note: stricter},

		// Broker registration and liveness: inner credentials only.
		{Code: remoting.RegisterBroker, Kind: Inner, Note: "RocketMQ 5.3 asks Cluster Update; Spool asks the inner credentials"},
		{Code: remoting.UnregisterBroker, Kind: Inner, Note: "RocketMQ 5.3 asks Cluster Update; Spool asks the inner credentials"},
		{Code: remoting.BrokerHeartbeat, Kind: Inner, Note: "RocketMQ 5.3 asks Cluster Update; Spool asks the inner credentials"},
		{Code: remoting.QueryDataVersion, Kind: Inner, Note: "RocketMQ 5.3 asks Cluster Get; Spool asks the inner credentials"},

		// Sent by a broker to clients; a broker receiving one takes it
		// only from its own kind.
		{Code: remoting.CheckTransactionState, Kind: Inner},
		{Code: remoting.NotifyConsumerIdsChanged, Kind: Inner},
		{Code: remoting.ResetConsumerClientOffset, Kind: Inner},
		{Code: remoting.GetConsumerStatusFromClient, Kind: Inner},
		{Code: remoting.PushReplyMessageToClient, Kind: Inner},

		// Controller mode: what brokers send the controller, and the
		// controller brokers, is inner traffic; the admin codes act on
		// the cluster.
		{Code: remoting.ControllerAlterSyncStateSet, Kind: Inner},
		{Code: remoting.ControllerRegisterBroker, Kind: Inner},
		{Code: remoting.ControllerGetNextBrokerID, Kind: Inner},
		{Code: remoting.ControllerApplyBrokerID, Kind: Inner},
		{Code: remoting.GetBrokerEpochCache, Kind: Inner},
		// A slave asking its master for its HA address (RocketMQ's header
		// asks Update on the cluster of anyone else).
		{Code: remoting.ExchangeBrokerHAInfo, Kind: InnerOrChecked, Needs: []Need{cluster(Update)}},
		{Code: remoting.NotifyBrokerRoleChanged, Kind: Inner},
		{Code: remoting.ControllerElectMaster, Needs: []Need{cluster(Update)}},
		{Code: remoting.UpdateControllerConfig, Needs: []Need{cluster(Update)}},
		{Code: remoting.CleanBrokerData, Needs: []Need{cluster(Update)}},
		{Code: remoting.ControllerGetReplicaInfo, Needs: []Need{cluster(Get)}},
		{Code: remoting.ControllerGetMetadataInfo, Needs: []Need{cluster(Get)}},
		{Code: remoting.ControllerGetSyncStateData, Needs: []Need{cluster(Get)}},
		{Code: remoting.GetControllerConfig, Needs: []Need{cluster(Get)}},

		// User and ACL management (RocketMQ 5.3's annotations).
		{Code: CodeCreateUser, Needs: []Need{cluster(Update)}},
		{Code: CodeUpdateUser, Needs: []Need{cluster(Update)}},
		{Code: CodeDeleteUser, Needs: []Need{cluster(Update)}},
		{Code: CodeGetUser, Needs: []Need{cluster(Get)}},
		{Code: CodeListUser, Needs: []Need{cluster(Get)}},
		{Code: CodeCreateACL, Needs: []Need{cluster(Update)}},
		{Code: CodeUpdateACL, Needs: []Need{cluster(Update)}},
		{Code: CodeDeleteACL, Needs: []Need{cluster(Update)}},
		{Code: CodeGetACL, Needs: []Need{cluster(Get)}},
		{Code: CodeListACL, Needs: []Need{cluster(Get)}},
	} {
		if _, dup := Rules[r.Code]; dup {
			panic(fmt.Sprintf("auth: two rules for code %d", r.Code))
		}
		Rules[r.Code] = r
	}
}

// Requirements returns what a request of code with these ext fields and
// body needs, for the broker's cluster clusterName. inner reports an
// Inner code (an InnerOrChecked code returns its requirements: Gate lets
// the inner user pass them). A code without a rule fails with ErrInvalid: the caller
// refuses it to all but super users. A body that a rule reads and that
// does not parse fails with ErrInvalid.
func Requirements(code int32, ext map[string]string, body []byte, clusterName string) (reqs []Requirement, inner bool, err error) {
	rule, ok := Rules[code]
	if !ok {
		return nil, false, fmt.Errorf("%w: no authorization rule for request code %d", ErrInvalid, code)
	}
	if rule.Kind == Inner {
		return nil, true, nil
	}
	for _, n := range rule.Needs {
		if n.Type == Cluster {
			reqs = append(reqs, Requirement{ClusterResource(clusterName), n.Actions})
			continue
		}
		names := []string{strings.TrimSpace(ext[n.Field])}
		if n.Split != "" {
			names = names[:0]
			for _, name := range strings.Split(ext[n.Field], n.Split) {
				if name = strings.TrimSpace(name); name != "" {
					names = append(names, name)
				}
			}
		}
		if len(names) == 0 || names[0] == "" {
			if !n.Optional {
				reqs = append(reqs, Requirement{ClusterResource(clusterName), n.Actions})
			}
			continue
		}
		for _, name := range names {
			reqs = n.add(reqs, name)
		}
	}
	more, err := bodyRequirements(rule.Body, body)
	if err != nil {
		return nil, false, err
	}
	return append(reqs, more...), false, nil
}

// add appends what the need asks of the resource called name.
func (n Need) add(reqs []Requirement, name string) []Requirement {
	if n.Type == Topic && strings.HasPrefix(name, RetryPrefix) {
		switch n.OnRetry {
		case RetrySkip:
			return reqs
		case RetrySub:
			return append(reqs, Requirement{GroupResource(name), acts(Sub)})
		case RetrySubGet:
			return append(reqs, Requirement{GroupResource(name), acts(Sub, Get)})
		}
	}
	return append(reqs, Requirement{named(n.Type, name), n.Actions})
}

// named is the resource of a name in a field of type t: a retry topic
// stands for its group.
func named(t ResourceType, name string) Resource {
	if t == Group || strings.HasPrefix(name, RetryPrefix) {
		return GroupResource(name)
	}
	return Resource{Type: t, Name: name, Pattern: Literal}
}

func bodyRequirements(src BodySource, body []byte) ([]Requirement, error) {
	var reqs []Requirement
	bad := func(err error) ([]Requirement, error) {
		return nil, fmt.Errorf("%w: request body: %v", ErrInvalid, err)
	}
	switch src {
	case HeartbeatBody:
		var hb struct {
			ConsumerDataSet []struct {
				GroupName           string `json:"groupName"`
				SubscriptionDataSet []struct {
					Topic string `json:"topic"`
				} `json:"subscriptionDataSet"`
			} `json:"consumerDataSet"`
		}
		if err := json.Unmarshal(body, &hb); err != nil {
			return bad(err)
		}
		for _, cd := range hb.ConsumerDataSet {
			reqs = append(reqs, Requirement{GroupResource(cd.GroupName), acts(Sub)})
			for _, sd := range cd.SubscriptionDataSet {
				if !strings.HasPrefix(sd.Topic, RetryPrefix) {
					reqs = append(reqs, Requirement{TopicResource(sd.Topic), acts(Sub)})
				}
			}
		}
	case LockBody:
		var lb struct {
			ConsumerGroup string `json:"consumerGroup"`
			MQSet         []struct {
				Topic string `json:"topic"`
			} `json:"mqSet"`
		}
		if err := json.Unmarshal(body, &lb); err != nil {
			return bad(err)
		}
		reqs = append(reqs, Requirement{GroupResource(lb.ConsumerGroup), acts(Sub)})
		for _, mq := range lb.MQSet {
			if !strings.HasPrefix(mq.Topic, RetryPrefix) {
				reqs = append(reqs, Requirement{TopicResource(mq.Topic), acts(Sub)})
			}
		}
	case SubscriptionGroupBody:
		var g struct {
			GroupName string `json:"groupName"`
		}
		if err := json.Unmarshal(body, &g); err != nil {
			return bad(err)
		}
		reqs = append(reqs, Requirement{GroupResource(g.GroupName), acts(Create)})
	case ClientConfigBody:
		var c struct {
			Group string `json:"group"`
		}
		if err := json.Unmarshal(body, &c); err != nil {
			return bad(err)
		}
		reqs = append(reqs, Requirement{GroupResource(c.Group), acts(Sub)})
	case TopicListBody:
		var l struct {
			TopicConfigList []struct {
				TopicName string `json:"topicName"`
			} `json:"topicConfigList"`
		}
		if err := json.Unmarshal(body, &l); err != nil {
			return bad(err)
		}
		for _, tc := range l.TopicConfigList {
			reqs = append(reqs, Requirement{named(Topic, tc.TopicName), acts(Create)})
		}
	case GroupListBody:
		var l struct {
			GroupConfigList []struct {
				GroupName string `json:"groupName"`
			} `json:"groupConfigList"`
		}
		if err := json.Unmarshal(body, &l); err != nil {
			return bad(err)
		}
		for _, g := range l.GroupConfigList {
			reqs = append(reqs, Requirement{GroupResource(g.GroupName), acts(Create)})
		}
	}
	return reqs, nil
}
