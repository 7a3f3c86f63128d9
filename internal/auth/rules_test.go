package auth

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"testing"

	"github.com/spoolmq/spool/remoting"
)

// requestCodeNames reads the names of the request-code block of
// remoting/codes.go (the const block that declares SendMessage).
func requestCodeNames(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../../remoting/codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		var names []string
		isRequests := false
		for _, spec := range g.Specs {
			for _, n := range spec.(*ast.ValueSpec).Names {
				names = append(names, n.Name)
				if n.Name == "SendMessage" {
					isRequests = true
				}
			}
		}
		if isRequests {
			return names
		}
	}
	t.Fatal("no request-code block in remoting/codes.go")
	return nil
}

// codeValues maps the names to their values; a name added to codes.go
// without a line here fails the test, so that its rule is considered.
var codeValues = map[string]int32{
	"SendMessage": remoting.SendMessage, "PullMessage": remoting.PullMessage, "QueryMessage": remoting.QueryMessage,
	"QueryConsumerOffset": remoting.QueryConsumerOffset, "UpdateConsumerOffset": remoting.UpdateConsumerOffset,
	"UpdateAndCreateTopic": remoting.UpdateAndCreateTopic, "GetAllTopicConfig": remoting.GetAllTopicConfig,
	"UpdateBrokerConfig": remoting.UpdateBrokerConfig, "GetBrokerConfig": remoting.GetBrokerConfig,
	"GetBrokerRuntimeInfo": remoting.GetBrokerRuntimeInfo, "SearchOffsetByTimestamp": remoting.SearchOffsetByTimestamp,
	"GetMaxOffset": remoting.GetMaxOffset, "GetMinOffset": remoting.GetMinOffset, "GetEarliestMsgStoretime": remoting.GetEarliestMsgStoretime,
	"ViewMessageByID": remoting.ViewMessageByID, "HeartBeat": remoting.HeartBeat, "UnregisterClient": remoting.UnregisterClient,
	"ConsumerSendMsgBack": remoting.ConsumerSendMsgBack, "EndTransaction": remoting.EndTransaction,
	"GetConsumerListByGroup": remoting.GetConsumerListByGroup, "CheckTransactionState": remoting.CheckTransactionState,
	"NotifyConsumerIdsChanged": remoting.NotifyConsumerIdsChanged, "LockBatchMQ": remoting.LockBatchMQ, "UnlockBatchMQ": remoting.UnlockBatchMQ,
	"CheckClientConfig": remoting.CheckClientConfig, "PutKVConfig": remoting.PutKVConfig, "GetKVConfig": remoting.GetKVConfig,
	"DeleteKVConfig": remoting.DeleteKVConfig, "RegisterBroker": remoting.RegisterBroker, "UnregisterBroker": remoting.UnregisterBroker,
	"GetRouteinfoByTopic": remoting.GetRouteinfoByTopic, "GetBrokerClusterInfo": remoting.GetBrokerClusterInfo,
	"UpdateAndCreateSubscriptionGroup": remoting.UpdateAndCreateSubscriptionGroup,
	"GetAllSubscriptionGroupConfig":    remoting.GetAllSubscriptionGroupConfig, "DeleteSubscriptionGroup": remoting.DeleteSubscriptionGroup,
	"GetAllTopicListFromNameserver": remoting.GetAllTopicListFromNameserver, "DeleteTopicInBroker": remoting.DeleteTopicInBroker,
	"DeleteTopicInNamesrv": remoting.DeleteTopicInNamesrv, "GetKVListByNamespace": remoting.GetKVListByNamespace,
	"ResetConsumerClientOffset": remoting.ResetConsumerClientOffset, "GetConsumerStatusFromClient": remoting.GetConsumerStatusFromClient,
	"GetConsumerRunningInfo": remoting.GetConsumerRunningInfo, "ConsumeMessageDirectly": remoting.ConsumeMessageDirectly,
	"SendMessageV2": remoting.SendMessageV2, "SendBatchMessage": remoting.SendBatchMessage, "QueryDataVersion": remoting.QueryDataVersion,
	"SendReplyMessage": remoting.SendReplyMessage, "SendReplyMessageV2": remoting.SendReplyMessageV2,
	"PushReplyMessageToClient": remoting.PushReplyMessageToClient, "LitePullMessage": remoting.LitePullMessage,
	"BrokerHeartbeat": remoting.BrokerHeartbeat, "EvictPageCache": remoting.EvictPageCache,
}

func TestEveryRequestCodeHasARule(t *testing.T) {
	names := requestCodeNames(t)
	if len(names) < 50 {
		t.Fatalf("read only %d request codes", len(names))
	}
	for _, n := range names {
		code, ok := codeValues[n]
		if !ok {
			t.Errorf("request code %s is new: add it to codeValues and give it a rule in Rules", n)
			continue
		}
		r, ok := Rules[code]
		if !ok {
			t.Errorf("request code %s (%d) has no authorization rule", n, code)
			continue
		}
		if r.Kind == Checked && len(r.Needs) == 0 && r.Body == NoBody {
			t.Errorf("request code %s (%d) is checked but needs nothing", n, code)
		}
	}
	for code := CodeCreateUser; code <= CodeListACL; code++ {
		if _, ok := Rules[code]; !ok {
			t.Errorf("management code %d has no rule", code)
		}
	}
}

// Every request code remoting knows (RequestName) has a rule, and every
// rule is for a code remoting knows.
func TestEveryKnownRequestCodeHasARule(t *testing.T) {
	codes := remoting.RequestCodes()
	if len(codes) < 100 {
		t.Fatalf("remoting knows only %d request codes", len(codes))
	}
	known := map[int32]bool{}
	for _, code := range codes {
		known[code] = true
		r, ok := Rules[code]
		if !ok {
			t.Errorf("request code %s (%d) has no authorization rule", remoting.RequestName(code), code)
			continue
		}
		if r.Kind != Inner && len(r.Needs) == 0 && r.Body == NoBody {
			t.Errorf("request code %s (%d) is checked but needs nothing", remoting.RequestName(code), code)
		}
	}
	for code := range Rules {
		if !known[code] {
			t.Errorf("rule for request code %d, which remoting does not know", code)
		}
	}
}

func TestRequirements(t *testing.T) {
	req := func(r Resource, a ...Action) Requirement { return Requirement{r, a} }
	cl := ClusterResource("DefaultCluster")
	cases := []struct {
		name  string
		code  int32
		ext   map[string]string
		body  string
		want  []Requirement
		inner bool
	}{
		{"send", remoting.SendMessage, map[string]string{"topic": "A", "producerGroup": "P"}, "", []Requirement{req(TopicResource("A"), Pub)}, false},
		{"send v2", remoting.SendMessageV2, map[string]string{"a": "P", "b": "A"}, "", []Requirement{req(TopicResource("A"), Pub)}, false},
		{"batch", remoting.SendBatchMessage, map[string]string{"a": "P", "b": "A"}, "", []Requirement{req(TopicResource("A"), Pub)}, false},
		{"send to a retry topic is Sub on the group", remoting.SendMessageV2, map[string]string{"b": "%RETRY%G"}, "", []Requirement{req(GroupResource("G"), Sub)}, false},
		{"send back", remoting.ConsumerSendMsgBack, map[string]string{"group": "G", "offset": "1"}, "", []Requirement{req(GroupResource("G"), Sub)}, false},
		{"pull", remoting.PullMessage, map[string]string{"topic": "A", "consumerGroup": "G"}, "",
			[]Requirement{req(TopicResource("A"), Sub), req(GroupResource("G"), Sub)}, false},
		{"pull a retry topic", remoting.PullMessage, map[string]string{"topic": "%RETRY%G", "consumerGroup": "G"}, "",
			[]Requirement{req(GroupResource("G"), Sub)}, false},
		{"query offset", remoting.QueryConsumerOffset, map[string]string{"topic": "A", "consumerGroup": "G", "queueId": "0"}, "",
			[]Requirement{req(TopicResource("A"), Sub, Get), req(GroupResource("G"), Sub, Get)}, false},
		{"update offset", remoting.UpdateConsumerOffset, map[string]string{"topic": "A", "consumerGroup": "G"}, "",
			[]Requirement{req(TopicResource("A"), Sub, Update), req(GroupResource("G"), Sub, Update)}, false},
		{"heartbeat", remoting.HeartBeat, nil,
			`{"clientID":"c","consumerDataSet":[{"groupName":"G","subscriptionDataSet":[{"topic":"A"},{"topic":"%RETRY%G"}]}],"producerDataSet":[{"groupName":"P"}]}`,
			[]Requirement{req(GroupResource("G"), Sub), req(TopicResource("A"), Sub)}, false},
		{"producer heartbeat needs nothing", remoting.HeartBeat, nil, `{"clientID":"c","producerDataSet":[{"groupName":"P"}]}`, nil, false},
		{"lock", remoting.LockBatchMQ, nil, `{"consumerGroup":"G","clientId":"c","mqSet":[{"topic":"A","brokerName":"b","queueId":0}]}`,
			[]Requirement{req(GroupResource("G"), Sub), req(TopicResource("A"), Sub)}, false},
		{"unregister a producer", remoting.UnregisterClient, map[string]string{"clientID": "c", "producerGroup": "P"}, "", nil, false},
		{"unregister a consumer", remoting.UnregisterClient, map[string]string{"clientID": "c", "consumerGroup": "G"}, "",
			[]Requirement{req(GroupResource("G"), Sub)}, false},
		{"end transaction without a topic", remoting.EndTransaction, map[string]string{"producerGroup": "P"}, "", nil, false},
		{"end transaction", remoting.EndTransaction, map[string]string{"topic": "A"}, "", []Requirement{req(TopicResource("A"), Pub)}, false},
		{"route", remoting.GetRouteinfoByTopic, map[string]string{"topic": "A"}, "", []Requirement{req(TopicResource("A"), Pub, Sub, Get)}, false},
		{"route of a retry topic", remoting.GetRouteinfoByTopic, map[string]string{"topic": "%RETRY%G"}, "", []Requirement{req(GroupResource("G"), Sub, Get)}, false},
		{"create topic", remoting.UpdateAndCreateTopic, map[string]string{"topic": "A"}, "", []Requirement{req(TopicResource("A"), Create)}, false},
		{"delete topic", remoting.DeleteTopicInBroker, map[string]string{"topic": "A"}, "", []Requirement{req(TopicResource("A"), Delete)}, false},
		{"create group", remoting.UpdateAndCreateSubscriptionGroup, nil, `{"groupName":"G","consumeEnable":true}`, []Requirement{req(GroupResource("G"), Create)}, false},
		{"delete group", remoting.DeleteSubscriptionGroup, map[string]string{"groupName": "G"}, "", []Requirement{req(GroupResource("G"), Delete)}, false},
		{"broker config", remoting.UpdateBrokerConfig, nil, "a=b", []Requirement{req(cl, Update)}, false},
		{"view message without a topic", remoting.ViewMessageByID, map[string]string{"offset": "12"}, "", []Requirement{req(cl, Get)}, false},
		{"create user", CodeCreateUser, map[string]string{"username": "u"}, `{}`, []Requirement{req(cl, Update)}, false},
		{"list acl", CodeListACL, nil, "", []Requirement{req(cl, Get)}, false},
		{"register broker", remoting.RegisterBroker, map[string]string{"brokerName": "b"}, "", nil, true},
		{"broker heartbeat", remoting.BrokerHeartbeat, nil, "", nil, true},
		{"check transaction (sent to clients)", remoting.CheckTransactionState, nil, "", nil, true},
		{"controller: a broker registers", remoting.ControllerRegisterBroker, nil, "", nil, true},
		{"controller: a broker alters its sync-state set", remoting.ControllerAlterSyncStateSet, nil, "", nil, true},
		{"controller: role change sent to a broker", remoting.NotifyBrokerRoleChanged, nil, "", nil, true},
		{"controller: elect a master", remoting.ControllerElectMaster, nil, "", []Requirement{req(cl, Update)}, false},
		{"controller: metadata", remoting.ControllerGetMetadataInfo, nil, "", []Requirement{req(cl, Get)}, false},

		// Admin codes, as RocketMQ 5.3 annotates them.
		{"consume stats", remoting.GetConsumeStats, map[string]string{"consumerGroup": "G"}, "", []Requirement{req(GroupResource("G"), Get)}, false},
		{"consume stats of a topic", remoting.GetConsumeStats, map[string]string{"consumerGroup": "G", "topic": "A"}, "",
			[]Requirement{req(GroupResource("G"), Get), req(TopicResource("A"), Get)}, false},
		{"consume stats of a topic list", remoting.GetConsumeStats, map[string]string{"consumerGroup": "G", "topicList": "A; B;;%RETRY%G"}, "",
			[]Requirement{req(GroupResource("G"), Get), req(TopicResource("A"), Get), req(TopicResource("B"), Get), req(GroupResource("G"), Get)}, false},
		{"consume stats without a group", remoting.GetConsumeStats, map[string]string{"topic": "A"}, "",
			[]Requirement{req(cl, Get), req(TopicResource("A"), Get)}, false},
		{"topic stats", remoting.GetTopicStatsInfo, map[string]string{"topic": "A"}, "", []Requirement{req(TopicResource("A"), Get)}, false},
		{"topic config", remoting.GetTopicConfig, map[string]string{"topic": "A"}, "", []Requirement{req(TopicResource("A"), Get)}, false},
		{"consumer connections", remoting.GetConsumerConnectionList, map[string]string{"consumerGroup": "G"}, "", []Requirement{req(GroupResource("G"), Get)}, false},
		{"producer connections", remoting.GetProducerConnectionList, map[string]string{"producerGroup": "P"}, "", []Requirement{req(cl, Get)}, false},
		{"consume time span", remoting.QueryConsumeTimeSpan, map[string]string{"topic": "A", "group": "G"}, "",
			[]Requirement{req(TopicResource("A"), Get), req(GroupResource("G"), Get)}, false},
		{"consume queue without a group", remoting.QueryConsumeQueue, map[string]string{"topic": "A", "queueId": "0"}, "",
			[]Requirement{req(TopicResource("A"), Get)}, false},
		{"reset offset", remoting.InvokeBrokerToResetOffset, map[string]string{"topic": "A", "group": "G", "timestamp": "0"}, "",
			[]Requirement{req(GroupResource("G"), Update), req(TopicResource("A"), Update)}, false},
		{"clone offsets of every topic", remoting.CloneGroupOffset, map[string]string{"srcGroup": "S", "destGroup": "D"}, "",
			[]Requirement{req(GroupResource("D"), Update)}, false},
		{"recall", remoting.RecallMessage, map[string]string{"topic": "A", "recallHandle": "h"}, "", []Requirement{req(TopicResource("A"), Pub)}, false},
		{"create a topic list", remoting.UpdateAndCreateTopicList, nil, `{"topicConfigList":[{"topicName":"A","perm":6},{"topicName":"B"}]}`,
			[]Requirement{req(TopicResource("A"), Create), req(TopicResource("B"), Create)}, false},
		{"create a group list", remoting.UpdateAndCreateSubscriptionGroupList, nil, `{"groupConfigList":[{"groupName":"G"},{"groupName":"H"}]}`,
			[]Requirement{req(GroupResource("G"), Create), req(GroupResource("H"), Create)}, false},
		{"all consumer offsets", remoting.GetAllConsumerOffset, nil, "", []Requirement{req(cl, Get)}, false},
		{"timer checkpoint", remoting.GetTimerCheckPoint, nil, "", []Requirement{req(cl, Get)}, false},
		{"broker stats", remoting.ViewBrokerStatsData, map[string]string{"statsName": "TOPIC_PUT_NUMS", "statsKey": "A"}, "", []Requirement{req(cl, Get)}, false},
		{"clean unused topics", remoting.CleanUnusedTopic, nil, "", []Requirement{req(cl, Update)}, false},
		{"name server: wipe write permission", remoting.WipeWritePermOfBroker, map[string]string{"brokerName": "b"}, "", []Requirement{req(cl, Update)}, false},
		{"name server: add write permission", remoting.AddWritePermOfBroker, map[string]string{"brokerName": "b"}, "", []Requirement{req(cl, Update)}, false},
		{"name server: topics of a cluster", remoting.GetTopicsByCluster, map[string]string{"cluster": "c"}, "", []Requirement{req(cl, Get)}, false},
		{"name server: config", remoting.UpdateNamesrvConfig, nil, "a=b", []Requirement{req(cl, Update)}, false},
	}
	for _, c := range cases {
		got, inner, err := Requirements(c.code, c.ext, []byte(c.body), "DefaultCluster")
		if err != nil || inner != c.inner || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v inner %v %v, want %+v inner %v", c.name, got, inner, err, c.want, c.inner)
		}
	}
	if _, _, err := Requirements(12345, nil, nil, "c"); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown code: %v", err)
	}
	if _, _, err := Requirements(remoting.HeartBeat, nil, []byte(`{"consumerDataSet":`), "c"); !errors.Is(err, ErrInvalid) {
		t.Errorf("torn heartbeat: %v", err)
	}
	for _, code := range []int32{remoting.UpdateAndCreateTopicList, remoting.UpdateAndCreateSubscriptionGroupList} {
		if _, _, err := Requirements(code, nil, []byte(`{"topicConfigList":[`), "c"); !errors.Is(err, ErrInvalid) {
			t.Errorf("torn list body of %s: %v", remoting.RequestName(code), err)
		}
	}
}

// A user allowed only Pub on Topic:A can send to A and nothing else: the
// table and the decision together.
func TestPubOnlyUser(t *testing.T) {
	u := &User{Username: "pub", Password: "pw", Type: Normal, Status: Enabled}
	acl := &ACL{Username: "pub", Policies: []Policy{{Type: Custom, Entries: []Entry{entry("Topic:A", Allow, nil, Pub)}}}}
	allowed := func(code int32, ext map[string]string, body string) bool {
		reqs, inner, err := Requirements(code, ext, []byte(body), "DefaultCluster")
		if err != nil || inner {
			return false
		}
		for _, r := range reqs {
			if !Authorize(u, acl, Request{Username: "pub", Resource: r.Resource, Actions: r.Actions, SourceIP: "127.0.0.1"}).Allowed {
				return false
			}
		}
		return true
	}
	if !allowed(remoting.SendMessageV2, map[string]string{"b": "A"}, "") {
		t.Error("cannot send to A")
	}
	if !allowed(remoting.GetRouteinfoByTopic, map[string]string{"topic": "A"}, "") {
		t.Error("cannot route A")
	}
	for name, c := range map[string]struct {
		code int32
		ext  map[string]string
		body string
	}{
		"send to B":    {remoting.SendMessageV2, map[string]string{"b": "B"}, ""},
		"pull A":       {remoting.PullMessage, map[string]string{"topic": "A", "consumerGroup": "G"}, ""},
		"subscribe A":  {remoting.HeartBeat, nil, `{"consumerDataSet":[{"groupName":"G","subscriptionDataSet":[{"topic":"A"}]}]}`},
		"create topic": {remoting.UpdateAndCreateTopic, map[string]string{"topic": "A"}, ""},
		"register":     {remoting.RegisterBroker, nil, ""},
		"create user":  {CodeCreateUser, map[string]string{"username": "x"}, ""},
	} {
		if allowed(c.code, c.ext, c.body) {
			t.Errorf("%s allowed", name)
		}
	}
}
