package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

type javaResetOffsetBody struct {
	OffsetTable map[string]int64 `json:"offsetTable"`
}

type javaGetConsumerStatusBody struct {
	MessageQueueTable map[string]int64            `json:"messageQueueTable"`
	ConsumerTable     map[string]map[string]int64 `json:"consumerTable"`
}

type javaConsumeMessageDirectlyResult struct {
	Order          bool   `json:"order"`
	AutoCommit     bool   `json:"autoCommit"`
	ConsumeResult  string `json:"consumeResult"`
	Remark         string `json:"remark"`
	SpentTimeMills int64  `json:"spentTimeMills"`
}

// fakeConsumer is a consumer client on its own connection that answers
// the requests the broker relays to it.
type fakeConsumer struct {
	client *transport.Client
	got    chan *remoting.Command
	// silent makes it never answer GET_CONSUMER_RUNNING_INFO.
	silent chan struct{}
}

func startFakeConsumer(t *testing.T, e *testEnv, clientID, group, topic string) *fakeConsumer {
	t.Helper()
	return startFakeConsumerSilent(t, e, clientID, group, topic, nil)
}

func startFakeConsumerSilent(t *testing.T, e *testEnv, clientID, group, topic string, silent chan struct{}) *fakeConsumer {
	t.Helper()
	fc := &fakeConsumer{got: make(chan *remoting.Command, 16), silent: silent}
	fc.client = transport.NewClient(transport.ClientConfig{DialTimeout: 3 * time.Second, Handler: fc.handle})
	t.Cleanup(func() { fc.client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := fc.client.Invoke(ctx, e.b.Addr(), goRequest(remoting.HeartBeat, nil, goHeartbeat(clientID, group, topic, "*"))); err != nil || r.Code != 0 {
		t.Fatalf("heartbeat: %v %v", r, err)
	}
	return fc
}

func (fc *fakeConsumer) handle(c *transport.Conn, req *remoting.Command) *remoting.Command {
	fc.got <- req
	resp := remoting.NewResponse(req, remoting.Success, "")
	switch req.Code {
	case remoting.GetConsumerStatusFromClient:
		resp.Body = []byte(`{"messageQueueTable":{{"brokerName":"broker-a","queueId":0,"topic":"RL"}:7},"consumerTable":{}}`)
	case remoting.GetConsumerRunningInfo:
		if fc.silent != nil {
			<-fc.silent
		}
		resp.Body = []byte(`{"jstack":"","mqTable":{},"properties":{"PROP_CLIENT_VERSION":"V5_3_0"},"statusTable":{},"subscriptionSet":[]}`)
	case remoting.ConsumeMessageDirectly:
		resp.Body = []byte(`{"autoCommit":true,"consumeResult":"CR_SUCCESS","order":false,"remark":"` + req.ExtFields["brokerName"] + `","spentTimeMills":1}`)
	}
	return resp
}

func (fc *fakeConsumer) next(t *testing.T, code int32) *remoting.Command {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case r := <-fc.got:
			if r.Code == code {
				return r
			}
		case <-timeout:
			t.Fatalf("the client got no %s", remoting.RequestName(code))
			return nil
		}
	}
}

// An online group gets RESET_CONSUMER_CLIENT_OFFSET pushed oneway with
// the offsets of the timestamp, and the offsets are committed.
func TestResetOffsetOnline(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("RL", 1)
	for i := 0; i < 4; i++ {
		e.mustSend("RL", 0, "", "m")
	}
	e.waitDispatched("RL", 0, 4)
	fc := startFakeConsumer(t, e, "c1", "rlg", "RL")
	e.commit("rlg", "RL", 0, 3)
	r := e.invoke(goRequest(remoting.InvokeBrokerToResetOffset, map[string]string{"topic": "RL", "group": "rlg",
		"timestamp": "0", "isForce": "true"}, nil))
	if r.Code != remoting.Success {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	var answer javaResetOffsetBody
	decodeJava(t, r.Body, &answer)
	push := fc.next(t, remoting.ResetConsumerClientOffset)
	if push.Flag&remoting.FlagOneway == 0 || push.ExtFields["topic"] != "RL" || push.ExtFields["group"] != "rlg" || push.ExtFields["timestamp"] != "0" {
		t.Errorf("push: flag %d ext %v", push.Flag, push.ExtFields)
	}
	var pushed javaResetOffsetBody
	decodeJava(t, push.Body, &pushed)
	for _, tab := range []map[string]int64{answer.OffsetTable, pushed.OffsetTable} {
		if len(tab) != 1 {
			t.Fatalf("offset table %v", tab)
		}
		for k, off := range tab {
			// A time before the first message lands on the first offset.
			if mq := mqKey(t, k); mq.Topic != "RL" || mq.QueueID != 0 || off != 0 {
				t.Errorf("%v -> %d, want 0", mq, off)
			}
		}
	}
	if got := e.b.offsets.Query("rlg", "RL", 0); got != 0 {
		t.Errorf("committed offset %d, want 0", got)
	}
}

// A group with no client online has its offsets committed; a queue id
// with an offset resets that queue alone.
func TestResetOffsetOffline(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("RO", 2)
	for i := 0; i < 4; i++ {
		e.mustSend("RO", 0, "", "m")
		e.mustSend("RO", 1, "", "m")
	}
	e.waitDispatched("RO", 0, 4)
	e.waitDispatched("RO", 1, 4)
	e.commit("rog", "RO", 0, 1)
	e.commit("rog", "RO", 1, 3)
	reset := func(ext map[string]string) map[int]int64 {
		t.Helper()
		ext["topic"], ext["group"] = "RO", "rog"
		r := e.invoke(goRequest(remoting.InvokeBrokerToResetOffset, ext, nil))
		if r.Code != remoting.Success {
			t.Fatalf("%v: code %d remark %q", ext, r.Code, r.Remark)
		}
		var b javaResetOffsetBody
		decodeJava(t, r.Body, &b)
		out := map[int]int64{}
		for k, off := range b.OffsetTable {
			out[mqKey(t, k).QueueID] = off
		}
		return out
	}
	committed := func() [2]int64 {
		return [2]int64{e.b.offsets.Query("rog", "RO", 0), e.b.offsets.Query("rog", "RO", 1)}
	}
	// -1 is the queues' end.
	if got := reset(map[string]string{"timestamp": "-1", "isForce": "false"}); got[0] != 4 || got[1] != 4 {
		t.Errorf("reset to the end: %v", got)
	}
	if c := committed(); c != [2]int64{4, 4} {
		t.Errorf("committed %v, want [4 4]", c)
	}
	// A time before the first message: the first offset.
	if got := reset(map[string]string{"timestamp": "1", "isForce": "true"}); got[0] != 0 || got[1] != 0 {
		t.Errorf("reset to before the first message: %v", got)
	}
	if c := committed(); c != [2]int64{0, 0} {
		t.Errorf("committed %v, want [0 0]", c)
	}
	if got := reset(map[string]string{"timestamp": "0", "isForce": "true", "queueId": "1", "offset": "2"}); len(got) != 1 || got[1] != 2 {
		t.Errorf("reset of queue 1 to 2: %v", got)
	}
	if c := committed(); c != [2]int64{0, 2} {
		t.Errorf("committed %v, want [0 2]", c)
	}
	if r := e.invoke(goRequest(remoting.InvokeBrokerToResetOffset, map[string]string{"topic": "RO", "group": "rog",
		"timestamp": "0", "isForce": "true", "queueId": "1", "offset": "9"}, nil)); r.Code != remoting.SystemError || r.Remark != "Target offset 9 not in consume queue range [0-4]" {
		t.Errorf("offset out of range: code %d remark %q", r.Code, r.Remark)
	}
	if r := e.invoke(goRequest(remoting.InvokeBrokerToResetOffset, map[string]string{"topic": "RO", "group": "nobody",
		"timestamp": "0", "isForce": "true"}, nil)); r.Code != remoting.SubscriptionGroupNotExist || r.Remark != "Group nobody does not exist" {
		t.Errorf("unknown group: code %d remark %q", r.Code, r.Remark)
	}
	if r := e.invoke(goRequest(remoting.InvokeBrokerToResetOffset, map[string]string{"topic": "Nope", "group": "rog",
		"timestamp": "0", "isForce": "true"}, nil)); r.Code != remoting.TopicNotExist || r.Remark != "Topic Nope does not exist" {
		t.Errorf("unknown topic: code %d remark %q", r.Code, r.Remark)
	}
	wantBadHeader(t, e, remoting.InvokeBrokerToResetOffset, map[string]string{"topic": "RO", "group": "rog", "timestamp": "0"}, "isForce")
	wantBadHeader(t, e, remoting.InvokeBrokerToResetOffset, map[string]string{"topic": "RO", "group": "rog", "isForce": "true"}, "timestamp")
}

func TestGetConsumerStatus(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("RL", 1)
	startFakeConsumer(t, e, "c1", "stg", "RL")
	r := e.invoke(goRequest(remoting.InvokeBrokerToGetConsumerStatus, map[string]string{"topic": "RL", "group": "stg"}, nil))
	if r.Code != remoting.Success {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	var b javaGetConsumerStatusBody
	decodeJava(t, r.Body, &b)
	tab, ok := b.ConsumerTable["c1"]
	if !ok || len(tab) != 1 {
		t.Fatalf("%s", r.Body)
	}
	for k, off := range tab {
		if mq := mqKey(t, k); mq.Topic != "RL" || off != 7 {
			t.Errorf("%v -> %d", mq, off)
		}
	}
	if r := e.invoke(goRequest(remoting.InvokeBrokerToGetConsumerStatus, map[string]string{"topic": "RL", "group": "none"}, nil)); r.Code != remoting.SystemError || r.Remark != "No Any Consumer online in the consumer group: [none]" {
		t.Errorf("offline group: code %d remark %q", r.Code, r.Remark)
	}
	wantBadHeader(t, e, remoting.InvokeBrokerToGetConsumerStatus, map[string]string{"topic": "RL"}, "group")
}

func TestConsumerRunningInfoAndConsumeDirectly(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("RI", 1)
	fc := startFakeConsumer(t, e, "c1", "rig", "RI")
	r := e.invoke(goRequest(remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "rig", "clientId": "c1", "jstackEnable": "false"}, nil))
	if r.Code != remoting.Success {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	var info adminbody.ConsumerRunningInfo
	if err := adminbody.Unmarshal(r.Body, &info); err != nil || info.Properties["PROP_CLIENT_VERSION"] != "V5_3_0" {
		t.Errorf("running info %s: %v", r.Body, err)
	}
	if got := fc.next(t, remoting.GetConsumerRunningInfo); got.ExtFields["jstackEnable"] != "false" {
		t.Errorf("relayed fields %v", got.ExtFields)
	}

	sent := e.mustSend("RI", 0, "", "direct")
	msgID := sent.ExtFields["msgId"]
	r = e.invoke(goRequest(remoting.ConsumeMessageDirectly, map[string]string{"consumerGroup": "rig", "clientId": "c1", "msgId": msgID, "topic": "RI"}, nil))
	if r.Code != remoting.Success {
		t.Fatalf("consume directly: code %d remark %q", r.Code, r.Remark)
	}
	var res javaConsumeMessageDirectlyResult
	decodeJava(t, r.Body, &res)
	if res.ConsumeResult != "CR_SUCCESS" || res.Remark != "broker-a" {
		t.Errorf("%+v", res)
	}
	got := fc.next(t, remoting.ConsumeMessageDirectly)
	if recs := decodeRecords(t, got.Body); len(recs) != 1 || string(recs[0].Body) != "direct" {
		t.Errorf("the client got %d bytes, not the message", len(got.Body))
	}
	if r := e.invoke(goRequest(remoting.ConsumeMessageDirectly, map[string]string{"consumerGroup": "rig", "clientId": "c1", "msgId": "nonsense"}, nil)); r.Code != remoting.SystemError {
		t.Errorf("bad msgId: code %d remark %q", r.Code, r.Remark)
	}
	wantBadHeader(t, e, remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "rig"}, "clientId")
	wantBadHeader(t, e, remoting.ConsumeMessageDirectly, map[string]string{"consumerGroup": "rig", "clientId": "c1"}, "msgId")

	// The client is gone: answered at once.
	fc.client.Close()
	waitFor(t, "the client to leave", func() bool { return len(e.b.consumers.ClientIDs("rig")) == 0 })
	r = e.invoke(goRequest(remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "rig", "clientId": "c1"}, nil))
	if r.Code != remoting.SystemError || r.Remark != "The Consumer <rig> <c1> not online" {
		t.Errorf("gone client: code %d remark %q", r.Code, r.Remark)
	}
}

// A client that is connected but never answers is given up on after the
// relay timeout, well within the caller's own.
func TestRelayToSilentClientIsBounded(t *testing.T) {
	old := adminRelayTimeout
	adminRelayTimeout = 200 * time.Millisecond
	t.Cleanup(func() { adminRelayTimeout = old })
	e := startBroker(t, nil)
	e.createTopic("RS", 1)
	silent := make(chan struct{})
	defer close(silent)
	startFakeConsumerSilent(t, e, "c1", "rsg", "RS", silent)
	r := e.invoke(goRequest(remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "rsg", "clientId": "c1"}, nil))
	if r.Code != remoting.ConsumeMsgTimeout || !strings.HasPrefix(r.Remark, "consumer <rsg> <c1> Timeout: ") {
		t.Errorf("silent client: code %d remark %q", r.Code, r.Remark)
	}
}
