package broker

import (
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
)

func TestConsumerOffsets(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("O1", 2)
	q := func(group string, qid string) *remoting.Command {
		return e.invoke(goRequest(remoting.QueryConsumerOffset, map[string]string{"consumerGroup": group, "topic": "O1", "queueId": qid}, nil))
	}
	// Empty queue, new group: nothing in memory at offset 0.
	if r := q("newg", "0"); r.Code != remoting.QueryNotFound {
		t.Errorf("new group on empty queue: code %d", r.Code)
	}
	before := time.Now().UnixMilli()
	e.mustSend("O1", 1, "", "a")
	e.mustSend("O1", 1, "", "b")
	e.waitDispatched("O1", 1, 2)
	// New group, young queue whose first message is in memory: 0.
	if r := q("newg", "1"); r.Code != remoting.Success || extInt(t, r, "offset") != 0 {
		t.Errorf("new group on young queue: code %d ext %v", r.Code, r.ExtFields)
	}
	e.invoke(goRequest(remoting.HeartBeat, nil, goHeartbeat("c", "og", "O1", "*")))
	up := e.invoke(goRequest(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "og", "topic": "O1", "queueId": "1", "commitOffset": "1"}, nil))
	if up.Code != remoting.Success {
		t.Fatalf("update: code %d remark %q", up.Code, up.Remark)
	}
	if r := q("og", "1"); r.Code != remoting.Success || extInt(t, r, "offset") != 1 {
		t.Errorf("committed offset: code %d ext %v", r.Code, r.ExtFields)
	}
	bad := e.invoke(goRequest(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "og", "topic": "Nope", "queueId": "1", "commitOffset": "1"}, nil))
	if bad.Code != remoting.TopicNotExist {
		t.Errorf("update of an unknown topic: code %d", bad.Code)
	}
	tq := map[string]string{"topic": "O1", "queueId": "1"}
	if r := e.invoke(goRequest(remoting.GetMaxOffset, tq, nil)); extInt(t, r, "offset") != 2 {
		t.Errorf("max offset %v", r.ExtFields)
	}
	if r := e.invoke(goRequest(remoting.GetMinOffset, tq, nil)); extInt(t, r, "offset") != 0 {
		t.Errorf("min offset %v", r.ExtFields)
	}
	if r := e.invoke(goRequest(remoting.GetEarliestMsgStoretime, tq, nil)); extInt(t, r, "timestamp") < before {
		t.Errorf("earliest store time %v < %d", r.ExtFields, before)
	}
	search := map[string]string{"topic": "O1", "queueId": "1", "timestamp": "0"}
	if r := e.invoke(goRequest(remoting.SearchOffsetByTimestamp, search, nil)); extInt(t, r, "offset") != 0 {
		t.Errorf("search ts 0: %v", r.ExtFields)
	}
	search["timestamp"] = itoa64(time.Now().Add(time.Hour).UnixMilli())
	if r := e.invoke(goRequest(remoting.SearchOffsetByTimestamp, search, nil)); extInt(t, r, "offset") != 2 {
		t.Errorf("search future ts: %v", r.ExtFields)
	}
	if r := e.invoke(goRequest(remoting.GetMaxOffset, map[string]string{"topic": "O1"}, nil)); r.Code != remoting.InvalidParameter {
		t.Errorf("missing queueId: code %d", r.Code)
	}
}

func TestOffsetsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	e := startBrokerIn(t, dir, nil)
	e.createTopic("R1", 3)
	e.invoke(goRequest(remoting.HeartBeat, nil, goHeartbeat("c", "rg", "R1", "*")))
	e.invoke(goRequest(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "rg", "topic": "R1", "queueId": "2", "commitOffset": "42"}, nil))
	e.stop()

	e2 := startBrokerIn(t, dir, nil)
	if tc := e2.b.topics.Find("R1"); tc == nil || tc.ReadQueueNums != 3 {
		t.Fatalf("topic after restart: %+v", tc)
	}
	if e2.b.groups.Find("rg") == nil {
		t.Fatalf("group lost")
	}
	r := e2.invoke(goRequest(remoting.QueryConsumerOffset, map[string]string{"consumerGroup": "rg", "topic": "R1", "queueId": "2"}, nil))
	if r.Code != remoting.Success || extInt(t, r, "offset") != 42 {
		t.Fatalf("offset after restart: code %d ext %v", r.Code, r.ExtFields)
	}
}
