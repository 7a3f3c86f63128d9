package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

type javaConnection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int    `json:"version"`
}

type javaConsumerConnection struct {
	ConnectionSet     []javaConnection                `json:"connectionSet"`
	SubscriptionTable map[string]javaSubscriptionData `json:"subscriptionTable"`
	ConsumeType       string                          `json:"consumeType"`
	MessageModel      string                          `json:"messageModel"`
	ConsumeFromWhere  string                          `json:"consumeFromWhere"`
}

type javaProducerConnection struct {
	ConnectionSet []javaConnection `json:"connectionSet"`
}

type javaProducerInfo struct {
	ClientID            string `json:"clientId"`
	RemoteIP            string `json:"remoteIP"`
	Language            string `json:"language"`
	Version             int    `json:"version"`
	LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
}

type javaProducerTableInfo struct {
	Data map[string][]javaProducerInfo `json:"data"`
}

type javaGroupList struct {
	GroupList []string `json:"groupList"`
}

type javaTopicList struct {
	TopicList  []string `json:"topicList"`
	BrokerAddr string   `json:"brokerAddr"`
}

type javaDataVersion struct {
	StateVersion int64 `json:"stateVersion"`
	Timestamp    int64 `json:"timestamp"`
	Counter      int64 `json:"counter"`
}

type javaConsumerOffsetSerializeWrapper struct {
	OffsetTable map[string]map[string]int64 `json:"offsetTable"`
	DataVersion javaDataVersion             `json:"dataVersion"`
}

type javaDelayOffsetSerializeWrapper struct {
	OffsetTable map[string]int64 `json:"offsetTable"`
	DataVersion javaDataVersion  `json:"dataVersion"`
}

type javaTopicConfig struct {
	TopicName       string            `json:"topicName"`
	ReadQueueNums   int               `json:"readQueueNums"`
	WriteQueueNums  int               `json:"writeQueueNums"`
	Perm            int               `json:"perm"`
	TopicFilterType string            `json:"topicFilterType"`
	TopicSysFlag    int               `json:"topicSysFlag"`
	Order           bool              `json:"order"`
	Attributes      map[string]string `json:"attributes"`
}

// A consumer's and a producer's heartbeats are what
// GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST and
// GET_ALL_PRODUCER_INFO answer.
func TestConnectionLists(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("CC", 1)
	c := transport.NewClient(transport.ClientConfig{DialTimeout: 3 * time.Second})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := c.Invoke(ctx, e.b.Addr(), goRequest(remoting.HeartBeat, nil, goHeartbeat("10.0.0.9@7", "ccg", "CC", "a"))); err != nil || r.Code != 0 {
		t.Fatalf("heartbeat: %v %v", r, err)
	}
	r := e.invoke(goRequest(remoting.GetConsumerConnectionList, map[string]string{"consumerGroup": "ccg"}, nil))
	if r.Code != remoting.Success {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	var cc javaConsumerConnection
	decodeJava(t, r.Body, &cc)
	if len(cc.ConnectionSet) != 1 {
		t.Fatalf("%s", r.Body)
	}
	conn := cc.ConnectionSet[0]
	if conn.ClientID != "10.0.0.9@7" || conn.Language != "GO" || conn.Version != 317 || !strings.HasPrefix(conn.ClientAddr, "127.0.0.1:") {
		t.Errorf("connection %+v", conn)
	}
	if cc.ConsumeType != "CONSUME_PASSIVELY" || cc.MessageModel != "CLUSTERING" || cc.ConsumeFromWhere != "CONSUME_FROM_LAST_OFFSET" {
		t.Errorf("%+v", cc)
	}
	sd, ok := cc.SubscriptionTable["CC"]
	if !ok || sd.SubString != "a" || len(sd.TagsSet) != 1 || sd.TagsSet[0] != "a" || len(sd.CodeSet) != 1 || sd.CodeSet[0] != 97 || sd.ExpressionType != "TAG" {
		t.Errorf("subscription of CC: %+v (table %v)", sd, cc.SubscriptionTable)
	}
	if _, ok := cc.SubscriptionTable["%RETRY%ccg"]; !ok {
		t.Errorf("no retry topic subscription: %v", cc.SubscriptionTable)
	}
	if r := e.invoke(goRequest(remoting.GetConsumerConnectionList, map[string]string{"consumerGroup": "nobody"}, nil)); r.Code != remoting.ConsumerNotOnline || r.Remark != "the consumer group[nobody] not online" {
		t.Errorf("offline group: code %d remark %q", r.Code, r.Remark)
	}
	wantBadHeader(t, e, remoting.GetConsumerConnectionList, nil, "consumerGroup")

	// The heartbeat registered producer group pg too.
	r = e.invoke(goRequest(remoting.GetProducerConnectionList, map[string]string{"producerGroup": "pg"}, nil))
	if r.Code != remoting.Success {
		t.Fatalf("producer connections: code %d remark %q", r.Code, r.Remark)
	}
	var pc javaProducerConnection
	decodeJava(t, r.Body, &pc)
	if len(pc.ConnectionSet) != 1 || pc.ConnectionSet[0].ClientID != "10.0.0.9@7" {
		t.Errorf("%s", r.Body)
	}
	if r := e.invoke(goRequest(remoting.GetProducerConnectionList, map[string]string{"producerGroup": "nope"}, nil)); r.Code != remoting.SystemError || r.Remark != "the producer group[nope] not exist" {
		t.Errorf("unknown producer group: code %d remark %q", r.Code, r.Remark)
	}
	wantBadHeader(t, e, remoting.GetProducerConnectionList, nil, "producerGroup")

	r = e.invoke(goRequest(remoting.GetAllProducerInfo, nil, nil))
	var pt javaProducerTableInfo
	decodeJava(t, r.Body, &pt)
	if r.Code != remoting.Success || len(pt.Data["pg"]) != 1 {
		t.Fatalf("code %d %s", r.Code, r.Body)
	}
	if pi := pt.Data["pg"][0]; pi.ClientID != "10.0.0.9@7" || pi.Language != "GO" || pi.Version != 317 || pi.LastUpdateTimestamp <= 0 || pi.RemoteIP == "" {
		t.Errorf("%+v", pi)
	}

	// The client is gone: its group is no longer online.
	c.Close()
	waitFor(t, "the consumer to leave", func() bool {
		return e.invoke(goRequest(remoting.GetConsumerConnectionList, map[string]string{"consumerGroup": "ccg"}, nil)).Code == remoting.ConsumerNotOnline
	})
}

func TestTopicAndGroupLists(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("TL", 2)
	e.commit("tlg", "TL", 1, 5)
	e.invoke(goRequest(remoting.HeartBeat, nil, goHeartbeat("c1", "online", "TL", "*")))

	r := e.invoke(goRequest(remoting.GetTopicConfig, map[string]string{"topic": "TL"}, nil))
	var tc javaTopicConfig
	decodeJava(t, r.Body, &tc)
	if r.Code != remoting.Success || tc.TopicName != "TL" || tc.ReadQueueNums != 2 || tc.WriteQueueNums != 2 || tc.Perm != 6 || tc.TopicFilterType != "SINGLE_TAG" {
		t.Errorf("code %d %+v", r.Code, tc)
	}
	if r := e.invoke(goRequest(remoting.GetTopicConfig, map[string]string{"topic": "Nope"}, nil)); r.Code != remoting.TopicNotExist || r.Remark != "No topic in this broker. topic: Nope" {
		t.Errorf("unknown topic: code %d remark %q", r.Code, r.Remark)
	}
	wantBadHeader(t, e, remoting.GetTopicConfig, nil, "topic")

	r = e.invoke(goRequest(remoting.QueryTopicConsumeByWho, map[string]string{"topic": "TL"}, nil))
	var gl javaGroupList
	decodeJava(t, r.Body, &gl)
	if r.Code != remoting.Success || strings.Join(gl.GroupList, ",") != "online,tlg" {
		t.Errorf("consumed by: code %d %v, want online (subscribed) and tlg (committed)", r.Code, gl.GroupList)
	}
	wantBadHeader(t, e, remoting.QueryTopicConsumeByWho, nil, "topic")

	r = e.invoke(goRequest(remoting.QueryTopicsByConsumer, map[string]string{"group": "tlg"}, nil))
	var tl javaTopicList
	decodeJava(t, r.Body, &tl)
	if r.Code != remoting.Success || strings.Join(tl.TopicList, ",") != "TL" || tl.BrokerAddr != e.b.Addr() {
		t.Errorf("topics of tlg: code %d %+v", r.Code, tl)
	}
	wantBadHeader(t, e, remoting.QueryTopicsByConsumer, nil, "group")

	r = e.invoke(goRequest(remoting.GetSystemTopicListFromBroker, nil, nil))
	var sys javaTopicList
	decodeJava(t, r.Body, &sys)
	got := "," + strings.Join(sys.TopicList, ",") + ","
	for _, want := range []string{"SELF_TEST_TOPIC", "TBW102", "SCHEDULE_TOPIC_XXXX", "OFFSET_MOVED_EVENT", "RMQ_SYS_TRANS_HALF_TOPIC", "DefaultCluster", "broker-a"} {
		if !strings.Contains(got, ","+want+",") {
			t.Errorf("system topics %v lack %s", sys.TopicList, want)
		}
	}
	if strings.Contains(got, ",TL,") {
		t.Errorf("system topics %v hold TL", sys.TopicList)
	}

	r = e.invoke(goRequest(remoting.GetAllConsumerOffset, nil, nil))
	var co javaConsumerOffsetSerializeWrapper
	decodeJava(t, r.Body, &co)
	if r.Code != remoting.Success || co.OffsetTable["TL@tlg"]["1"] != 5 || co.DataVersion.Timestamp <= 0 {
		t.Errorf("consumer offsets: code %d %s", r.Code, r.Body)
	}
	if !strings.Contains(string(r.Body), `{1:5}`) {
		t.Errorf("queue ids are not bare Integer keys: %s", r.Body)
	}

	r = e.invoke(goRequest(remoting.GetAllDelayOffset, nil, nil))
	var do javaDelayOffsetSerializeWrapper
	decodeJava(t, r.Body, &do)
	if r.Code != remoting.Success || do.OffsetTable == nil {
		t.Errorf("delay offsets: code %d %s", r.Code, r.Body)
	}
}

func TestGetAllDelayOffsetAfterDelivery(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("DL", 1)
	e.invoke(sendV1("DL", 0, map[string]string{"DELAY": "1"}, []byte("later")))
	waitFor(t, "the delay level 1 message to be delivered", func() bool { return e.b.store.MaxOffsetInQueue("DL", 0) >= 1 })
	waitFor(t, "the delay offset to move", func() bool {
		r := e.invoke(goRequest(remoting.GetAllDelayOffset, nil, nil))
		var do javaDelayOffsetSerializeWrapper
		decodeJava(t, r.Body, &do)
		return do.OffsetTable["1"] == 1
	})
}

func TestCreateTopicAndGroupLists(t *testing.T) {
	e := startBroker(t, nil)
	body := `{"topicConfigList":[{"topicName":"L1","readQueueNums":3,"writeQueueNums":3,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false},{"topicName":"L2","order":true}]}`
	r := e.invoke(goRequest(remoting.UpdateAndCreateTopicList, nil, []byte(body)))
	if r.Code != remoting.Success {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	if tc := e.b.topics.Find("L1"); tc == nil || tc.ReadQueueNums != 3 {
		t.Errorf("L1: %+v", tc)
	}
	if tc := e.b.topics.Find("L2"); tc == nil || tc.ReadQueueNums != 16 || tc.Perm != metadata.PermRead|metadata.PermWrite || !tc.Order {
		t.Errorf("L2 (TopicConfig's defaults): %+v", tc)
	}
	if reg := e.ns.lastRegistration(); reg == nil || !strings.Contains(string(reg.Body), "L2") {
		t.Errorf("the answer came before L2 was registered")
	}
	// One bad topic: nothing of the list is created.
	bad := `{"topicConfigList":[{"topicName":"L3"},{"topicName":"bad topic!"}]}`
	if r := e.invoke(goRequest(remoting.UpdateAndCreateTopicList, nil, []byte(bad))); r.Code != remoting.InvalidParameter {
		t.Errorf("bad topic name: code %d remark %q", r.Code, r.Remark)
	}
	if e.b.topics.Find("L3") != nil {
		t.Errorf("L3 created although the list held a bad topic")
	}
	if r := e.invoke(goRequest(remoting.UpdateAndCreateTopicList, nil, []byte("{"))); r.Code != remoting.SystemError {
		t.Errorf("malformed body: code %d remark %q", r.Code, r.Remark)
	}

	groups := `{"groupConfigList":[{"groupName":"G1","consumeBroadcastEnable":false,"retryMaxTimes":3},{"groupName":"G2"}]}`
	if r := e.invoke(goRequest(remoting.UpdateAndCreateSubscriptionGroupList, nil, []byte(groups))); r.Code != remoting.Success {
		t.Fatalf("groups: code %d remark %q", r.Code, r.Remark)
	}
	g1, g2 := e.b.groups.Find("G1"), e.b.groups.Find("G2")
	if g1 == nil || g1.RetryMaxTimes != 3 || g2 == nil || g2.RetryMaxTimes != 16 || !g2.ConsumeEnable {
		t.Errorf("G1 %+v G2 %+v", g1, g2)
	}
	if r := e.invoke(goRequest(remoting.UpdateAndCreateSubscriptionGroupList, nil, []byte("[1"))); r.Code != remoting.SystemError {
		t.Errorf("malformed body: code %d remark %q", r.Code, r.Remark)
	}
}

// The cleanings Spool does not do answer an error saying so, never a
// success.
func TestCleanRequestsRefused(t *testing.T) {
	e := startBroker(t, nil)
	for _, code := range []int32{remoting.CleanExpiredConsumeQueue, remoting.CleanUnusedTopic} {
		r := e.invoke(goRequest(code, nil, nil))
		if r.Code != remoting.SystemError || !strings.Contains(r.Remark, "not supported") {
			t.Errorf("%s: code %d remark %q", remoting.RequestName(code), r.Code, r.Remark)
		}
	}
}
