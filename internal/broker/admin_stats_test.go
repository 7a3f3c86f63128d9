package broker

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/remoting"
)

// The types below mirror RocketMQ 5.3's Java classes field by field
// (org.apache.rocketmq.remoting.protocol.admin.*, .body.*,
// org.apache.rocketmq.common.message.MessageQueue): answers are decoded
// into them with unknown fields refused, so every name Spool writes is a
// Java field name.

type javaMQ struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
}

type javaTopicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

type javaTopicStatsTable struct {
	OffsetTable map[string]javaTopicOffset `json:"offsetTable"`
	TopicPutTps float64                    `json:"topicPutTps"`
}

type javaOffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	PullOffset     int64 `json:"pullOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
}

type javaConsumeStats struct {
	OffsetTable map[string]javaOffsetWrapper `json:"offsetTable"`
	ConsumeTps  float64                      `json:"consumeTps"`
}

type javaConsumeStatsList struct {
	ConsumeStatsList  []map[string][]javaConsumeStats `json:"consumeStatsList"`
	BrokerAddr        string                          `json:"brokerAddr"`
	TotalDiff         int64                           `json:"totalDiff"`
	TotalInflightDiff int64                           `json:"totalInflightDiff"`
}

type javaQueueTimeSpan struct {
	MessageQueue     javaMQ `json:"messageQueue"`
	MinTimeStamp     int64  `json:"minTimeStamp"`
	MaxTimeStamp     int64  `json:"maxTimeStamp"`
	ConsumeTimeStamp int64  `json:"consumeTimeStamp"`
	DelayTime        int64  `json:"delayTime"`
	// The getters getMinTimeStampStr and friends are bean properties
	// fastjson writes too.
	MinTimeStampStr     string `json:"minTimeStampStr"`
	MaxTimeStampStr     string `json:"maxTimeStampStr"`
	ConsumeTimeStampStr string `json:"consumeTimeStampStr"`
}

type javaQueryConsumeTimeSpanBody struct {
	ConsumeTimeSpanSet []javaQueueTimeSpan `json:"consumeTimeSpanSet"`
}

type javaSubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	Topic           string   `json:"topic"`
	SubString       string   `json:"subString"`
	TagsSet         []string `json:"tagsSet"`
	CodeSet         []int32  `json:"codeSet"`
	SubVersion      int64    `json:"subVersion"`
	ExpressionType  string   `json:"expressionType"`
}

type javaConsumeQueueData struct {
	PhysicOffset   int64  `json:"physicOffset"`
	PhysicSize     int    `json:"physicSize"`
	TagsCode       int64  `json:"tagsCode"`
	ExtendDataJSON string `json:"extendDataJson"`
	BitMap         string `json:"bitMap"`
	Eval           bool   `json:"eval"`
	Msg            string `json:"msg"`
}

type javaQueryConsumeQueueResponseBody struct {
	SubscriptionData *javaSubscriptionData  `json:"subscriptionData"`
	FilterData       string                 `json:"filterData"`
	QueueData        []javaConsumeQueueData `json:"queueData"`
	MaxQueueIndex    int64                  `json:"maxQueueIndex"`
	MinQueueIndex    int64                  `json:"minQueueIndex"`
}

// decodeJava reads a fastjson body into v as RocketMQ's classes would:
// non-string map keys are read as their text; a field v does not have
// fails the test.
func decodeJava(t *testing.T, body []byte, v any) {
	t.Helper()
	norm, err := adminbody.Normalize(body)
	if err != nil {
		t.Fatalf("normalize %s: %v", body, err)
	}
	dec := json.NewDecoder(bytes.NewReader(norm))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s into %T: %v", body, v, err)
	}
}

// mqKey reads a MessageQueue map key.
func mqKey(t *testing.T, key string) javaMQ {
	t.Helper()
	var mq javaMQ
	dec := json.NewDecoder(bytes.NewReader([]byte(key)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&mq); err != nil {
		t.Fatalf("MessageQueue key %q: %v", key, err)
	}
	return mq
}

// wantBadHeader checks that a request without a required field is
// answered INVALID_PARAMETER naming the field.
func wantBadHeader(t *testing.T, e *testEnv, code int32, ext map[string]string, field string) {
	t.Helper()
	r := e.invoke(goRequest(code, ext, nil))
	want := ErrBadHeader.Error() + ": missing ext field " + field
	if r.Code != remoting.InvalidParameter || r.Remark != want {
		t.Errorf("%s without %s: code %d remark %q, want %d %q", remoting.RequestName(code), field, r.Code, r.Remark,
			remoting.InvalidParameter, want)
	}
}

// commit stores a committed offset of group (created if it is not).
func (e *testEnv) commit(group, topic string, queueID int, offset int64) {
	e.t.Helper()
	if r := e.invoke(goRequest(remoting.UpdateAndCreateSubscriptionGroup, nil,
		[]byte(`{"groupName":"`+group+`","consumeEnable":true,"retryQueueNums":1,"retryMaxTimes":16}`))); r.Code != remoting.Success {
		e.t.Fatalf("create group %s: code %d remark %q", group, r.Code, r.Remark)
	}
	r := e.invoke(goRequest(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": group, "topic": topic,
		"queueId": strconv.Itoa(queueID), "commitOffset": itoa64(offset)}, nil))
	if r.Code != remoting.Success {
		e.t.Fatalf("commit %s %s/%d: code %d remark %q", group, topic, queueID, r.Code, r.Remark)
	}
}

func TestGetTopicStatsInfo(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("TS", 2)
	before := time.Now().UnixMilli()
	for i := 0; i < 3; i++ {
		e.mustSend("TS", 1, "", "m")
	}
	e.waitDispatched("TS", 1, 3)
	r := e.invoke(goRequest(remoting.GetTopicStatsInfo, map[string]string{"topic": "TS"}, nil))
	if r.Code != remoting.Success {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	var st javaTopicStatsTable
	decodeJava(t, r.Body, &st)
	if len(st.OffsetTable) != 2 {
		t.Fatalf("offsetTable has %d queues, want 2: %s", len(st.OffsetTable), r.Body)
	}
	for k, o := range st.OffsetTable {
		mq := mqKey(t, k)
		if mq.Topic != "TS" || mq.BrokerName != "broker-a" {
			t.Errorf("queue %+v", mq)
		}
		switch mq.QueueID {
		case 0:
			if o.MinOffset != 0 || o.MaxOffset != 0 || o.LastUpdateTimestamp != 0 {
				t.Errorf("empty queue: %+v", o)
			}
		case 1:
			if o.MinOffset != 0 || o.MaxOffset != 3 || o.LastUpdateTimestamp < before {
				t.Errorf("queue 1: %+v, want max 3 and a store time >= %d", o, before)
			}
		default:
			t.Errorf("queue id %d", mq.QueueID)
		}
	}
	if r := e.invoke(goRequest(remoting.GetTopicStatsInfo, map[string]string{"topic": "Nope"}, nil)); r.Code != remoting.TopicNotExist || r.Remark != "topic[Nope] not exist" {
		t.Errorf("unknown topic: code %d remark %q", r.Code, r.Remark)
	}
	wantBadHeader(t, e, remoting.GetTopicStatsInfo, nil, "topic")
}

// GET_CONSUME_STATS: per queue the queue's end, the committed offset and
// the store time of the last consumed message; brokerOffset -
// consumerOffset is the lag.
func TestGetConsumeStats(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("CS", 2)
	e.createTopic("CS2", 1)
	for i := 0; i < 5; i++ {
		e.mustSend("CS", 0, "", "m")
	}
	e.mustSend("CS", 1, "", "m")
	e.mustSend("CS2", 0, "", "m")
	e.waitDispatched("CS", 0, 5)
	e.waitDispatched("CS", 1, 1)
	e.waitDispatched("CS2", 0, 1)
	e.commit("csg", "CS", 0, 2)
	e.commit("csg", "CS2", 0, 1)
	storeTime := e.b.store.MessageStoreTimeStamp("CS", 0, 1)

	get := func(topic string) javaConsumeStats {
		t.Helper()
		ext := map[string]string{"consumerGroup": "csg"}
		if topic != "" {
			ext["topic"] = topic
		}
		r := e.invoke(goRequest(remoting.GetConsumeStats, ext, nil))
		if r.Code != remoting.Success {
			t.Fatalf("code %d remark %q", r.Code, r.Remark)
		}
		var cs javaConsumeStats
		decodeJava(t, r.Body, &cs)
		return cs
	}
	cs := get("CS")
	if len(cs.OffsetTable) != 2 {
		t.Fatalf("offsetTable: %v", cs.OffsetTable)
	}
	var lag int64
	for k, w := range cs.OffsetTable {
		mq := mqKey(t, k)
		lag += w.BrokerOffset - w.ConsumerOffset
		if mq.QueueID == 0 && (w.BrokerOffset != 5 || w.ConsumerOffset != 2 || w.PullOffset != 2 || w.LastTimestamp != storeTime) {
			t.Errorf("queue 0: %+v, want broker 5, consumer 2, pull 2, last %d", w, storeTime)
		}
		if mq.QueueID == 1 && (w.BrokerOffset != 1 || w.ConsumerOffset != 0 || w.LastTimestamp != 0) {
			t.Errorf("queue 1 (nothing committed): %+v", w)
		}
	}
	if lag != 4 {
		t.Errorf("lag %d, want 6 produced - 2 committed = 4", lag)
	}
	// Without a topic: every topic the group committed offsets of.
	all := get("")
	topics := map[string]int{}
	for k := range all.OffsetTable {
		topics[mqKey(t, k).Topic]++
	}
	if topics["CS"] != 2 || topics["CS2"] != 1 || len(topics) != 2 {
		t.Errorf("all topics of the group: %v", topics)
	}
	// topicList (";"-separated) wins over topic.
	r := e.invoke(goRequest(remoting.GetConsumeStats, map[string]string{"consumerGroup": "csg", "topic": "CS", "topicList": "CS2;"}, nil))
	var listed javaConsumeStats
	decodeJava(t, r.Body, &listed)
	if len(listed.OffsetTable) != 1 {
		t.Errorf("topicList CS2: %v", listed.OffsetTable)
	}
	for k := range listed.OffsetTable {
		if mqKey(t, k).Topic != "CS2" {
			t.Errorf("topicList CS2: %v", listed.OffsetTable)
		}
	}
	wantBadHeader(t, e, remoting.GetConsumeStats, map[string]string{"topic": "CS"}, "consumerGroup")
}

func TestGetBrokerConsumeStats(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("BS", 1)
	e.invoke(goRequest(remoting.HeartBeat, nil, goHeartbeat("c1", "bsg", "BS", "*")))
	for i := 0; i < 3; i++ {
		e.mustSend("BS", 0, "", "m")
	}
	e.waitDispatched("BS", 0, 3)
	e.commit("bsg", "BS", 0, 1)
	r := e.invoke(goRequest(remoting.GetBrokerConsumeStats, map[string]string{"isOrder": "false"}, nil))
	if r.Code != remoting.Success {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	var l javaConsumeStatsList
	decodeJava(t, r.Body, &l)
	if l.BrokerAddr != e.b.Addr() || l.TotalDiff != 2 {
		t.Fatalf("%+v, want brokerAddr %s, totalDiff 2", l, e.b.Addr())
	}
	var found bool
	for _, m := range l.ConsumeStatsList {
		if st, ok := m["bsg"]; ok {
			found = true
			if len(st) != 1 || len(st[0].OffsetTable) != 1 {
				t.Errorf("group bsg: %+v", st)
			}
		}
	}
	if !found {
		t.Errorf("no entry of group bsg: %+v", l.ConsumeStatsList)
	}
	// Only ordered topics with isOrder: BS is not one.
	r = e.invoke(goRequest(remoting.GetBrokerConsumeStats, map[string]string{"isOrder": "true"}, nil))
	var o javaConsumeStatsList
	decodeJava(t, r.Body, &o)
	if r.Code != remoting.Success || o.TotalDiff != 0 {
		t.Errorf("isOrder: code %d %+v", r.Code, o)
	}
	for _, m := range o.ConsumeStatsList {
		if st, ok := m["bsg"]; ok && len(st) != 0 {
			t.Errorf("isOrder: group bsg lists %+v", st)
		}
	}
	wantBadHeader(t, e, remoting.GetBrokerConsumeStats, nil, "isOrder")
}

func TestQueryConsumeTimeSpan(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("SP", 1)
	for i := 0; i < 3; i++ {
		e.mustSend("SP", 0, "", "m")
	}
	e.waitDispatched("SP", 0, 3)
	e.commit("spg", "SP", 0, 1)
	st := e.b.store
	r := e.invoke(goRequest(remoting.QueryConsumeTimeSpan, map[string]string{"topic": "SP", "group": "spg"}, nil))
	if r.Code != remoting.Success {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	var b javaQueryConsumeTimeSpanBody
	decodeJava(t, r.Body, &b)
	if len(b.ConsumeTimeSpanSet) != 1 {
		t.Fatalf("%s", r.Body)
	}
	s := b.ConsumeTimeSpanSet[0]
	if s.MessageQueue != (javaMQ{Topic: "SP", BrokerName: "broker-a", QueueID: 0}) ||
		s.MinTimeStamp != st.MessageStoreTimeStamp("SP", 0, 0) || s.MaxTimeStamp != st.MessageStoreTimeStamp("SP", 0, 2) ||
		s.ConsumeTimeStamp != st.MessageStoreTimeStamp("SP", 0, 0) || s.DelayTime < 0 {
		t.Errorf("%+v", s)
	}
	if r := e.invoke(goRequest(remoting.QueryConsumeTimeSpan, map[string]string{"topic": "Nope", "group": "spg"}, nil)); r.Code != remoting.TopicNotExist {
		t.Errorf("unknown topic: code %d", r.Code)
	}
	wantBadHeader(t, e, remoting.QueryConsumeTimeSpan, map[string]string{"topic": "SP"}, "group")
}

func TestQueryConsumeQueue(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("QC", 1)
	e.invoke(goRequest(remoting.HeartBeat, nil, goHeartbeat("c1", "qcg", "QC", "a")))
	e.mustSend("QC", 0, "a", "first")
	e.mustSend("QC", 0, "b", "second")
	e.waitDispatched("QC", 0, 2)
	ext := map[string]string{"topic": "QC", "queueId": "0", "index": "0", "count": "10", "consumerGroup": "qcg"}
	r := e.invoke(goRequest(remoting.QueryConsumeQueue, ext, nil))
	if r.Code != remoting.Success {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	var b javaQueryConsumeQueueResponseBody
	decodeJava(t, r.Body, &b)
	if b.MinQueueIndex != 0 || b.MaxQueueIndex != 2 || len(b.QueueData) != 2 {
		t.Fatalf("%s", r.Body)
	}
	if b.SubscriptionData == nil || b.SubscriptionData.SubString != "a" || b.SubscriptionData.Topic != "QC" {
		t.Errorf("subscription %+v", b.SubscriptionData)
	}
	q0, q1 := b.QueueData[0], b.QueueData[1]
	if q0.TagsCode != 97 || !q0.Eval || q1.TagsCode != 98 || q1.Eval {
		t.Errorf("tag codes and filter: %+v %+v", q0, q1)
	}
	if q1.PhysicOffset != q0.PhysicOffset+int64(q0.PhysicSize) || q0.PhysicSize <= 0 {
		t.Errorf("offsets: %+v %+v", q0, q1)
	}
	ext["queueId"] = "7"
	if r := e.invoke(goRequest(remoting.QueryConsumeQueue, ext, nil)); r.Code != remoting.SystemError || r.Remark != "7@QC is not exist!" {
		t.Errorf("missing queue: code %d remark %q", r.Code, r.Remark)
	}
	wantBadHeader(t, e, remoting.QueryConsumeQueue, map[string]string{"queueId": "0", "index": "0", "count": "1"}, "topic")
	if r := e.invoke(goRequest(remoting.QueryConsumeQueue, map[string]string{"topic": "QC", "queueId": "x"}, nil)); r.Code != remoting.InvalidParameter {
		t.Errorf("malformed queueId: code %d remark %q", r.Code, r.Remark)
	}
}
