package main

import (
	"strings"
	"testing"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// fakeBroker answers the admin requests the broker does not serve yet
// with bodies in RocketMQ's form (fastjson, bare MessageQueue keys), so
// the commands that read them are tested against that form.
func fakeBroker(t *testing.T) *adminFixture {
	t.Helper()
	ns, err := namesrv.New(namesrv.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown() })
	nsAddr, err := ns.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mq := func(q int) adminbody.MessageQueue {
		return adminbody.MessageQueue{Topic: "FakeT", BrokerName: "broker-f", QueueID: q}
	}
	bodies := map[int32]any{
		codeGetTopicStatsInfo: adminbody.TopicStatsTable{OffsetTable: adminbody.Map[adminbody.MessageQueue, adminbody.TopicOffset]{
			mq(0): {MinOffset: 3, MaxOffset: 10, LastUpdateTimestamp: 1700000000000}, mq(1): {MinOffset: 0, MaxOffset: 7}}},
		codeGetConsumeStats: adminbody.ConsumeStats{ConsumeTps: 2.5, OffsetTable: adminbody.Map[adminbody.MessageQueue, adminbody.OffsetWrapper]{
			mq(0): {BrokerOffset: 10, ConsumerOffset: 4, PullOffset: 6, LastTimestamp: 1700000000000}, mq(1): {BrokerOffset: 7, ConsumerOffset: 7, PullOffset: 7}}},
		codeGetConsumerConnectionList: adminbody.ConsumerConnection{
			ConnectionSet:    adminbody.List[adminbody.Connection]{{ClientAddr: "10.0.0.9:5000", ClientID: "10.0.0.9@1", Language: "JAVA", Version: 479}},
			ConsumeFromWhere: adminbody.ConsumeFromLastOffset, ConsumeType: adminbody.ConsumePassively, MessageModel: adminbody.Clustering,
			SubscriptionTable: adminbody.Map[string, adminbody.SubscriptionData]{"FakeT": {Topic: "FakeT", SubString: "TagA || TagB"}}},
		codeGetProducerConnectionList: adminbody.ProducerConnection{
			ConnectionSet: adminbody.List[adminbody.Connection]{{ClientAddr: "10.0.0.8:5001", ClientID: "10.0.0.8@2", Language: "GO", Version: 413}}},
		codeInvokeBrokerToResetOffset: adminbody.ResetOffsetBody{OffsetTable: adminbody.Map[adminbody.MessageQueue, int64]{mq(0): 3, mq(1): 0}},
		codeQueryTopicConsumeByWho:    adminbody.GroupList{GroupList: adminbody.List[string]{"FakeG"}},
		codeViewBrokerStatsData:       adminbody.BrokerStatsData{StatsMinute: adminbody.BrokerStatsItem{Sum: 60, Tps: 1}, StatsDay: adminbody.BrokerStatsItem{Sum: 1234}},
		codeGetConsumerRunningInfo: adminbody.ConsumerRunningInfo{
			Properties:      adminbody.Map[string, string]{adminbody.PropConsumeType: "CONSUME_PASSIVELY"},
			SubscriptionSet: adminbody.List[adminbody.SubscriptionData]{{Topic: "FakeT", SubString: "*"}},
			MqTable:         adminbody.Map[adminbody.MessageQueue, adminbody.ProcessQueueInfo]{mq(0): {CommitOffset: 4}},
			StatusTable:     adminbody.Map[string, adminbody.ConsumeStatus]{"FakeT": {PullTPS: 3}}},
		codeCloneGroupOffset: nil,
		remoting.GetAllSubscriptionGroupConfig: adminbody.SubscriptionGroupWrapper{
			SubscriptionGroupTable: adminbody.Map[string, *metadata.SubscriptionGroupConfig]{"FakeG": metadata.NewSubscriptionGroupConfig("FakeG")}},
	}
	ts := transport.NewServer(transport.ServerConfig{})
	for code, body := range bodies {
		ts.Register(code, func(_ *transport.Conn, req *remoting.Command) *remoting.Command {
			resp := remoting.NewResponse(req, remoting.Success, "")
			if body != nil {
				b, err := adminbody.Marshal(body)
				if err != nil {
					t.Error(err)
				}
				resp.Body = b
			}
			return resp
		}, nil)
	}
	bAddr, err := ts.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	reg := (&namesrv.RegisterBrokerBody{TopicConfigSerializeWrapper: namesrv.TopicConfigSerializeWrapper{
		TopicConfigTable: map[string]namesrv.TopicConfig{"FakeT": {TopicName: "FakeT", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6, TopicFilterType: "SINGLE_TAG"}}}}).Encode(false)
	resp := ns.Handle(remoting.NewRequest(remoting.RegisterBroker, map[string]string{"brokerName": "broker-f", "brokerAddr": bAddr.String(),
		"clusterName": "FakeCluster", "brokerId": "0", "compressed": "false"}, reg))
	if resp.Code != remoting.Success {
		t.Fatalf("register: %d %s", resp.Code, resp.Remark)
	}
	return &adminFixture{t: t, ns: nsAddr.String(), addr: bAddr.String(), brokerName: "broker-f", dir: t.TempDir()}
}

// TestAdminCommandsReadRocketMQAnswers: the commands that read the stats,
// connection, reset and running-info bodies print them in mqadmin's
// columns and as JSON.
func TestAdminCommandsReadRocketMQAnswers(t *testing.T) {
	f := fakeBroker(t)

	out := f.ok("topicStatus", "-t", "FakeT")
	f.columns("topicStatus", out, "#Broker", "Name", "#QID", "#Min", "Offset", "#Max", "Offset", "#Last", "Updated")
	f.columns("topicStatus", out, "broker-f", "1", "0", "7")
	if !strings.Contains(out, "broker-f                          0     3                     10                      "+javaTime(1700000000000)) {
		t.Errorf("topicStatus queue 0 row:\n%s", out)
	}
	var ts []map[string]any
	f.json(&ts, "topicStatus", "-t", "FakeT")
	if len(ts) != 2 || ts[0]["queueId"] != 0.0 || ts[0]["maxOffset"] != 10.0 || ts[1]["minOffset"] != 0.0 {
		t.Errorf("topicStatus json: %v", ts)
	}

	out = f.ok("consumerProgress", "-g", "FakeG")
	f.columns("consumerProgress", out, "FakeT", "broker-f", "0", "10", "4", "6", "2", javaTime(1700000000000))
	f.columns("consumerProgress", out, "FakeT", "broker-f", "1", "7", "7", "0", "0", "N/A")
	f.contains("consumerProgress", out, "Consume TPS: 2.50", "Consume Diff Total: 6", "Consume Inflight Total: 2")
	var cp struct {
		DiffTotal int64 `json:"diffTotal"`
		Queues    []struct {
			QueueID int   `json:"queueId"`
			Diff    int64 `json:"diff"`
		} `json:"queues"`
	}
	f.json(&cp, "consumerProgress", "-g", "FakeG")
	if cp.DiffTotal != 6 || len(cp.Queues) != 2 || cp.Queues[0].Diff != 6 {
		t.Errorf("consumerProgress json: %+v", cp)
	}

	out = f.ok("consumerConnection", "-g", "FakeG")
	f.columns("consumerConnection", out, "001", "10.0.0.9@1", "10.0.0.9:5000", "JAVA", "V5_3_3")
	f.columns("consumerConnection", out, "001", "Topic:", "FakeT", "SubExpression:", "TagA", "||", "TagB")
	f.contains("consumerConnection", out, "ConsumeType: CONSUME_PASSIVELY", "MessageModel: CLUSTERING", "ConsumeFromWhere: CONSUME_FROM_LAST_OFFSET")
	var cc adminbody.ConsumerConnection
	f.json(&cc, "consumerConnection", "-g", "FakeG")
	if len(cc.ConnectionSet) != 1 || cc.MessageModel != "CLUSTERING" {
		t.Errorf("consumerConnection json: %+v", cc)
	}

	out = f.ok("producerConnection", "-g", "FakeP", "-t", "FakeT")
	f.columns("producerConnection", out, "0001", "10.0.0.8@2", "10.0.0.8:5001", "GO", "V5_0_0")

	out = f.ok("consumerProgress")
	f.columns("consumerProgress (all)", out, "FakeG", "1", "V5_3_3", "PUSH", "CLUSTERING", "2", "6")

	out = f.ok("resetOffsetByTime", "-g", "FakeG", "-t", "FakeT", "-s", "now")
	f.columns("resetOffsetByTime", out, "#brokerName", "#queueId", "#offset")
	f.columns("resetOffsetByTime", out, "broker-f", "0", "3")
	f.columns("skipAccumulatedMessage", f.ok("skipAccumulatedMessage", "-g", "FakeG", "-t", "FakeT"), "broker-f", "1", "0")
	f.contains("cloneGroupOffset", f.ok("cloneGroupOffset", "-s", "FakeG", "-d", "FakeG2", "-t", "FakeT"),
		"clone group offset success. srcGroup[FakeG], destGroup=[FakeG2], topic[FakeT]")

	out = f.ok("statsAll", "-t", "FakeT")
	f.columns("statsAll", out, "FakeT", "FakeG", "6", "1.00", "1.00", "1234", "1234")

	out = f.ok("topicList", "-c")
	f.columns("topicList -c", out, "FakeCluster", "FakeT", "FakeG")

	out = f.ok("consumerStatus", "-g", "FakeG")
	f.contains("consumerStatus", out, "001  10.0.0.9@1", "Same subscription in the same group of consumer")
	out = f.ok("consumerStatus", "-g", "FakeG", "-s", "10.0.0.9@1")
	f.contains("consumerStatus -s", out, "#Consumer Subscription#", "#Consumer Offset#")
	f.columns("consumerStatus -s", out, "FakeT", "broker-f", "0", "4")
}
