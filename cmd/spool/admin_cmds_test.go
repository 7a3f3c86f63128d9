package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func (f *adminFixture) messageCommandsTest(t *testing.T) {
	f.t = t
	out := f.ok("sendMessage", "-t", "AdminT", "-p", "hello", "-k", "key1", "-c", "tagA", "-b", f.brokerName, "-i", "0")
	f.columns("sendMessage header", out, "#Broker", "Name", "#QID", "#Send", "Result", "#MsgId")
	var sent struct {
		BrokerName  string `json:"brokerName"`
		QueueID     int    `json:"queueId"`
		QueueOffset int64  `json:"queueOffset"`
		SendStatus  string `json:"sendStatus"`
		MsgID       string `json:"msgId"`
		OffsetMsgID string `json:"offsetMsgId"`
	}
	f.json(&sent, "sendMessage", "-t", "AdminT", "-p", "world", "-k", "key2", "-c", "tagB", "-b", f.brokerName, "-i", "1")
	if sent.SendStatus != "SEND_OK" || sent.BrokerName != f.brokerName || sent.QueueID != 1 || sent.MsgID == "" || sent.OffsetMsgID == "" {
		t.Fatalf("sendMessage json: %+v", sent)
	}
	if !strings.Contains(out, f.brokerName) || !strings.Contains(out, "SEND_OK") {
		t.Errorf("sendMessage: %s", out)
	}

	// The index is built behind the CommitLog: wait for the key.
	var byKey []shownMsg
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		f.json(&byKey, "queryMsgByKey", "-t", "AdminT", "-k", "key2")
		if len(byKey) > 0 {
			break
		}
	}
	if len(byKey) != 1 || byKey[0].MsgID != sent.MsgID || byKey[0].Body != "world" || byKey[0].QueueOffset != sent.QueueOffset {
		t.Fatalf("queryMsgByKey json: %+v", byKey)
	}
	out = f.ok("queryMsgByKey", "-t", "AdminT", "-k", "key2")
	f.columns("queryMsgByKey header", out, "#Message", "ID", "#QID", "#Offset")
	f.columns("queryMsgByKey row", out, sent.MsgID, "1", strconv.FormatInt(sent.QueueOffset, 10))

	out = f.ok("queryMsgById", "-i", sent.OffsetMsgID)
	f.columns("queryMsgById", out, "OffsetID:", sent.OffsetMsgID)
	f.columns("queryMsgById", out, "Topic:", "AdminT")
	f.columns("queryMsgById", out, "Tags:", "[tagB]")
	f.columns("queryMsgById", out, "Keys:", "[key2]")
	f.columns("queryMsgById", out, "Queue", "ID:", "1")
	var byID []shownMsg
	f.json(&byID, "queryMsgById", "-i", sent.MsgID, "-t", "AdminT")
	if len(byID) != 1 || byID[0].OffsetMsgID != sent.OffsetMsgID || byID[0].Body != "world" {
		t.Errorf("queryMsgById by unique key json: %+v", byID)
	}
	f.columns("queryMsgByUniqueKey", f.ok("queryMsgByUniqueKey", "-i", sent.MsgID, "-t", "AdminT"), "Keys:", "[key2]")

	off := strconv.FormatInt(sent.QueueOffset, 10)
	out = f.ok("queryMsgByOffset", "-t", "AdminT", "-b", f.brokerName, "-i", "1", "-o", off)
	f.columns("queryMsgByOffset", out, "OffsetID:", sent.OffsetMsgID)
	var byOff []shownMsg
	f.json(&byOff, "queryMsgByOffset", "-t", "AdminT", "-b", f.brokerName, "-i", "1", "-o", off)
	if len(byOff) != 1 || byOff[0].Body != "world" {
		t.Errorf("queryMsgByOffset json: %+v", byOff)
	}

	out = f.ok("consumeMessage", "-t", "AdminT", "-b", f.brokerName, "-i", "1", "-o", off, "-c", "1")
	f.contains("consumeMessage", out, "Consume ok\nMessageExt [brokerName="+f.brokerName+", queueId=1,", "msgId="+sent.OffsetMsgID, "topic='AdminT'")
	var consumed []shownMsg
	f.json(&consumed, "consumeMessage", "-t", "AdminT")
	if len(consumed) != 2 {
		t.Errorf("consumeMessage json: %d messages, want 2: %+v", len(consumed), consumed)
	}

	out = f.ok("printMsg", "-t", "AdminT")
	f.contains("printMsg", out, "minOffset=0, maxOffset=1, MessageQueue [topic=AdminT, brokerName="+f.brokerName+", queueId=1]",
		"MSGID: "+sent.MsgID+" MessageExt [", "BODY: world")
	out = f.ok("printMsg", "-t", "AdminT", "-d", "false", "-s", "tagA")
	if strings.Contains(out, "BODY: world") || strings.Contains(out, sent.MsgID) {
		t.Errorf("printMsg -s tagA -d false printed the tagB message's body:\n%s", out)
	}
	var queues []struct {
		QueueID  int        `json:"queueId"`
		Messages []shownMsg `json:"messages"`
	}
	f.json(&queues, "printMsg", "-t", "AdminT")
	n := 0
	for _, q := range queues {
		n += len(q.Messages)
	}
	if len(queues) != 4 || n != 2 {
		t.Errorf("printMsg json: %d queues, %d messages", len(queues), n)
	}
}

func (f *adminFixture) groupCommandsTest(t *testing.T) {
	f.t = t
	out := f.ok("updateSubGroup", "-c", "DefaultCluster", "-g", "AdminG", "-r", "5", "-s", "true")
	f.contains("updateSubGroup", out, "create subscription group to "+f.addr+" success.",
		"SubscriptionGroupConfig [groupName=AdminG, consumeEnable=true,", "retryMaxTimes=5,")
	var g struct {
		Config struct {
			GroupName      string `json:"groupName"`
			RetryMaxTimes  int    `json:"retryMaxTimes"`
			RetryQueueNums int    `json:"retryQueueNums"`
		} `json:"subscriptionGroupConfig"`
	}
	f.json(&g, "updateSubGroup", "-b", f.addr, "-g", "AdminG", "-r", "5")
	if g.Config.GroupName != "AdminG" || g.Config.RetryMaxTimes != 5 || g.Config.RetryQueueNums != 1 {
		t.Errorf("updateSubGroup json: %+v", g)
	}
	list := filepath.Join(f.dir, "groups.json")
	if err := os.WriteFile(list, []byte(`[{"groupName":"ListG1","retryMaxTimes":7},{"groupName":"ListG2"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	f.contains("updateSubGroupList", f.ok("updateSubGroupList", "-c", "DefaultCluster", "-f", list),
		"submit batch of group config to "+f.addr+" success, please check the result later.")
	var gl struct {
		Groups []string `json:"groups"`
	}
	f.json(&gl, "updateSubGroupList", "-b", f.addr, "-f", list)
	if strings.Join(gl.Groups, ",") != "ListG1,ListG2" {
		t.Errorf("updateSubGroupList json: %+v", gl)
	}

	exp := filepath.Join(f.dir, "export")
	f.contains("exportMetadata", f.ok("exportMetadata", "-c", "DefaultCluster", "-f", exp), "export "+filepath.Join(exp, "metadata.json")+" success")
	data, err := os.ReadFile(filepath.Join(exp, "metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Topics map[string]struct {
			ReadQueueNums int `json:"readQueueNums"`
		} `json:"topicConfigTable"`
		Groups map[string]struct {
			RetryMaxTimes int `json:"retryMaxTimes"`
		} `json:"subscriptionGroupTable"`
		ExportTime int64 `json:"exportTime"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Topics["AdminT"].ReadQueueNums != 4 || meta.Topics["ListT1"].ReadQueueNums != 2 || meta.Groups["ListG1"].RetryMaxTimes != 7 ||
		meta.Groups["ListG2"].RetryMaxTimes != 16 || meta.Groups["AdminG"].RetryMaxTimes != 5 || meta.ExportTime == 0 {
		t.Errorf("metadata.json: %+v", meta)
	}
	if _, ok := meta.Topics["TBW102"]; ok {
		t.Errorf("metadata.json has system topics without -s")
	}
	var ex struct {
		File   string `json:"file"`
		Topics int    `json:"topics"`
	}
	f.json(&ex, "exportMetadata", "-b", f.addr, "-f", exp, "-t")
	if ex.File != filepath.Join(exp, "topic.json") || ex.Topics < 2 {
		t.Errorf("exportMetadata -t json: %+v", ex)
	}

	if out, ok := f.refusedOrOK("GET_CONSUME_STATS (208)", "consumerProgress", "-g", "AdminG"); ok {
		f.columns("consumerProgress", out, "#Topic", "#Broker", "Name", "#QID", "#Broker", "Offset", "#Consumer", "Offset", "#Diff", "#Inflight", "#LastTime")
		f.contains("consumerProgress", out, "Consume TPS: ", "Consume Diff Total: ")
		var cp map[string]any
		f.json(&cp, "consumerProgress", "-g", "AdminG")
		if cp["group"] != "AdminG" {
			t.Errorf("consumerProgress json: %v", cp)
		}
	}
	if out, ok := f.refusedOrOK("GET_CONSUME_STATS (208)", "consumerProgress"); ok {
		f.columns("consumerProgress (all)", out, "#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff", "Total")
		f.contains("consumerProgress (all)", out, "AdminG")
	}
	if out, ok := f.refusedOrOK("GET_CONSUMER_CONNECTION_LIST (203)", "consumerConnection", "-g", "AdminG"); ok {
		f.contains("consumerConnection", out, "Below is subscription:", "ConsumeType:", "MessageModel:", "ConsumeFromWhere:")
	} else if out, err := f.run("consumerConnection", "-g", "AdminG", "-o", "json"); err == nil {
		t.Errorf("consumerConnection -o json succeeded where the text form was refused: %s", out)
	}
	if out, ok := f.refusedOrOK("GET_PRODUCER_CONNECTION_LIST (204)", "producerConnection", "-g", "NoProducers", "-t", "AdminT"); ok {
		var pc struct {
			ConnectionSet []any `json:"connectionSet"`
		}
		f.json(&pc, "producerConnection", "-g", "NoProducers", "-t", "AdminT")
		if strings.TrimSpace(out) != "" || pc.ConnectionSet == nil || len(pc.ConnectionSet) != 0 {
			t.Errorf("producerConnection of a group without producers: %q %+v", out, pc)
		}
	}

	// No consumer of AdminG is online: a broker that answers 203 says so
	// (CONSUMER_NOT_ONLINE), one that does not refuses the request.
	f.refusedOrOK("GET_CONSUMER_CONNECTION_LIST (203)", "consumerStatus", "-g", "AdminG")
	f.refusedOrOK("GET_CONSUMER_RUNNING_INFO (307)", "consumerStatus", "-g", "AdminG", "-s", "127.0.0.1@1")
	if out, ok := f.refusedOrOK("INVOKE_BROKER_TO_RESET_OFFSET (222)", "resetOffsetByTime", "-g", "AdminG", "-t", "AdminT", "-s", "0"); ok {
		f.columns("resetOffsetByTime", out, "#brokerName", "#queueId", "#offset")
		f.columns("resetOffsetByTime", out, f.brokerName, "1", "0")
	}
	if out, ok := f.refusedOrOK("INVOKE_BROKER_TO_RESET_OFFSET (222)", "skipAccumulatedMessage", "-g", "AdminG", "-t", "AdminT"); ok {
		// One message was sent to queue 1: its end is offset 1.
		f.columns("skipAccumulatedMessage", out, f.brokerName, "1", "1")
	}
	out = f.ok("cloneGroupOffset", "-s", "AdminG", "-d", "ListG1", "-t", "AdminT")
	f.contains("cloneGroupOffset", out, "clone group offset success. srcGroup[AdminG], destGroup=[ListG1], topic[AdminT]")
	// statsAll sends VIEW_BROKER_STATS_DATA, QUERY_TOPIC_CONSUME_BY_WHO and
	// GET_CONSUME_STATS: a broker that answers all three prints the
	// columns, one that does not refuses one of them.
	if out, ok := f.refusedAnyOrOK([]string{"VIEW_BROKER_STATS_DATA (315)", "QUERY_TOPIC_CONSUME_BY_WHO (300)", "GET_CONSUME_STATS (208)"},
		"statsAll", "-t", "AdminT"); ok {
		f.columns("statsAll", out, "#Topic", "#Consumer", "Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour")
		f.contains("statsAll", out, "AdminT")
	}

	out = f.ok("deleteSubGroup", "-c", "DefaultCluster", "-g", "ListG2")
	f.contains("deleteSubGroup", out, "delete subscription group [ListG2] from broker ["+f.addr+"] in cluster [DefaultCluster] success.",
		"delete topic [%RETRY%ListG2] from cluster [DefaultCluster] success.")
	var dg map[string]any
	f.json(&dg, "deleteSubGroup", "-b", f.addr, "-g", "ListG2", "-r", "true")
	if dg["group"] != "ListG2" || dg["cleanOffset"] != true {
		t.Errorf("deleteSubGroup json: %v", dg)
	}
	f.json(&meta, "exportMetadata", "-b", f.addr, "-f", exp)
	data, _ = os.ReadFile(filepath.Join(exp, "metadata.json"))
	if strings.Contains(string(data), `"ListG2"`) {
		t.Errorf("ListG2 still exported after deleteSubGroup")
	}
}

func (f *adminFixture) brokerCommandsTest(t *testing.T) {
	f.t = t
	// getBrokerEpoch asks every replica of the broker set (from the name
	// server) for GET_BROKER_EPOCH_CACHE: a broker outside controller mode
	// that does not answer it is named with its refusal.
	if out, ok := f.refusedOrOK("GET_BROKER_EPOCH_CACHE (1007)", "getBrokerEpoch", "-b", f.brokerName); ok {
		f.contains("getBrokerEpoch", out, "#brokerName\t"+f.brokerName, "#brokerAddr\t"+f.addr)
	} else {
		f.contains("getBrokerEpoch", out, "to "+f.addr+": the broker answered code")
	}
	if _, err := f.run("getBrokerEpoch", "-b", "no-such-broker"); err == nil || !strings.Contains(err.Error(), "no broker of no-such-broker") {
		t.Errorf("getBrokerEpoch of an unknown broker: %v", err)
	}
	// getSyncStateSet -c reads the cluster's broker names from the name
	// server; a controller that knows none of them lists nothing.
	ctl := startController(t)
	if out := f.ok("getSyncStateSet", "-a", ctl, "-c", "DefaultCluster"); strings.TrimSpace(out) != "" {
		t.Errorf("getSyncStateSet -c of brokers the controller does not know: %q", out)
	}
	out := f.ok("clusterList")
	f.columns("clusterList header", out, "#Cluster", "Name", "#Broker", "Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)",
		"#OutTPS(LOAD)", "#Timer(Progress)", "#PCWait(ms)", "#Hour", "#SPACE", "#ACTIVATED")
	var row []string
	for _, l := range strings.Split(out, "\n") {
		if fs := strings.Fields(l); len(fs) > 4 && fs[0] == "DefaultCluster" {
			row = fs
		}
	}
	if len(row) < 5 || row[1] != f.brokerName || row[2] != "0" || row[3] != f.addr || row[len(row)-1] != "true" {
		t.Errorf("clusterList row %q:\n%s", row, out)
	}
	var cl []struct {
		Cluster    string `json:"cluster"`
		BrokerName string `json:"brokerName"`
		Addr       string `json:"addr"`
		Version    string `json:"version"`
		Activated  bool   `json:"activated"`
	}
	f.json(&cl, "clusterList")
	if len(cl) != 1 || cl[0].Addr != f.addr || cl[0].Version == "" || !cl[0].Activated {
		t.Errorf("clusterList json: %+v", cl)
	}

	out = f.ok("brokerStatus", "-b", f.addr)
	f.columns("brokerStatus", out, "brokerActive", ":", "true")
	var st map[string]string
	f.json(&st, "brokerStatus", "-b", f.addr)
	if st["brokerVersionDesc"] == "" {
		t.Errorf("brokerStatus json: %v", st)
	}
	f.contains("brokerStatus -c", f.ok("brokerStatus", "-c", "DefaultCluster"), f.addr)

	out = f.ok("updateBrokerConfig", "-b", f.addr, "-k", "fileReservedTime", "-v", "47")
	f.contains("updateBrokerConfig", out, "update broker config success, "+f.addr)
	out = f.ok("getBrokerConfig", "-b", f.addr)
	f.contains("getBrokerConfig", out, "============"+f.addr+"============")
	f.columns("getBrokerConfig", out, "fileReservedTime", "=", "47")
	var bc map[string]map[string]string
	f.json(&bc, "getBrokerConfig", "-c", "DefaultCluster")
	if bc[f.addr]["fileReservedTime"] != "47" {
		t.Errorf("getBrokerConfig json: %v", bc[f.addr]["fileReservedTime"])
	}
	var ub map[string]any
	f.json(&ub, "updateBrokerConfig", "-c", "DefaultCluster", "-k", "fileReservedTime", "-v", "72")
	if ub["key"] != "fileReservedTime" {
		t.Errorf("updateBrokerConfig json: %v", ub)
	}
	if _, err := f.run("updateBrokerConfig", "-b", f.addr, "-k", "storePathRootDir", "-v", "/x"); err == nil ||
		!strings.Contains(err.Error(), "UPDATE_BROKER_CONFIG (25)") || !strings.Contains(err.Error(), "the broker answered code") {
		t.Errorf("updateBrokerConfig of a key not live: %v", err)
	}
}
