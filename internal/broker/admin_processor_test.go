package broker

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spoolmq/spool/internal/clients"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

func TestAdminTopicCreateDelete(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("A1", 8)
	// Registered before the answer.
	if r := e.ns.lastRegistration(); r == nil || !bytes.Contains(r.Body, []byte(`"A1"`)) {
		t.Fatalf("A1 not registered when create answered")
	}
	var all metadata.TopicConfigFile
	r := e.invoke(goRequest(remoting.GetAllTopicConfig, nil, nil))
	if err := json.Unmarshal(r.Body, &all); err != nil {
		t.Fatal(err)
	}
	tc := all.TopicConfigTable["A1"]
	if tc == nil || tc.ReadQueueNums != 8 || tc.WriteQueueNums != 8 || tc.Perm != 6 {
		t.Fatalf("A1 = %+v", tc)
	}
	for _, sys := range []string{"SELF_TEST_TOPIC", "TBW102", "BenchmarkTest", "DefaultCluster", "broker-a",
		"OFFSET_MOVED_EVENT", "SCHEDULE_TOPIC_XXXX", "DefaultCluster_REPLY_TOPIC", "RMQ_SYS_TRANS_HALF_TOPIC"} {
		if all.TopicConfigTable[sys] == nil {
			t.Errorf("system topic %s missing", sys)
		}
	}
	if tb := all.TopicConfigTable["TBW102"]; tb.Perm != 7 || tb.WriteQueueNums != 8 {
		t.Errorf("TBW102 = %+v", tb)
	}
	if s := all.TopicConfigTable["SCHEDULE_TOPIC_XXXX"]; s.ReadQueueNums != 18 {
		t.Errorf("schedule topic = %+v", s)
	}
	sysReq := goRequest(remoting.UpdateAndCreateTopic, map[string]string{"topic": "SCHEDULE_TOPIC_XXXX",
		"readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil)
	if r := e.invoke(sysReq); r.Code != remoting.InvalidParameter {
		t.Errorf("create system topic: code %d", r.Code)
	}
	illegal := goRequest(remoting.UpdateAndCreateTopic, map[string]string{"topic": "a b",
		"readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil)
	if r := e.invoke(illegal); r.Code != remoting.InvalidParameter {
		t.Errorf("create illegal topic: code %d", r.Code)
	}
	e.mustSend("A1", 3, "", "x")
	e.waitDispatched("A1", 3, 1)
	del := e.invoke(goRequest(remoting.DeleteTopicInBroker, map[string]string{"topic": "A1"}, nil))
	if del.Code != remoting.Success {
		t.Fatalf("delete: code %d remark %q", del.Code, del.Remark)
	}
	if e.b.topics.Find("A1") != nil {
		t.Fatalf("A1 still configured")
	}
	if r := e.ns.lastRegistration(); bytes.Contains(r.Body, []byte(`"A1"`)) {
		t.Errorf("A1 still registered after delete")
	}
}

func TestAdminSubscriptionGroups(t *testing.T) {
	e := startBroker(t, nil)
	cfg := metadata.NewSubscriptionGroupConfig("G1")
	cfg.RetryMaxTimes = 3
	body, _ := json.Marshal(cfg)
	if r := e.invoke(goRequest(remoting.UpdateAndCreateSubscriptionGroup, nil, body)); r.Code != remoting.Success {
		t.Fatalf("create: code %d remark %q", r.Code, r.Remark)
	}
	r := e.invoke(goRequest(remoting.GetAllSubscriptionGroupConfig, nil, nil))
	// Decoded the way Go's admin does: strict JSON, counter as int32.
	var doc struct {
		SubscriptionGroupTable map[string]struct {
			GroupName     string `json:"groupName"`
			RetryMaxTimes int    `json:"retryMaxTimes"`
		} `json:"subscriptionGroupTable"`
		DataVersion struct {
			Timestamp int64 `json:"timestamp"`
			Counter   int32 `json:"counter"`
		} `json:"dataVersion"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
	if g := doc.SubscriptionGroupTable["G1"]; g.RetryMaxTimes != 3 || doc.DataVersion.Counter < 1 {
		t.Fatalf("G1 = %+v, version %+v", g, doc.DataVersion)
	}
	if r := e.invoke(goRequest(remoting.DeleteSubscriptionGroup, map[string]string{"groupName": "G1"}, nil)); r.Code != remoting.Success {
		t.Fatalf("delete: code %d", r.Code)
	}
	if e.b.groups.Find("G1") != nil {
		t.Fatalf("G1 still there")
	}
}

func TestUnknownCode(t *testing.T) {
	e := startBroker(t, nil)
	r := e.invoke(goRequest(12345, nil, nil))
	if r.Code != remoting.RequestCodeNotSupported {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
}

func TestRuntimeInfoAndConfig(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("RI", 1)
	e.mustSend("RI", 0, "", "x")
	r := e.invoke(goRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
	var info struct {
		Table map[string]string `json:"table"`
	}
	if err := json.Unmarshal(r.Body, &info); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"putTps", "pageCacheLockTimeMills", "sendThreadPoolQueueSize", "sendThreadPoolQueueHeadWaitTimeMills",
		"pullThreadPoolQueueSize", "dispatchBehindBytes", "commitLogDirCapacity", "msgPutTotalTodayNow", "brokerVersionDesc"} {
		if _, ok := info.Table[k]; !ok {
			t.Errorf("runtime info lacks %s", k)
		}
	}
	if info.Table["msgPutTotalTodayNow"] != "1" {
		t.Errorf("msgPutTotalTodayNow = %q", info.Table["msgPutTotalTodayNow"])
	}
	c := e.invoke(goRequest(remoting.GetBrokerConfig, nil, nil))
	if !bytes.Contains(c.Body, []byte("brokerName=broker-a\n")) || !bytes.Contains(c.Body, []byte("maxMessageSize=")) {
		t.Fatalf("broker config body:\n%s", c.Body)
	}
	up := e.invoke(goRequest(remoting.UpdateBrokerConfig, nil, []byte("autoCreateTopicEnable=false\n")))
	if up.Code != remoting.Success || e.b.config().AutoCreateTopicEnable {
		t.Fatalf("live update: code %d remark %q", up.Code, up.Remark)
	}
	if r := e.invoke(sendV1("NewAfterUpdate", 0, nil, []byte("x"))); r.Code != remoting.TopicNotExist {
		t.Errorf("send after disabling auto-create: code %d", r.Code)
	}
	for _, body := range []string{"brokerName=other\n", "mappedFileSizeCommitLog=4096\n", "noSuchKey=1\n"} {
		if r := e.invoke(goRequest(remoting.UpdateBrokerConfig, nil, []byte(body))); r.Code == remoting.Success {
			t.Errorf("update %q accepted", strings.TrimSpace(body))
		}
	}
}

func TestVIPPortServesSends(t *testing.T) {
	e := startBroker(t, nil)
	if e.b.VIPAddr() == "" {
		t.Fatal("no VIP listener")
	}
	e.createTopic("V1", 1)
	req := sendV1("V1", 0, nil, []byte("vip"))
	req.Serialize = remoting.SerializeRocketMQ
	r := e.invokeAt(e.b.VIPAddr(), req)
	if r.Code != remoting.Success || r.ExtFields["msgId"] == "" {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
}

func TestLockBatchMQ(t *testing.T) {
	e := startBroker(t, nil)
	body := func(client string) []byte {
		return []byte(`{"consumerGroup":"og","clientId":"` + client + `","mqSet":[{"topic":"T","brokerName":"broker-a","queueId":0},{"topic":"T","brokerName":"broker-a","queueId":1}]}`)
	}
	locked := func(client string) int {
		r := e.invoke(goRequest(remoting.LockBatchMQ, nil, body(client)))
		var out struct {
			LockOKMQSet []clients.MessageQueue `json:"lockOKMQSet"`
		}
		if err := json.Unmarshal(r.Body, &out); err != nil {
			t.Fatalf("lock answer %s: %v", r.Body, err)
		}
		return len(out.LockOKMQSet)
	}
	if n := locked("c1"); n != 2 {
		t.Fatalf("c1 locked %d", n)
	}
	if n := locked("c2"); n != 0 {
		t.Fatalf("c2 locked %d of c1's queues", n)
	}
	if e.b.locks.IsLockAllExpired("og") {
		t.Fatalf("locks reported expired")
	}
	e.invoke(goRequest(remoting.UnlockBatchMQ, nil, body("c1")))
	if n := locked("c2"); n != 2 {
		t.Fatalf("c2 locked %d after unlock", n)
	}
}

func TestViewAndQueryMessage(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("Q1", 1)
	resp := e.invoke(sendV1("Q1", 0, map[string]string{"KEYS": "order-1 order-2"}, []byte("findme")))
	_, off, err := message.ParseOffsetMsgID(resp.ExtFields["msgId"])
	if err != nil {
		t.Fatal(err)
	}
	v := e.invoke(goRequest(remoting.ViewMessageByID, map[string]string{"offset": itoa64(off)}, nil))
	if v.Code != remoting.Success || len(decodeRecords(t, v.Body)) != 1 {
		t.Fatalf("view: code %d remark %q", v.Code, v.Remark)
	}
	if v := e.invoke(goRequest(remoting.ViewMessageByID, map[string]string{"offset": "999999999"}, nil)); v.Code != remoting.SystemError {
		t.Errorf("view of a bad offset: code %d", v.Code)
	}
	e.waitDispatched("Q1", 0, 1)
	q := map[string]string{"topic": "Q1", "key": "order-2", "maxNum": "10", "beginTimestamp": "0", "endTimestamp": itoa64(1 << 62)}
	if r := e.invoke(goRequest(remoting.QueryMessage, q, nil)); strings.Contains(r.Remark, "not built") {
		t.Skipf("store index: %s", r.Remark)
	}
	waitFor(t, "the index to find the key", func() bool {
		return e.invoke(goRequest(remoting.QueryMessage, q, nil)).Code == remoting.Success
	})
	r := e.invoke(goRequest(remoting.QueryMessage, q, nil))
	if recs := decodeRecords(t, r.Body); len(recs) != 1 || string(recs[0].Body) != "findme" {
		t.Fatalf("query: %d records", len(recs))
	}
	q["key"] = "missing"
	if r := e.invoke(goRequest(remoting.QueryMessage, q, nil)); r.Code != remoting.QueryNotFound {
		t.Errorf("query of a missing key: code %d", r.Code)
	}
}
