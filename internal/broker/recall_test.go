package broker

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

func recallReq(topic, handle string) *remoting.Command {
	ext := map[string]string{"producerGroup": "pg", "topic": topic}
	if handle != "" {
		ext["recallHandle"] = handle
	}
	return goRequest(remoting.RecallMessage, ext, nil)
}

func sendTimer(t *testing.T, e *testEnv, topic, key string, delayMs int64) *remoting.Command {
	t.Helper()
	resp := e.invoke(sendV1(topic, 0, map[string]string{message.PropertyKeys: key,
		message.PropertyTimerDelayMS: strconv.FormatInt(delayMs, 10)}, []byte(key)))
	if resp.Code != remoting.Success {
		t.Fatalf("send %s: %d %s", key, resp.Code, resp.Remark)
	}
	return resp
}

// TestRecallMessage: a timer message's send answer carries a recall
// handle as RocketMQ encodes it; RECALL_MESSAGE with it stores a delete
// marker and the timer is never delivered, while its neighbour is.
func TestRecallMessage(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("RT", 1)
	a := sendTimer(t, e, "RT", "a", 2500)
	sendTimer(t, e, "RT", "b", 2500)

	handle := a.ExtFields["recallHandle"]
	raw, err := base64.URLEncoding.DecodeString(handle)
	if err != nil {
		t.Fatalf("recallHandle %q: %v", handle, err)
	}
	items := strings.Split(string(raw), " ")
	if len(items) != 5 || items[0] != "v1" || items[1] != "RT" || items[2] != "broker-a" || items[4] == "" {
		t.Fatalf("recall handle %q", raw)
	}
	if ts, err := strconv.ParseInt(items[3], 10, 64); err != nil || ts <= time.Now().UnixMilli() {
		t.Fatalf("recall handle timestamp %q", items[3])
	}
	if e.mustSend("RT", 0, "", "plain").ExtFields["recallHandle"] != "" {
		t.Fatal("a plain message's answer has a recall handle")
	}

	// Off by default, as in RocketMQ.
	if r := e.invoke(recallReq("RT", handle)); r.Code != remoting.NoPermission || r.Remark != "recall failed, operation is forbidden" {
		t.Fatalf("recall while recallMessageEnable=false: %d %q", r.Code, r.Remark)
	}
	if r := e.invoke(goRequest(remoting.UpdateBrokerConfig, nil, []byte("recallMessageEnable=true\n"))); r.Code != remoting.Success {
		t.Fatalf("update config: %d %s", r.Code, r.Remark)
	}
	bad := func(h string) string {
		return base64.URLEncoding.EncodeToString([]byte(h))
	}
	for _, c := range []struct {
		topic, handle string
		code          int32
		remark        string
	}{
		{"RT", "", remoting.InvalidParameter, "recallHandle"},
		{"nope", handle, remoting.TopicNotExist, "recall failed, the topic[nope] not exist"},
		{"RT", "!!", remoting.IllegalOperation, "recall handle is invalid"},
		{"RT", bad("v2 RT broker-a 1 x"), remoting.IllegalOperation, "recall handle is invalid"},
		{"RT", bad("v1 RT broker-a"), remoting.IllegalOperation, "recall handle is invalid"},
		{"RT", bad("v1 Other broker-a " + items[3] + " x"), remoting.IllegalOperation, "recall failed, topic not match"},
		{"RT", bad("v1 RT broker-b " + items[3] + " x"), remoting.IllegalOperation, "recall failed, broker service not available"},
		{"RT", bad("v1 RT broker-a 1000 x"), remoting.IllegalOperation, "recall failed, timestamp invalid"},
	} {
		r := e.invoke(recallReq(c.topic, c.handle))
		if r.Code != c.code || !strings.Contains(r.Remark, c.remark) {
			t.Errorf("recall %s %q: %d %q, want %d %q", c.topic, c.handle, r.Code, r.Remark, c.code, c.remark)
		}
	}

	r := e.invoke(recallReq("RT", handle))
	if r.Code != remoting.Success || r.ExtFields["msgId"] != items[4] {
		t.Fatalf("recall: %d %q msgId %q want %q", r.Code, r.Remark, r.ExtFields["msgId"], items[4])
	}
	waitFor(t, "the timers' second handled", func() bool {
		s, _ := e.b.TimerStats()
		return s.Pending == 0 && s.Delivered == 1
	})
	s, _ := e.b.TimerStats()
	if s.Cancelled != 1 || s.DeleteMarkers != 1 {
		t.Fatalf("timer stats: %+v", s)
	}
	e.waitDispatched("RT", 0, 2)
	resp := e.invoke(pullReq("g", "RT", 0, 0, pullFlagSubscription, 0, "*"))
	var keys []string
	for _, m := range decodeRecords(t, resp.Body) {
		keys = append(keys, m.Properties[message.PropertyKeys])
	}
	if strings.Join(keys, ",") != ",b" {
		t.Fatalf("queue RT/0 holds keys %q, want the plain message and b", keys)
	}
}
