package broker

import (
	"bytes"
	"compress/zlib"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/schedule"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

func TestSendThenPull(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("T1", 4)
	resp := e.mustSend("T1", 2, "TagA", "hello")
	for _, k := range []string{"msgId", "queueId", "queueOffset", "transactionId", "MSG_REGION", "TRACE_ON"} {
		if _, ok := resp.ExtFields[k]; !ok {
			t.Errorf("send answer lacks %s: %v", k, resp.ExtFields)
		}
	}
	if q := extInt(t, resp, "queueId"); q != 2 {
		t.Errorf("queueId = %d, want 2", q)
	}
	if off := extInt(t, resp, "queueOffset"); off != 0 {
		t.Errorf("queueOffset = %d, want 0", off)
	}
	addr, phy, err := message.ParseOffsetMsgID(resp.ExtFields["msgId"])
	if err != nil || addr.String() != e.b.Addr() {
		t.Fatalf("msgId %q: addr %v err %v, want %s", resp.ExtFields["msgId"], addr, err, e.b.Addr())
	}
	e.mustSend("T1", 2, "TagB", "world")
	e.waitDispatched("T1", 2, 2)

	pull := e.invoke(pullReq("g1", "T1", 2, 0, pullFlagSubscription, 0, "*"))
	if pull.Code != remoting.Success {
		t.Fatalf("pull: code %d remark %q", pull.Code, pull.Remark)
	}
	recs := decodeRecords(t, pull.Body)
	if len(recs) != 2 || string(recs[0].Body) != "hello" || string(recs[1].Body) != "world" {
		t.Fatalf("pulled %d records", len(recs))
	}
	if recs[0].PhysicalOffset != phy {
		t.Errorf("record offset %d, msgId says %d", recs[0].PhysicalOffset, phy)
	}
	p := recs[0].Properties
	if p[message.PropertyCluster] != "DefaultCluster" || p[message.PropertyUniqClientMessageIDKeyIdx] == "" {
		t.Errorf("stored properties %v: want CLUSTER and UNIQ_KEY added", p)
	}
	if resp.ExtFields["transactionId"] != p[message.PropertyUniqClientMessageIDKeyIdx] {
		t.Errorf("transactionId %q != UNIQ_KEY %q", resp.ExtFields["transactionId"], p[message.PropertyUniqClientMessageIDKeyIdx])
	}
	if n := extInt(t, pull, "nextBeginOffset"); n != 2 {
		t.Errorf("nextBeginOffset = %d, want 2", n)
	}
	if n := extInt(t, pull, "maxOffset"); n != 2 {
		t.Errorf("maxOffset = %d, want 2", n)
	}
	extInt(t, pull, "minOffset")
	extInt(t, pull, "suggestWhichBrokerId")
}

func TestSendV2ShortKeys(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("T2", 1)
	req := remoting.NewRequest(remoting.SendMessageV2, map[string]string{
		"a": "pg", "b": "T2", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1700000000000", "h": "7",
		"i": message.EncodeProperties(map[string]string{"TAGS": "x", "UNIQ_KEY": "ABC"}), "j": "0", "k": "false", "m": "false",
	}, []byte("v2"))
	resp := e.invoke(req)
	if resp.Code != remoting.Success {
		t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
	}
	if resp.ExtFields["transactionId"] != "ABC" {
		t.Errorf("transactionId = %q, want the client's UNIQ_KEY", resp.ExtFields["transactionId"])
	}
	e.waitDispatched("T2", 0, 1)
	pull := e.invoke(pullReq("g", "T2", 0, 0, pullFlagSubscription, 0, "*"))
	recs := decodeRecords(t, pull.Body)
	if len(recs) != 1 || recs[0].Flag != 7 || recs[0].BornTimestamp != 1700000000000 {
		t.Fatalf("record: %+v", recs)
	}
}

func zlibBytes(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	w, _ := zlib.NewWriterLevel(&buf, 5)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func TestSendValidation(t *testing.T) {
	e := startBroker(t, func(c *Config, s *store.Config) { s.MaxMessageSize = 64 << 10 })
	e.createTopic("T3", 2)
	big := bytes.Repeat([]byte("a"), 100<<10)
	compressed := sendV1("T3", 0, nil, zlibBytes(t, big))
	compressed.ExtFields["sysFlag"] = "1"
	notZlib := sendV1("T3", 0, nil, []byte("not zlib"))
	notZlib.ExtFields["sysFlag"] = "1"
	longProps := map[string]string{"K": strings.Repeat("v", 40000)}
	missing := sendV1("T3", 0, nil, []byte("x"))
	delete(missing.ExtFields, "topic")
	badNum := sendV1("T3", 0, nil, []byte("x"))
	badNum.ExtFields["queueId"] = "one"
	cases := []struct {
		name   string
		req    *remoting.Command
		code   int32
		remark string
	}{
		{"illegal chars", sendV1("bad topic!", 0, nil, []byte("x")), remoting.InvalidParameter, "illegal characters"},
		{"too long", sendV1(strings.Repeat("t", 128), 0, nil, []byte("x")), remoting.InvalidParameter, "longer than"},
		{"schedule topic", sendV1("SCHEDULE_TOPIC_XXXX", 0, nil, []byte("x")), remoting.NoPermission, "forbidden"},
		{"half topic", sendV1("RMQ_SYS_TRANS_HALF_TOPIC", 0, nil, []byte("x")), remoting.NoPermission, "forbidden"},
		{"queue id", sendV1("T3", 2, nil, []byte("x")), remoting.InvalidParameter, "queueId[2] is illegal"},
		{"body too big", sendV1("T3", 0, nil, big), remoting.MessageIllegal, "body size exceeded"},
		{"inflated too big", compressed, remoting.MessageIllegal, "inflates to more than"},
		{"bad zlib", notZlib, remoting.MessageIllegal, "zlib"},
		{"properties too long", sendV1("T3", 0, longProps, []byte("x")), remoting.MessageIllegal, "properties"},
		{"missing topic", missing, remoting.InvalidParameter, "missing ext field topic"},
		{"bad number", badNum, remoting.InvalidParameter, `queueId="one"`},
		{"timer out of range", sendV1("T3", 0, map[string]string{"TIMER_DELAY_SEC": "400000"}, []byte("x")), remoting.MessageIllegal, "max delay"},
	}
	for _, c := range cases {
		resp := e.invoke(c.req)
		if resp.Code != c.code || !strings.Contains(resp.Remark, c.remark) {
			t.Errorf("%s: code %d remark %q, want code %d remark containing %q", c.name, resp.Code, resp.Remark, c.code, c.remark)
		}
	}
	// A compressed body within the limit is stored as sent.
	ok := sendV1("T3", 0, nil, zlibBytes(t, bytes.Repeat([]byte("b"), 10<<10)))
	ok.ExtFields["sysFlag"] = "1"
	if resp := e.invoke(ok); resp.Code != remoting.Success {
		t.Errorf("compressed 10 KiB: code %d remark %q", resp.Code, resp.Remark)
	}
}

func TestSendAutoCreateTopic(t *testing.T) {
	e := startBroker(t, nil)
	e.mustSend("Fresh", 1, "", "x")
	tc := e.b.topics.Find("Fresh")
	if tc == nil || tc.ReadQueueNums != 4 || tc.WriteQueueNums != 4 || tc.Perm != 6 {
		t.Fatalf("auto-created topic: %+v, want 4/4 perm 6", tc)
	}
	waitFor(t, "registration with the new topic", func() bool {
		r := e.ns.lastRegistration()
		return r != nil && bytes.Contains(r.Body, []byte(`"Fresh"`))
	})
}

func TestSendAutoCreateDisabled(t *testing.T) {
	dir := t.TempDir()
	startBrokerIn(t, dir, nil).stop() // leaves TBW102 in topics.json
	e := startBrokerIn(t, dir, func(c *Config, _ *store.Config) { c.AutoCreateTopicEnable = false })
	if e.b.topics.Find("TBW102") != nil {
		t.Errorf("TBW102 exists with autoCreateTopicEnable=false")
	}
	resp := e.invoke(sendV1("Nope", 0, nil, []byte("x")))
	if resp.Code != remoting.TopicNotExist {
		t.Fatalf("code %d remark %q, want 17", resp.Code, resp.Remark)
	}
	// Retry topics are still created, with one queue.
	resp = e.invoke(sendV1("%RETRY%g1", 0, nil, []byte("x")))
	if resp.Code != remoting.Success {
		t.Fatalf("retry send: code %d remark %q", resp.Code, resp.Remark)
	}
	if tc := e.b.topics.Find("%RETRY%g1"); tc == nil || tc.WriteQueueNums != 1 {
		t.Fatalf("retry topic %+v", tc)
	}
}

func TestSendBatch(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("TB", 2)
	body := message.EncodeBatchBody(nil, []message.BatchMember{
		{Body: []byte("m1"), PropertiesString: message.EncodeProperties(map[string]string{"TAGS": "a"})},
		{Body: []byte("m2"), PropertiesString: message.EncodeProperties(map[string]string{"TAGS": "b"})},
		{Body: []byte("m3")},
	})
	req := remoting.NewRequest(remoting.SendBatchMessage, map[string]string{
		"a": "pg", "b": "TB", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1", "h": "0", "m": "true",
	}, body)
	resp := e.invoke(req)
	if resp.Code != remoting.Success {
		t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
	}
	ids := strings.Split(resp.ExtFields["msgId"], ",")
	if len(ids) != 3 {
		t.Fatalf("msgId %q: want 3 ids", resp.ExtFields["msgId"])
	}
	e.waitDispatched("TB", 1, 3)
	pull := e.invoke(pullReq("g", "TB", 1, 0, pullFlagSubscription, 0, "*"))
	recs := decodeRecords(t, pull.Body)
	if len(recs) != 3 || string(recs[2].Body) != "m3" || recs[1].QueueOffset != 1 {
		t.Fatalf("records %d", len(recs))
	}
	for i, r := range recs {
		if r.MsgID() != ids[i] {
			t.Errorf("record %d id %s, answer says %s", i, r.MsgID(), ids[i])
		}
	}
	// A batch to a retry topic is refused.
	req = remoting.NewRequest(remoting.SendBatchMessage, map[string]string{
		"a": "pg", "b": "%RETRY%g", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0", "m": "true",
	}, body)
	if resp := e.invoke(req); resp.Code != remoting.MessageIllegal {
		t.Errorf("batch to retry topic: code %d remark %q", resp.Code, resp.Remark)
	}
	req = remoting.NewRequest(remoting.SendBatchMessage, map[string]string{
		"a": "pg", "b": "TB", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0", "m": "true",
	}, []byte{0, 0, 0, 99})
	if resp := e.invoke(req); resp.Code != remoting.MessageIllegal {
		t.Errorf("malformed batch: code %d remark %q", resp.Code, resp.Remark)
	}
}

func TestSendDelayedGoesToScheduleTopic(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("TD", 2)
	resp := e.invoke(sendV1("TD", 1, map[string]string{"DELAY": "3"}, []byte("later")))
	if resp.Code != remoting.Success {
		t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
	}
	if q := extInt(t, resp, "queueId"); q != 1 {
		t.Errorf("queueId %d, want the requested 1", q)
	}
	e.waitDispatched("SCHEDULE_TOPIC_XXXX", 2, 1)
	if got := e.b.store.MaxOffsetInQueue("TD", 1); got != 0 {
		t.Fatalf("real queue has %d messages before delivery", got)
	}
}

func TestSendTransactionHalf(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("TX", 2)
	req := sendV1("TX", 1, map[string]string{"TRAN_MSG": "true", "PGROUP": "pg", "UNIQ_KEY": "U1"}, []byte("half"))
	req.ExtFields["sysFlag"] = "4"
	resp := e.invoke(req)
	if resp.Code != remoting.Success || resp.ExtFields["transactionId"] != "U1" {
		t.Fatalf("code %d remark %q ext %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	e.waitDispatched("RMQ_SYS_TRANS_HALF_TOPIC", 0, 1)
	_, phy, err := message.ParseOffsetMsgID(resp.ExtFields["msgId"])
	if err != nil {
		t.Fatal(err)
	}
	end := goRequest(remoting.EndTransaction, map[string]string{
		"producerGroup": "pg", "tranStateTableOffset": resp.ExtFields["queueOffset"],
		"commitLogOffset": itoa64(phy), "commitOrRollback": "8", "fromTransactionCheck": "false", "msgId": "U1",
	}, nil)
	if r := e.invoke(end); r.Code != remoting.Success {
		t.Fatalf("commit: code %d remark %q", r.Code, r.Remark)
	}
	e.waitDispatched("TX", 1, 1)
	pull := e.invoke(pullReq("g", "TX", 1, 0, pullFlagSubscription, 0, "*"))
	recs := decodeRecords(t, pull.Body)
	if len(recs) != 1 || string(recs[0].Body) != "half" || recs[0].PreparedTransactionOffset != phy ||
		message.TransactionValue(recs[0].SysFlag) != message.TransactionCommitType {
		t.Fatalf("committed records: %+v", recs)
	}
	wrong := goRequest(remoting.EndTransaction, map[string]string{
		"producerGroup": "other", "tranStateTableOffset": "0", "commitLogOffset": itoa64(phy), "commitOrRollback": "12",
	}, nil)
	if r := e.invoke(wrong); r.Code != remoting.SystemError || !strings.Contains(r.Remark, "producer group wrong") {
		t.Errorf("wrong group: code %d remark %q", r.Code, r.Remark)
	}
}

func TestTransactionCheckBack(t *testing.T) {
	e := startBroker(t, func(c *Config, _ *store.Config) {
		c.TransactionCheckInterval = 20
		c.TransactionTimeOut = 0
	})
	e.createTopic("TC", 1)
	checks := make(chan *remoting.Command, 4)
	cl := transport.NewClient(transport.ClientConfig{Handler: func(c *transport.Conn, req *remoting.Command) *remoting.Command {
		if req.Code == remoting.CheckTransactionState {
			checks <- req
		}
		return nil
	}})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hb := []byte(`{"clientID":"tx@1","producerDataSet":[{"groupName":"txg"}],"consumerDataSet":[]}`)
	if r, err := cl.Invoke(ctx, e.b.Addr(), goRequest(remoting.HeartBeat, nil, hb)); err != nil || r.Code != 0 {
		t.Fatalf("heartbeat: %v", err)
	}
	half := sendV1("TC", 0, map[string]string{"TRAN_MSG": "true", "PGROUP": "txg", "UNIQ_KEY": "UK"}, []byte("pending"))
	half.ExtFields["sysFlag"] = "4"
	if r, err := cl.Invoke(ctx, e.b.Addr(), half); err != nil || r.Code != 0 {
		t.Fatalf("half send: %v %+v", err, r)
	}
	var chk *remoting.Command
	select {
	case chk = <-checks:
	case <-ctx.Done():
		t.Fatal("no CHECK_TRANSACTION_STATE")
	}
	if chk.Ext("msgId") != "UK" || !chk.IsOneway() {
		t.Errorf("check ext %v flag %d", chk.ExtFields, chk.Flag)
	}
	recs := decodeRecords(t, chk.Body)
	if len(recs) != 1 || recs[0].Topic != "TC" || recs[0].Properties["PGROUP"] != "txg" {
		t.Fatalf("check body %+v", recs)
	}
	end := goRequest(remoting.EndTransaction, map[string]string{
		"producerGroup": "txg", "tranStateTableOffset": chk.Ext("tranStateTableOffset"),
		"commitLogOffset": chk.Ext("commitLogOffset"), "commitOrRollback": "8", "fromTransactionCheck": "true", "msgId": "UK",
	}, nil)
	if r, err := cl.Invoke(ctx, e.b.Addr(), end); err != nil || r.Code != 0 {
		t.Fatalf("commit after check: %v %+v", err, r)
	}
	e.waitDispatched("TC", 0, 1)
	// The commit used the record the check had just read.
	if s := e.b.TransactionStats(); s.EndReadsSaved != 1 || s.PendingHalves != 0 {
		t.Fatalf("after the commit: %+v", s)
	}
}

// Sends whose properties take the append path and sends that fall back to
// the map store the same properties.
func TestSendPropertiesStored(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("P", 1)
	for i, tc := range []struct {
		props string
		want  map[string]string
		uniq  string // "" = the broker adds one
	}{
		{"TAGS\x01a\x02KEYS\x01k1\x02", map[string]string{"TAGS": "a", "KEYS": "k1"}, ""},
		{"TAGS\x01b\x02UNIQ_KEY\x01MINE\x02", map[string]string{"TAGS": "b"}, "MINE"},
		{"TAGS\x01c\x02CLUSTER\x01theirs\x02", map[string]string{"TAGS": "c"}, ""},
		{"TAGS\x01d", map[string]string{"TAGS": "d"}, ""},
		{"\x02TAGS\x01e\x02__DELAY_SRC\x011:9\x02__TIMER_SRC\x015\x02", map[string]string{"TAGS": "e"}, ""},
		{"", map[string]string{}, ""},
	} {
		req := sendV1("P", 0, nil, []byte("x"))
		req.ExtFields["properties"] = tc.props
		resp := e.invoke(req)
		if resp.Code != remoting.Success {
			t.Fatalf("%q: code %d %q", tc.props, resp.Code, resp.Remark)
		}
		e.waitDispatched("P", 0, int64(i+1))
		pull := e.invoke(pullReq("g", "P", 0, int64(i), pullFlagSubscription, 0, "*"))
		recs := decodeRecords(t, pull.Body)
		if len(recs) != 1 {
			t.Fatalf("%q: %d records", tc.props, len(recs))
		}
		got := recs[0].Properties
		uniq := got[message.PropertyUniqClientMessageIDKeyIdx]
		if (tc.uniq != "" && uniq != tc.uniq) || len(uniq) == 0 || resp.Ext("transactionId") != uniq {
			t.Errorf("%q: UNIQ_KEY %q, transactionId %q", tc.props, uniq, resp.Ext("transactionId"))
		}
		if got[message.PropertyCluster] != "DefaultCluster" {
			t.Errorf("%q: CLUSTER %q", tc.props, got[message.PropertyCluster])
		}
		for _, k := range []string{schedule.PropertyDelaySource, "__TIMER_SRC"} {
			if _, ok := got[k]; ok {
				t.Errorf("%q: marker %s stored", tc.props, k)
			}
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%q: %s=%q, want %q", tc.props, k, got[k], v)
			}
		}
		// UNIQ_KEY and the broker's CLUSTER, MSG_REGION and TRACE_ON.
		if len(got) != len(tc.want)+4 {
			t.Errorf("%q: stored %v", tc.props, got)
		}
		if recs[0].PropertiesLen > 0 && string(pull.Body[recs[0].PropertiesOffset+recs[0].PropertiesLen-1]) != "\x02" {
			t.Errorf("%q: stored string does not end with the separator", tc.props)
		}
	}
}
