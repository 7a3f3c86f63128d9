package broker

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// brokerPropsEnv is a broker whose regionId and traceOn differ from the
// defaults, so a stored value can only have come from the configuration.
func brokerPropsEnv(t *testing.T) *testEnv {
	return startBroker(t, func(c *Config, _ *store.Config) {
		c.RegionID = "eu-test-1"
		c.TraceOn = false
	})
}

// storedRecord is a record read from the store with its property string
// as stored.
type storedRecord struct {
	*message.Ext
	props string
}

// storedRecords reads the records of a queue from offset 0.
func (e *testEnv) storedRecords(topic string, qid int32) []storedRecord {
	e.t.Helper()
	res := e.b.store.GetMessage("test", topic, qid, 0, 32, math.MaxInt32, nil)
	defer res.Release()
	var out []storedRecord
	for _, buf := range res.Buffers {
		x, err := message.DecodeRecord(buf)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, storedRecord{Ext: x, props: string(buf[x.PropertiesOffset : x.PropertiesOffset+x.PropertiesLen])})
	}
	return out
}

// wantBrokerProps checks the properties the broker writes into every sent
// message, in the decoded map and as the last occurrence in the string.
func wantBrokerProps(t *testing.T, what string, x storedRecord) {
	t.Helper()
	want := map[string]string{
		message.PropertyCluster:     "DefaultCluster",
		message.PropertyMsgRegion:   "eu-test-1",
		message.PropertyTraceSwitch: "false",
	}
	for k, v := range want {
		if got := x.Properties[k]; got != v {
			t.Errorf("%s: stored %s = %q, want %q (properties %q)", what, k, got, v, x.props)
		}
		if got, _ := message.LookupProperty(x.props, k); got != v {
			t.Errorf("%s: last %s in the stored string = %q, want %q", what, k, got, v)
		}
	}
}

func TestSendStoresRegionAndTraceSwitch(t *testing.T) {
	e := brokerPropsEnv(t)
	e.createTopic("BP", 1)
	// The plain path (no map built) and the map path (a client's own
	// MSG_REGION and TRACE_ON, replaced by the broker's as in RocketMQ).
	e.mustSend("BP", 0, "a", "plain")
	client := sendV1("BP", 0, map[string]string{
		message.PropertyTags: "b", message.PropertyMsgRegion: "client-region", message.PropertyTraceSwitch: "true",
	}, []byte("client-set"))
	if r := e.invoke(client); r.Code != remoting.Success {
		t.Fatalf("send with client properties: code %d remark %q", r.Code, r.Remark)
	}
	e.waitDispatched("BP", 0, 2)
	recs := e.storedRecords("BP", 0)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	for _, r := range recs {
		wantBrokerProps(t, string(r.Body), r)
	}
	if recs[0].Properties[message.PropertyTags] != "a" || recs[1].Properties[message.PropertyTags] != "b" {
		t.Errorf("client properties lost: %v / %v", recs[0].Properties, recs[1].Properties)
	}
}

func TestSendBatchStoresRegionAndTraceSwitchPerMember(t *testing.T) {
	e := brokerPropsEnv(t)
	e.createTopic("BPB", 1)
	body := message.EncodeBatchBody(nil, []message.BatchMember{
		{Body: []byte("m1"), PropertiesString: message.EncodeProperties(map[string]string{"TAGS": "a", "KEYS": "k1"})},
		// A member's own value, and a string without its final 0x02.
		{Body: []byte("m2"), PropertiesString: "TAGS\x01b\x02MSG_REGION\x01client-region\x02TRACE_ON\x01true"},
		{Body: []byte("m3")},
	})
	req := remoting.NewRequest(remoting.SendBatchMessage, map[string]string{
		"a": "pg", "b": "BPB", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0", "m": "true",
	}, body)
	if r := e.invoke(req); r.Code != remoting.Success {
		t.Fatalf("batch: code %d remark %q", r.Code, r.Remark)
	}
	e.waitDispatched("BPB", 0, 3)
	recs := e.storedRecords("BPB", 0)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for _, r := range recs {
		wantBrokerProps(t, string(r.Body), r)
	}
	if p := recs[0].Properties; p["TAGS"] != "a" || p["KEYS"] != "k1" {
		t.Errorf("member 1 properties %v", p)
	}
	if p := recs[1].Properties; p["TAGS"] != "b" {
		t.Errorf("member 2 properties %v", p)
	}
}

func TestSendReplyCarriesRegionAndTraceSwitch(t *testing.T) {
	e := brokerPropsEnv(t)
	pushed := make(chan *remoting.Command, 1)
	requester := transport.NewClient(transport.ClientConfig{Handler: func(c *transport.Conn, req *remoting.Command) *remoting.Command {
		if req.Code != remoting.PushReplyMessageToClient {
			return nil
		}
		pushed <- req
		return remoting.NewResponse(req, remoting.Success, "")
	}})
	defer requester.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hb := []byte(`{"clientID":"req@bp","producerDataSet":[{"groupName":"rq"}],"consumerDataSet":[]}`)
	if r, err := requester.Invoke(ctx, e.b.Addr(), goRequest(remoting.HeartBeat, nil, hb)); err != nil || r.Code != 0 {
		t.Fatalf("heartbeat: %v", err)
	}
	reply := sendV1("DefaultCluster_REPLY_TOPIC", 0, map[string]string{
		message.PropertyReplyToClient: "req@bp", message.PropertyCorrelationID: "corr-bp",
		message.PropertyMessageType: "reply", message.PropertyMsgRegion: "client-region",
	}, []byte("answer"))
	reply.Code = remoting.SendReplyMessage
	if r := e.invoke(reply); r.Code != remoting.Success {
		t.Fatalf("reply: code %d remark %q", r.Code, r.Remark)
	}
	p := <-pushed
	props := message.DecodeProperties(p.Ext("properties"))
	if props[message.PropertyMsgRegion] != "eu-test-1" || props[message.PropertyTraceSwitch] != "false" {
		t.Errorf("pushed reply properties %v: want MSG_REGION=eu-test-1 TRACE_ON=false", props)
	}
	e.waitDispatched("DefaultCluster_REPLY_TOPIC", 0, 1)
	recs := e.storedRecords("DefaultCluster_REPLY_TOPIC", 0)
	if len(recs) != 1 {
		t.Fatalf("%d stored replies, want 1", len(recs))
	}
	wantBrokerProps(t, "stored reply", recs[0])
}
