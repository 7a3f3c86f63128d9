package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// goHeartbeat is a heartbeat body as the Go client writes it (codeSet as
// strings, subVersion in nanoseconds).
func goHeartbeat(clientID, group, topic, sub string) []byte {
	return []byte(fmt.Sprintf(`{"clientID":%q,"producerDataSet":[{"groupName":"pg"}],
 "consumerDataSet":[{"groupName":%q,"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",
   "consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[
     {"classFilterMode":false,"topic":%q,"subString":%q,"tagsSet":["a"],"codeSet":["97"],
      "subVersion":1700000000000000000,"expressionType":"TAG"},
     {"classFilterMode":false,"topic":"%%RETRY%%%s","subString":"*","tagsSet":[],"codeSet":[],
      "subVersion":1,"expressionType":"TAG"}],"unitMode":false}]}`, clientID, group, topic, sub, group))
}

func TestHeartbeatRegistersConsumer(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("H1", 1)
	resp := e.invoke(goRequest(remoting.HeartBeat, nil, goHeartbeat("10.0.0.1@1", "cg", "H1", "*")))
	if resp.Code != remoting.Success {
		t.Fatalf("heartbeat: code %d remark %q", resp.Code, resp.Remark)
	}
	if tc := e.b.topics.Find("%RETRY%cg"); tc == nil || tc.ReadQueueNums != 1 {
		t.Fatalf("retry topic %+v", tc)
	}
	if e.b.groups.Find("cg") == nil {
		t.Fatalf("group config not auto-created")
	}
	waitFor(t, "registration of the retry topic", func() bool {
		r := e.ns.lastRegistration()
		return r != nil && json.Valid(r.Body) && bytes.Contains(r.Body, []byte("%RETRY%cg"))
	})
	list := e.invoke(goRequest(remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": "cg"}, nil))
	var body struct {
		ConsumerIDList []string `json:"consumerIdList"`
	}
	if list.Code != remoting.Success || json.Unmarshal(list.Body, &body) != nil || len(body.ConsumerIDList) != 1 ||
		body.ConsumerIDList[0] != "10.0.0.1@1" {
		t.Fatalf("consumer list: code %d body %s", list.Code, list.Body)
	}
	none := e.invoke(goRequest(remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": "nobody"}, nil))
	if none.Code != remoting.SystemError {
		t.Errorf("unknown group: code %d", none.Code)
	}
	// A pull without the subscription flag now uses the heartbeat's subscription.
	if r := e.invoke(pullReq("cg", "H1", 0, 0, 0, 0, "")); r.Code != remoting.PullNotFound {
		t.Errorf("pull with registered subscription: code %d remark %q", r.Code, r.Remark)
	}
	if r := e.invoke(pullReq("cg", "Other", 0, 0, 0, 0, "")); r.Code != remoting.TopicNotExist {
		t.Errorf("pull of an unknown topic: code %d", r.Code)
	}
	e.createTopic("Other", 1)
	if r := e.invoke(pullReq("cg", "Other", 0, 0, 0, 0, "")); r.Code != remoting.SubscriptionNotExist {
		t.Errorf("pull of an unsubscribed topic: code %d", r.Code)
	}
}

func contains(b []byte, s string) bool {
	return json.Valid(b) && len(b) > 0 && stringIndex(string(b), s) >= 0
}

func stringIndex(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestNotifyConsumerIdsChangedAndConnClose(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("H2", 1)
	notified := make(chan string, 16)
	handler := func(c *transport.Conn, req *remoting.Command) *remoting.Command {
		if req.Code == remoting.NotifyConsumerIdsChanged {
			notified <- req.Ext("consumerGroup")
		}
		return nil
	}
	c1 := transport.NewClient(transport.ClientConfig{Handler: handler})
	defer c1.Close()
	c2 := transport.NewClient(transport.ClientConfig{Handler: handler})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := c1.Invoke(ctx, e.b.Addr(), goRequest(remoting.HeartBeat, nil, goHeartbeat("c1", "cg2", "H2", "*"))); err != nil || r.Code != 0 {
		t.Fatalf("heartbeat 1: %v %+v", err, r)
	}
	<-notified // c1 told about its own arrival
	if r, err := c2.Invoke(ctx, e.b.Addr(), goRequest(remoting.HeartBeat, nil, goHeartbeat("c2", "cg2", "H2", "*"))); err != nil || r.Code != 0 {
		t.Fatalf("heartbeat 2: %v %+v", err, r)
	}
	for i := 0; i < 2; i++ {
		select {
		case g := <-notified:
			if g != "cg2" {
				t.Fatalf("notified group %q", g)
			}
		case <-ctx.Done():
			t.Fatalf("members not notified of the second member")
		}
	}
	if ids := e.b.consumers.ClientIDs("cg2"); len(ids) != 2 {
		t.Fatalf("members %v", ids)
	}
	c2.Close()
	waitFor(t, "removal of the closed connection", func() bool { return len(e.b.consumers.ClientIDs("cg2")) == 1 })
	select {
	case <-notified:
	case <-ctx.Done():
		t.Fatalf("remaining member not notified of the departure")
	}
}

func TestUnregisterClient(t *testing.T) {
	e := startBroker(t, nil)
	e.invoke(goRequest(remoting.HeartBeat, nil, goHeartbeat("c1", "cg3", "TBW102", "*")))
	resp := e.invoke(goRequest(remoting.UnregisterClient, map[string]string{"clientID": "c1", "consumerGroup": "cg3", "producerGroup": "pg"}, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("code %d", resp.Code)
	}
	if ids := e.b.consumers.ClientIDs("cg3"); len(ids) != 0 {
		t.Fatalf("still registered: %v", ids)
	}
}

func TestCheckClientConfig(t *testing.T) {
	e := startBroker(t, func(c *Config, _ *store.Config) { c.EnablePropertyFilter = true })
	ok := `{"clientId":"c","group":"g","subscriptionData":{"topic":"T","subString":"a > 1","expressionType":"SQL92"}}`
	bad := `{"clientId":"c","group":"g","subscriptionData":{"topic":"T","subString":"a >>> (","expressionType":"SQL92"}}`
	if r := e.invoke(goRequest(remoting.CheckClientConfig, nil, []byte(ok))); r.Code != remoting.Success {
		t.Errorf("valid SQL92: code %d remark %q", r.Code, r.Remark)
	}
	if r := e.invoke(goRequest(remoting.CheckClientConfig, nil, []byte(bad))); r.Code != remoting.SubscriptionParseFailed {
		t.Errorf("invalid SQL92: code %d remark %q", r.Code, r.Remark)
	}
}

func TestConsumerExpiry(t *testing.T) {
	e := startBroker(t, nil)
	e.invoke(goRequest(remoting.HeartBeat, nil, goHeartbeat("c1", "eg", "TBW102", "*")))
	if len(e.b.consumers.ClientIDs("eg")) != 1 {
		t.Fatal("not registered")
	}
	e.b.consumers.ScanExpired(time.Now().Add(119*time.Second), 120*time.Second, true)
	if len(e.b.consumers.ClientIDs("eg")) != 1 {
		t.Fatal("expired before 120 s")
	}
	e.b.consumers.ScanExpired(time.Now().Add(121*time.Second), 120*time.Second, true)
	if len(e.b.consumers.ClientIDs("eg")) != 0 {
		t.Fatal("not expired after 120 s without heartbeat")
	}
	if e.b.producers.AnyConn("pg") == nil {
		t.Fatal("producer not registered")
	}
	e.b.producers.ScanExpired(time.Now().Add(121*time.Second), 120*time.Second)
	if e.b.producers.AnyConn("pg") != nil {
		t.Fatal("producer not expired")
	}
}
