package adminbody

import (
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/metadata"
)

var (
	q0 = MessageQueue{Topic: "t", BrokerName: "b", QueueID: 0}
	q1 = MessageQueue{Topic: "t", BrokerName: "b", QueueID: 1}
)

// literal bodies as RocketMQ 5.3's fastjson 1.2 writes the Java objects:
// bean fields in name order, object map keys bare, Integer map keys bare,
// doubles as Double.toString, null fields left out, no whitespace.
var literalCases = []struct {
	name string
	v    any
	new  func() any
	want string
}{
	{"ConsumeStats", &ConsumeStats{ConsumeTps: 0, OffsetTable: Map[MessageQueue, OffsetWrapper]{
		q0: {BrokerOffset: 10, ConsumerOffset: 4, PullOffset: 6, LastTimestamp: 1700000000000},
		q1: {BrokerOffset: 3, ConsumerOffset: 3, PullOffset: 3, LastTimestamp: 0},
	}}, func() any { return new(ConsumeStats) },
		`{"consumeTps":0.0,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":1700000000000,"pullOffset":6},{"brokerName":"b","queueId":1,"topic":"t"}:{"brokerOffset":3,"consumerOffset":3,"lastTimestamp":0,"pullOffset":3}}}`},
	{"TopicStatsTable", &TopicStatsTable{TopicPutTps: 12.5, OffsetTable: Map[MessageQueue, TopicOffset]{
		q0: {MinOffset: 0, MaxOffset: 100, LastUpdateTimestamp: 1700000000123},
	}}, func() any { return new(TopicStatsTable) },
		`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"lastUpdateTimestamp":1700000000123,"maxOffset":100,"minOffset":0}},"topicPutTps":12.5}`},
	{"ConsumerConnection", &ConsumerConnection{
		ConnectionSet:    List[Connection]{{ClientID: "10.0.0.1@1234", ClientAddr: "10.0.0.1:50000", Language: "JAVA", Version: 453}},
		ConsumeType:      ConsumePassively,
		MessageModel:     Clustering,
		ConsumeFromWhere: ConsumeFromLastOffset,
		SubscriptionTable: Map[string, SubscriptionData]{"t": {Topic: "t", SubString: "a || b", ExpressionType: "TAG",
			TagsSet: List[string]{"a", "b"}, CodeSet: List[int32]{97, 98}, SubVersion: 1700000000000}},
	}, func() any { return new(ConsumerConnection) },
		`{"connectionSet":[{"clientAddr":"10.0.0.1:50000","clientId":"10.0.0.1@1234","language":"JAVA","version":453}],"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","subscriptionTable":{"t":{"classFilterMode":false,"codeSet":[97,98],"expressionType":"TAG","subString":"a || b","subVersion":1700000000000,"tagsSet":["a","b"],"topic":"t"}}}`},
	{"ProducerConnection empty", &ProducerConnection{}, func() any { return new(ProducerConnection) },
		`{"connectionSet":[]}`},
	{"BrokerStatsData", &BrokerStatsData{
		StatsMinute: BrokerStatsItem{Sum: 120, Tps: 2, Avgpt: 1.5},
		StatsHour:   BrokerStatsItem{Sum: 7200, Tps: 2, Avgpt: 1.5},
		StatsDay:    BrokerStatsItem{Sum: 172800000, Tps: 2000, Avgpt: 0.001},
	}, func() any { return new(BrokerStatsData) },
		`{"statsDay":{"avgpt":0.001,"sum":172800000,"tps":2000.0},"statsHour":{"avgpt":1.5,"sum":7200,"tps":2.0},"statsMinute":{"avgpt":1.5,"sum":120,"tps":2.0}}`},
	{"GroupList", &GroupList{GroupList: List[string]{"g1", "g2"}}, func() any { return new(GroupList) },
		`{"groupList":["g1","g2"]}`},
	{"TopicList", &TopicList{TopicList: List[string]{"RMQ_SYS_TRACE_TOPIC", "SCHEDULE_TOPIC_XXXX"}, BrokerAddr: "10.0.0.1:10911"},
		func() any { return new(TopicList) },
		`{"brokerAddr":"10.0.0.1:10911","topicList":["RMQ_SYS_TRACE_TOPIC","SCHEDULE_TOPIC_XXXX"]}`},
	{"ResetOffsetBody", &ResetOffsetBody{OffsetTable: Map[MessageQueue, int64]{q0: 5, q1: 7}}, func() any { return new(ResetOffsetBody) },
		`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:5,{"brokerName":"b","queueId":1,"topic":"t"}:7}}`},
	{"GetConsumerStatusBody", &GetConsumerStatusBody{
		ConsumerTable:     Map[string, Map[MessageQueue, int64]]{"c1": {q0: 3}},
		MessageQueueTable: Map[MessageQueue, int64]{},
	}, func() any { return new(GetConsumerStatusBody) },
		`{"consumerTable":{"c1":{{"brokerName":"b","queueId":0,"topic":"t"}:3}},"messageQueueTable":{}}`},
	{"ConsumerOffsetSerializeWrapper", &ConsumerOffsetSerializeWrapper{
		DataVersion: metadata.DataVersion{Timestamp: 1700000000000, Counter: 3},
		OffsetTable: Map[string, map[IntKey]int64]{"t@g": {0: 5, 1: 3}},
	}, func() any { return new(ConsumerOffsetSerializeWrapper) },
		`{"dataVersion":{"timestamp":1700000000000,"counter":3,"stateVersion":0},"offsetTable":{"t@g":{0:5,1:3}}}`},
	{"DelayOffsetSerializeWrapper", &DelayOffsetSerializeWrapper{OffsetTable: Map[IntKey, int64]{1: 0, 2: 9}},
		func() any { return new(DelayOffsetSerializeWrapper) },
		`{"dataVersion":{"timestamp":0,"counter":0,"stateVersion":0},"offsetTable":{1:0,2:9}}`},
	{"KVTable", &KVTable{Table: Map[string, string]{"brokerVersionDesc": "V5_3_3", "putTps": "0.0 0.0 0.0"}},
		func() any { return new(KVTable) },
		`{"table":{"brokerVersionDesc":"V5_3_3","putTps":"0.0 0.0 0.0"}}`},
	{"ConsumeStatsList", &ConsumeStatsList{BrokerAddr: "10.0.0.1:10911", TotalDiff: 6,
		ConsumeStatsList: List[map[string]List[ConsumeStats]]{{"g": {{ConsumeTps: 1e7,
			OffsetTable: Map[MessageQueue, OffsetWrapper]{q0: {BrokerOffset: 10, ConsumerOffset: 4, PullOffset: 4}}}}}}},
		func() any { return new(ConsumeStatsList) },
		`{"brokerAddr":"10.0.0.1:10911","consumeStatsList":[{"g":[{"consumeTps":1.0E7,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":0,"pullOffset":4}}}]}],"totalDiff":6,"totalInflightDiff":0}`},
	{"ProducerTableInfo", &ProducerTableInfo{Data: Map[string, List[ProducerInfo]]{"pg": {{ClientID: "c", RemoteIP: "10.0.0.2:1",
		Language: "GO", Version: 317, LastUpdateTimestamp: 1700000000000}}}},
		func() any { return new(ProducerTableInfo) },
		`{"data":{"pg":[{"clientId":"c","language":"GO","lastUpdateTimestamp":1700000000000,"remoteIP":"10.0.0.2:1","version":317}]}}`},
	{"QueryConsumeQueueResponseBody", &QueryConsumeQueueResponseBody{MaxQueueIndex: 10, MinQueueIndex: 0,
		QueueData: List[ConsumeQueueData]{{PhysicOffset: 0, PhysicSize: 180, TagsCode: 97, Eval: true}}},
		func() any { return new(QueryConsumeQueueResponseBody) },
		`{"maxQueueIndex":10,"minQueueIndex":0,"queueData":[{"eval":true,"physicOffset":0,"physicSize":180,"tagsCode":97}]}`},
	{"ConsumerRunningInfo", &ConsumerRunningInfo{
		Properties: Map[string, string]{PropConsumeType: "CONSUME_PASSIVELY"},
		MqTable:    Map[MessageQueue, ProcessQueueInfo]{q0: {CommitOffset: 4, CachedMsgCount: 2, Locked: true}},
		StatusTable: Map[string, ConsumeStatus]{"t": {PullRT: 1.25, PullTPS: 3, ConsumeRT: 0.5, ConsumeOKTPS: 3,
			ConsumeFailedTPS: 0.25, ConsumeFailedMsgs: 0}},
	}, func() any { return new(ConsumerRunningInfo) },
		`{"mqPopTable":{},"mqTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"cachedMsgCount":2,"cachedMsgMaxOffset":0,"cachedMsgMinOffset":0,"cachedMsgSizeInMiB":0,"commitOffset":4,"droped":false,"lastConsumeTimestamp":0,"lastLockTimestamp":0,"lastPullTimestamp":0,"locked":true,"transactionMsgCount":0,"transactionMsgMaxOffset":0,"transactionMsgMinOffset":0,"tryUnlockTimes":0}},"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"},"statusTable":{"t":{"consumeFailedMsgs":0,"consumeFailedTPS":0.25,"consumeOKTPS":3.0,"consumeRT":0.5,"pullRT":1.25,"pullTPS":3.0}},"subscriptionSet":[],"userConsumerInfo":{}}`},
	{"ConsumeMessageDirectlyResult", &ConsumeMessageDirectlyResult{AutoCommit: true, ConsumeResult: CRSuccess, SpentTimeMills: 3},
		func() any { return new(ConsumeMessageDirectlyResult) },
		`{"autoCommit":true,"consumeResult":"CR_SUCCESS","order":false,"spentTimeMills":3}`},
	{"ConsumeByWho", &ConsumeByWho{ConsumedGroup: List[string]{"g1"}, Topic: "t", QueueID: 1, Offset: 9},
		func() any { return new(ConsumeByWho) },
		`{"consumedGroup":["g1"],"notConsumedGroup":[],"offset":9,"queueId":1,"topic":"t"}`},
	{"SubscriptionGroupWrapper", &SubscriptionGroupWrapper{SubscriptionGroupTable: Map[string, *metadata.SubscriptionGroupConfig]{}},
		func() any { return new(SubscriptionGroupWrapper) },
		`{"dataVersion":{"timestamp":0,"counter":0,"stateVersion":0},"forbiddenTable":{},"subscriptionGroupTable":{}}`},
	{"TopicConfigAndMappingSerializeWrapper", &TopicConfigAndMappingSerializeWrapper{
		TopicConfigTable: Map[string, *metadata.TopicConfig]{"t": {TopicName: "t", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG", Attributes: map[string]string{}}}},
		func() any { return new(TopicConfigAndMappingSerializeWrapper) },
		`{"dataVersion":{"timestamp":0,"counter":0,"stateVersion":0},"mappingDataVersion":{"timestamp":0,"counter":0,"stateVersion":0},"topicConfigTable":{"t":{"topicName":"t","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false,"attributes":{}}},"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}`},
}

// Request bodies as mqadmin's updateTopicList and updateSubGroupList send
// them: fastjson's field order, fields Spool does not keep (RocketMQ 5's
// groupRetryPolicy, subscriptionDataSet) ignored.
func TestUnmarshalListRequestBodies(t *testing.T) {
	var tl CreateTopicListRequestBody
	body := `{"topicConfigList":[{"attributes":{"+message.type":"NORMAL"},"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"t1","topicSysFlag":0,"writeQueueNums":4},{"perm":2,"readQueueNums":1,"topicName":"t2","writeQueueNums":1}]}`
	if err := Unmarshal([]byte(body), &tl); err != nil {
		t.Fatal(err)
	}
	if len(tl.TopicConfigList) != 2 || tl.TopicConfigList[0].TopicName != "t1" || tl.TopicConfigList[0].ReadQueueNums != 8 ||
		tl.TopicConfigList[0].WriteQueueNums != 4 || tl.TopicConfigList[0].Attributes["+message.type"] != "NORMAL" ||
		tl.TopicConfigList[1].Perm != 2 {
		t.Fatalf("got %+v %+v", tl.TopicConfigList[0], tl.TopicConfigList[1])
	}
	var gl SubscriptionGroupList
	body = `{"groupConfigList":[{"attributes":{},"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,"consumeMessageOrderly":false,"consumeTimeoutMinute":15,"groupName":"g1","groupRetryPolicy":{"type":"CUSTOMIZED"},"groupSysFlag":0,"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}]}`
	if err := Unmarshal([]byte(body), &gl); err != nil {
		t.Fatal(err)
	}
	if len(gl.GroupConfigList) != 1 || gl.GroupConfigList[0].GroupName != "g1" || gl.GroupConfigList[0].RetryMaxTimes != 16 ||
		!gl.GroupConfigList[0].ConsumeEnable || gl.GroupConfigList[0].WhichBrokerWhenConsumeSlowly != 1 {
		t.Fatalf("got %+v", gl.GroupConfigList)
	}
	var co QueryCorrectionOffsetBody
	if err := Unmarshal([]byte(`{"correctionOffsets":{0:9223372036854775807,3:12}}`), &co); err != nil {
		t.Fatal(err)
	}
	if co.CorrectionOffsets[0] != math.MaxInt64 || co.CorrectionOffsets[3] != 12 {
		t.Fatalf("got %+v", co.CorrectionOffsets)
	}
	if b, err := Marshal(&co); err != nil || string(b) != `{"correctionOffsets":{0:9223372036854775807,3:12}}` {
		t.Fatalf("%s %v", b, err)
	}
}

// A reader that cuts the offset table at ",{" and "}:" (as the Go client
// reads RESET_CONSUMER_CLIENT_OFFSET) finds every queue of Marshal's form.
func TestResetOffsetBodyCutsAtEntryBoundaries(t *testing.T) {
	want := Map[MessageQueue, int64]{q0: 5, q1: 7, {Topic: "t2", BrokerName: "b", QueueID: 12}: 99}
	b, err := Marshal(&ResetOffsetBody{OffsetTable: want})
	if err != nil {
		t.Fatal(err)
	}
	table := strings.TrimSuffix(strings.TrimPrefix(string(b), `{"offsetTable":{{`), "}}")
	got := map[MessageQueue]int64{}
	for _, entry := range strings.Split(table, ",{") {
		key, val, ok := strings.Cut(entry, "}:")
		if !ok {
			t.Fatalf("entry %q in %s", entry, b)
		}
		var q MessageQueue
		if err := q.UnmarshalJSON([]byte("{" + key + "}")); err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		got[q] = n
	}
	if !reflect.DeepEqual(got, map[MessageQueue]int64(want)) {
		t.Fatalf("got %v from %s", got, b)
	}
}

func TestMarshalWritesFastjsonBytes(t *testing.T) {
	for _, c := range literalCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Marshal(c.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("Marshal\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestUnmarshalReadsFastjsonBytes(t *testing.T) {
	for _, c := range literalCases {
		t.Run(c.name, func(t *testing.T) {
			v := c.new()
			if err := Unmarshal([]byte(c.want), v); err != nil {
				t.Fatal(err)
			}
			again, err := Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != c.want {
				t.Fatalf("read and written again\n got %s\nwant %s", again, c.want)
			}
		})
	}
}

func TestUnmarshalFieldsOfAMessageQueueKeyedBody(t *testing.T) {
	var cs ConsumeStats
	if err := Unmarshal([]byte(literalCases[0].want), &cs); err != nil {
		t.Fatal(err)
	}
	w, ok := cs.OffsetTable[q0]
	if !ok || w.BrokerOffset != 10 || w.ConsumerOffset != 4 || w.PullOffset != 6 || w.LastTimestamp != 1700000000000 {
		t.Fatalf("queue 0 = %+v, %v; table %+v", w, ok, cs.OffsetTable)
	}
	if len(cs.OffsetTable) != 2 || cs.TotalDiff() != 6 || cs.InflightTotalDiff() != 2 {
		t.Fatalf("table %+v: total diff %d, in flight %d", cs.OffsetTable, cs.TotalDiff(), cs.InflightTotalDiff())
	}
}

// fastjson's pretty form (tabs, newlines, a space after nothing) and keys
// whose strings hold JSON's own punctuation are read too.
func TestUnmarshalPrettyAndTrickyKeys(t *testing.T) {
	body := "{\n\t\"offsetTable\":{\n\t\t{\n\t\t\t\"brokerName\":\"b{:}\\\"\",\n\t\t\t\"queueId\":3,\n\t\t\t\"topic\":\"t,{x}:\"\n\t\t}:42\n\t}\n}"
	var r ResetOffsetBody
	if err := Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	want := MessageQueue{BrokerName: "b{:}\"", QueueID: 3, Topic: "t,{x}:"}
	if len(r.OffsetTable) != 1 || r.OffsetTable[want] != 42 {
		t.Fatalf("got %+v", r.OffsetTable)
	}
	// Keys in any field order, and integer keys bare or quoted.
	var c ConsumerOffsetSerializeWrapper
	if err := Unmarshal([]byte(`{"offsetTable":{"t@g":{0:5,"1":3}}}`), &c); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.OffsetTable["t@g"], map[IntKey]int64{0: 5, 1: 3}) {
		t.Fatalf("got %+v", c.OffsetTable)
	}
	var s GetConsumerStatusBody
	if err := Unmarshal([]byte(`{"messageQueueTable":{{"topic":"t","queueId":1,"brokerName":"b"}:8}}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.MessageQueueTable[q1] != 8 {
		t.Fatalf("got %+v", s.MessageQueueTable)
	}
}

func TestUnmarshalConsumeResultByNameOrOrdinal(t *testing.T) {
	for body, want := range map[string]CMResult{
		`{"consumeResult":"CR_LATER"}`: CRLater,
		`{"consumeResult":0}`:          CRSuccess,
		`{"consumeResult":5}`:          CRReturnNull,
	} {
		var r ConsumeMessageDirectlyResult
		if err := Unmarshal([]byte(body), &r); err != nil || r.ConsumeResult != want {
			t.Fatalf("%s: %q, %v", body, r.ConsumeResult, err)
		}
	}
	var r ConsumeMessageDirectlyResult
	if err := Unmarshal([]byte(`{"consumeResult":6}`), &r); !errors.Is(err, ErrSyntax) {
		t.Fatalf("ordinal 6: %v", err)
	}
}

func TestUnmarshalRejectsMalformedBodies(t *testing.T) {
	for _, body := range []string{
		``,
		`{`,
		`{"offsetTable":{{"brokerName":"b"}}}`,
		`{"offsetTable":{{"brokerName":"b"}:1,}}`,
		`{"a":"unterminated}`,
		`{"a":1} trailing`,
		`{"offsetTable":{{"brokerName":1,"queueId":"x"}:1}}`,
		strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2),
	} {
		var r ResetOffsetBody
		if err := Unmarshal([]byte(body), &r); !errors.Is(err, ErrSyntax) {
			t.Errorf("%.40q: err %v, want ErrSyntax", body, err)
		}
	}
}

func TestDoubleAsJavaWritesIt(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{{0, "0.0"}, {1, "1.0"}, {12.5, "12.5"}, {0.001, "0.001"}, {0.0001, "1.0E-4"}, {1e7, "1.0E7"},
		{math.NaN(), "null"}, {math.Inf(1), "null"}, {-2.5, "-2.5"}} {
		b, err := Double(c.f).MarshalJSON()
		if err != nil || string(b) != c.want {
			t.Errorf("%v: %s, %v; want %s", c.f, b, err, c.want)
		}
	}
}

func TestDoubleReadsNullAsZero(t *testing.T) {
	var s ConsumeStatus
	if err := Unmarshal([]byte(`{"consumeFailedTPS":null,"pullRT":1.0E-4,"pullTPS":3}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.ConsumeFailedTPS != 0 || s.PullRT != 1e-4 || s.PullTPS != 3 {
		t.Fatalf("got %+v", s)
	}
}

func TestQueueTimeSpanWritesFormattedTimes(t *testing.T) {
	saved := time.Local
	time.Local = time.FixedZone("CST", 8*3600)
	defer func() { time.Local = saved }()
	body := QueryConsumeTimeSpanBody{ConsumeTimeSpanSet: List[QueueTimeSpan]{{MessageQueue: q0,
		MinTimeStamp: 1700000000000, MaxTimeStamp: 1700000001500, ConsumeTimeStamp: 1700000001000, DelayTime: 500}}}
	got, err := Marshal(&body)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"consumeTimeSpanSet":[{"consumeTimeStamp":1700000001000,"consumeTimeStampStr":"2023-11-15#06:13:21:000","delayTime":500,"maxTimeStamp":1700000001500,"maxTimeStampStr":"2023-11-15#06:13:21:500","messageQueue":{"brokerName":"b","queueId":0,"topic":"t"},"minTimeStamp":1700000000000,"minTimeStampStr":"2023-11-15#06:13:20:000"}]}`
	if string(got) != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	var back QueryConsumeTimeSpanBody
	if err := Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, body) {
		t.Fatalf("read back %+v", back)
	}
}

func TestMessageQueueOrderAndString(t *testing.T) {
	a := MessageQueue{Topic: "a", BrokerName: "z", QueueID: 9}
	if a.Compare(q0) >= 0 || q0.Compare(q1) >= 0 || q1.Compare(q0) <= 0 || q0.Compare(q0) != 0 {
		t.Fatal("order")
	}
	if q1.String() != "MessageQueue [topic=t, brokerName=b, queueId=1]" {
		t.Fatal(q1.String())
	}
}

func TestMarshalLeavesOrdinaryStringsAlone(t *testing.T) {
	v := KVTable{Table: Map[string, string]{"{not a key}": "<&>", "\x00": "\x1f"}}
	got, err := Marshal(&v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"table":{"\u0000":"\u001f","{not a key}":"<&>"}}`; string(got) != want {
		t.Fatalf("got %s want %s", got, want)
	}
}
