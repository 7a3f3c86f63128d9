package broker

import (
	"encoding/json"
	"github.com/spoolmq/spool/internal/datapath"
	"testing"

	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

// TestSendBackRetryDetails walks one message through CONSUMER_SEND_MSG_BACK
// as §6.3 describes: queue count from the group's retryQueueNums, level
// 3 + reconsumeTimes, reconsumeTimes + 1, RETRY_TOPIC and
// ORIGIN_MESSAGE_ID kept, the header's maxReconsumeTimes only from version
// 121, then the one-queue, perm 6 DLQ.
func TestSendBackRetryDetails(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("RB", 1)
	g := metadata.NewSubscriptionGroupConfig("rq")
	g.RetryQueueNums = 3
	g.RetryMaxTimes = 2
	body, _ := json.Marshal(g)
	if r := e.invoke(goRequest(remoting.UpdateAndCreateSubscriptionGroup, nil, body)); r.Code != remoting.Success {
		t.Fatalf("create group: %d %q", r.Code, r.Remark)
	}
	resp := e.mustSend("RB", 0, "tg", "payload")
	origID := resp.ExtFields["msgId"]
	_, off, _ := message.ParseOffsetMsgID(origID)
	back := func(offset int64, level string, version int32, maxTimes string) {
		t.Helper()
		ext := map[string]string{"offset": itoa64(offset), "group": "rq", "delayLevel": level, "originMsgId": "client-id", "originTopic": "RB"}
		if maxTimes != "" {
			ext["maxReconsumeTimes"] = maxTimes
		}
		req := goRequest(remoting.ConsumerSendMsgBack, ext, nil)
		req.Version = version
		if r := e.invoke(req); r.Code != remoting.Success {
			t.Fatalf("send back: code %d remark %q", r.Code, r.Remark)
		}
	}
	check := func(x *message.Ext, reconsume int32) {
		t.Helper()
		p := x.Properties
		if p[message.PropertyRetryTopic] != "RB" || p[message.PropertyOriginMessageID] != origID ||
			x.ReconsumeTimes != reconsume || string(x.Body) != "payload" || p[message.PropertyTags] != "tg" {
			t.Fatalf("record: reconsume %d props %v", x.ReconsumeTimes, p)
		}
	}
	// Level 0 with reconsumeTimes 0: level 3, queue 2 of the schedule topic.
	back(off, "0", 317, "")
	if tc := e.b.topics.Find("%RETRY%rq"); tc == nil || tc.WriteQueueNums != 3 || tc.ReadQueueNums != 3 || tc.Perm != 6 {
		t.Fatalf("retry topic %+v", tc)
	}
	e.waitDispatched(topicSchedule, 2, 1)
	r1 := e.readQueue(topicSchedule, 2)[0]
	check(r1, 1)
	if r1.Properties[message.PropertyRealTopic] != "%RETRY%rq" || r1.Properties[message.PropertyDelayTimeLevel] != "3" {
		t.Fatalf("first retry: %v", r1.Properties)
	}
	// Again from the retried record: level 3 + 1 = 4, reconsumeTimes 2.
	back(r1.PhysicalOffset, "0", 317, "")
	e.waitDispatched(topicSchedule, 3, 1)
	r2 := e.readQueue(topicSchedule, 3)[0]
	check(r2, 2)
	// An explicit level is used as is.
	back(off, "5", 317, "")
	e.waitDispatched(topicSchedule, 4, 1)
	// Version < 121 ignores the header's maxReconsumeTimes=0 (group max 2).
	back(off, "1", 100, "0")
	e.waitDispatched(topicSchedule, 0, 1)
	if e.b.store.MaxOffsetInQueue("%DLQ%rq", 0) != 0 {
		t.Fatal("an old-version header limit sent the message to the DLQ")
	}
	// reconsumeTimes 2 >= group max 2: the DLQ.
	back(r2.PhysicalOffset, "0", 317, "")
	e.waitDispatched("%DLQ%rq", 0, 1)
	if tc := e.b.topics.Find("%DLQ%rq"); tc == nil || tc.WriteQueueNums != 1 || tc.ReadQueueNums != 1 || tc.Perm != 6 {
		t.Fatalf("DLQ topic %+v", tc)
	}
	d := e.readQueue("%DLQ%rq", 0)[0]
	check(d, 3)
	if lv := datapath.DelayLevelOf(d.Properties); lv > 0 {
		t.Fatalf("DLQ record delayed: %v", d.Properties)
	}
	// Version >= 121 honours the header: max 0 sends reconsumeTimes 0 there.
	back(off, "0", 317, "0")
	e.waitDispatched("%DLQ%rq", 0, 2)
	// A negative level goes straight to the DLQ.
	back(off, "-1", 317, "")
	e.waitDispatched("%DLQ%rq", 0, 3)

	// retryQueueNums 0: answered SUCCESS, nothing stored.
	g0 := metadata.NewSubscriptionGroupConfig("rq0")
	g0.RetryQueueNums = 0
	body, _ = json.Marshal(g0)
	e.invoke(goRequest(remoting.UpdateAndCreateSubscriptionGroup, nil, body))
	req := goRequest(remoting.ConsumerSendMsgBack, map[string]string{"offset": itoa64(off), "group": "rq0", "delayLevel": "0"}, nil)
	if r := e.invoke(req); r.Code != remoting.Success || e.b.topics.Find("%RETRY%rq0") != nil {
		t.Fatalf("retryQueueNums 0: code %d, retry topic %v", r.Code, e.b.topics.Find("%RETRY%rq0"))
	}
}

// TestRetrySendWhileOrderlyLockedGoesToDLQ: §5.1 rule 5: a send to
// %RETRY%<group> while the group holds an unexpired orderly lock goes to
// the DLQ; only the owner's UNLOCK releases the lock.
func TestRetrySendWhileOrderlyLockedGoesToDLQ(t *testing.T) {
	e := startBroker(t, nil)
	lockBody := func(client string) []byte {
		return []byte(`{"consumerGroup":"olg","clientId":"` + client + `","mqSet":[{"topic":"OT","brokerName":"broker-a","queueId":0}]}`)
	}
	if r := e.invoke(goRequest(remoting.LockBatchMQ, nil, lockBody("c1"))); r.Code != remoting.Success {
		t.Fatalf("lock: %d", r.Code)
	}
	retrySend := func() {
		t.Helper()
		req := sendV1("%RETRY%olg", 0, map[string]string{"RETRY_TOPIC": "OT"}, []byte("r"))
		req.ExtFields["reconsumeTimes"] = "1"
		req.ExtFields["maxReconsumeTimes"] = "16"
		if r := e.invoke(req); r.Code != remoting.Success {
			t.Fatalf("retry send: code %d remark %q", r.Code, r.Remark)
		}
	}
	retrySend()
	e.waitDispatched("%DLQ%olg", 0, 1)
	// Someone else's unlock changes nothing.
	e.invoke(goRequest(remoting.UnlockBatchMQ, nil, lockBody("c2")))
	retrySend()
	e.waitDispatched("%DLQ%olg", 0, 2)
	e.invoke(goRequest(remoting.UnlockBatchMQ, nil, lockBody("c1")))
	retrySend()
	e.waitDispatched("%RETRY%olg", 0, 1)
	if n := e.b.store.MaxOffsetInQueue("%DLQ%olg", 0); n != 2 {
		t.Fatalf("DLQ holds %d after the owner unlocked", n)
	}
}
