package broker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
)

func TestPullFiltersByTagOfHeartbeatSubscription(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("F1", 1)
	e.invoke(goRequest(remoting.HeartBeat, nil, goHeartbeat("c", "fg", "F1", "TagA || TagC")))
	for _, tag := range []string{"TagA", "TagB", "TagC", ""} {
		e.mustSend("F1", 0, tag, "body-"+tag)
	}
	e.waitDispatched("F1", 0, 4)
	r := e.invoke(pullReq("fg", "F1", 0, 0, pullFlagSuspend, 0, ""))
	if r.Code != remoting.Success {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	recs := decodeRecords(t, r.Body)
	if len(recs) != 2 || string(recs[0].Body) != "body-TagA" || string(recs[1].Body) != "body-TagC" {
		var got []string
		for _, x := range recs {
			got = append(got, string(x.Body))
		}
		t.Fatalf("pulled %v, want body-TagA and body-TagC", got)
	}
	if n := extInt(t, r, "nextBeginOffset"); n != 4 {
		t.Errorf("nextBeginOffset %d, want 4", n)
	}
	// Only unmatched messages left: 20, moving past them.
	e.mustSend("F1", 0, "TagB", "x")
	e.waitDispatched("F1", 0, 5)
	r = e.invoke(pullReq("fg", "F1", 0, 4, 0, 0, ""))
	if r.Code != remoting.PullRetryImmediately || extInt(t, r, "nextBeginOffset") != 5 {
		t.Errorf("unmatched only: code %d next %v", r.Code, r.ExtFields)
	}
}

func TestPullSQL92(t *testing.T) {
	e := startBroker(t, func(c *Config, _ *store.Config) { c.EnablePropertyFilter = true })
	e.createTopic("F2", 1)
	for _, v := range []string{"1", "5", "9"} {
		e.invoke(sendV1("F2", 0, map[string]string{"a": v}, []byte("v"+v)))
	}
	e.waitDispatched("F2", 0, 3)
	req := pullReq("g", "F2", 0, 0, pullFlagSubscription, 0, "a > 3")
	req.ExtFields["expressionType"] = "SQL92"
	r := e.invoke(req)
	if recs := decodeRecords(t, r.Body); r.Code != remoting.Success || len(recs) != 2 {
		t.Fatalf("code %d remark %q records %d", r.Code, r.Remark, len(recs))
	}
	req.ExtFields["subscription"] = "a >>> ("
	if r := e.invoke(req); r.Code != remoting.SubscriptionParseFailed {
		t.Errorf("bad SQL: code %d", r.Code)
	}
	off := startBroker(t, nil)
	off.createTopic("F2", 1)
	req.ExtFields["subscription"] = "a > 3"
	if r := off.invoke(req); r.Code != remoting.SystemError {
		t.Errorf("SQL92 with enablePropertyFilter=false: code %d", r.Code)
	}
}

func TestRegistersWithNameServerOverTCP(t *testing.T) {
	ns, err := namesrv.New(namesrv.DefaultConfig(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	addr, err := ns.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	e := startBroker(t, func(c *Config, _ *store.Config) { c.NamesrvAddr = "127.0.0.1:1;" + addr.String() })
	route := func(topic string) *remoting.Command {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := e.client.Invoke(ctx, addr.String(), goRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": topic}, nil))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Registered during Start, although the first name server is down.
	if r := route("TBW102"); r.Code != remoting.Success {
		t.Fatalf("TBW102 route: code %d remark %q", r.Code, r.Remark)
	}
	if r := route("NewTopic"); r.Code != remoting.TopicNotExist {
		t.Fatalf("unknown topic route: code %d", r.Code)
	}
	e.createTopic("NewTopic", 8)
	r := route("NewTopic")
	var rd struct {
		QueueDatas []struct {
			BrokerName    string `json:"brokerName"`
			ReadQueueNums int    `json:"readQueueNums"`
		} `json:"queueDatas"`
	}
	if r.Code != remoting.Success || json.Unmarshal(r.Body, &rd) != nil || len(rd.QueueDatas) != 1 || rd.QueueDatas[0].ReadQueueNums != 8 {
		t.Fatalf("route after create: code %d body %s", r.Code, r.Body)
	}
	// A send to a new topic registers it at once.
	e.mustSend("AutoMade", 0, "", "x")
	waitFor(t, "route of the auto-created topic", func() bool { return route("AutoMade").Code == remoting.Success })
}
