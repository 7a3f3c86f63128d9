package e2e

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/spoolmq/spool/remoting"
)

func TestAutoCreateDisabledRefusesUnknownTopic(t *testing.T) {
	t.Parallel()
	s := startSpool(t, "autoCreateTopicEnable=false")
	p := s.newProducer(t, "pg-noauto")
	_, err := p.SendSync(context.Background(), primitive.NewMessage("E2ENoSuchTopic", []byte("x")))
	if err == nil {
		t.Fatal("a send to an unknown topic succeeded with autoCreateTopicEnable=false")
	}
	// The official client's own words when the name server answers
	// TOPIC_NOT_EXIST for the topic and for TBW102.
	if !strings.Contains(err.Error(), "route info not found") {
		t.Fatalf("unexpected error text: %v", err)
	}
	if q := s.routeQueues(t, "TBW102"); len(q) != 0 {
		t.Fatalf("TBW102 has a route with auto-create off: %v", q)
	}
}

func TestAutoCreateOnSendCreatesTopic(t *testing.T) {
	t.Parallel()
	s := sharedSpool(t)
	p := s.newProducer(t, "pg-autocreate")
	res, err := p.SendSync(context.Background(), primitive.NewMessage("E2EAutoCreated", []byte("x")))
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("send to a new topic with auto-create on: %v %+v", err, res)
	}
	waitFor(t, 10*time.Second, "route of the auto-created topic", func() bool {
		return len(s.routeQueues(t, "E2EAutoCreated")) > 0
	})
}

func TestBrokerRestartKeepsMessagesAndOffsets(t *testing.T) {
	t.Parallel()
	s := startSpool(t)
	topic := "E2ERestart"
	s.createTopic(t, s.newAdmin(t), topic, 2)
	p := s.newProducer(t, "pg-restart")
	before, after := bodies("before", 20), bodies("after", 5)
	for _, b := range before {
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(b))); err != nil {
			t.Fatal(err)
		}
	}
	col1 := newCollector()
	c1 := s.newPushConsumer(t, "cg-restart")
	if err := c1.Subscribe(topic, consumer.MessageSelector{}, col1.handler); err != nil {
		t.Fatal(err)
	}
	if err := c1.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "messages before restart", func() bool { return col1.hasAll(before) })
	s.waitCommitted(t, "cg-restart", topic, 2)
	if err := c1.Shutdown(); err != nil {
		t.Fatal(err)
	}
	_ = p.Shutdown()

	s.restart()

	p2 := s.newProducer(t, "pg-restart2")
	for _, b := range after {
		if _, err := p2.SendSync(context.Background(), primitive.NewMessage(topic, []byte(b))); err != nil {
			t.Fatalf("send after restart: %v", err)
		}
	}
	// The group resumes where it committed before the restart.
	col2 := newCollector()
	c2 := s.newPushConsumer(t, "cg-restart")
	if err := c2.Subscribe(topic, consumer.MessageSelector{}, col2.handler); err != nil {
		t.Fatal(err)
	}
	if err := c2.Start(); err != nil {
		t.Fatal(err)
	}
	defer c2.Shutdown()
	waitFor(t, 60*time.Second, "messages after restart", func() bool { return col2.hasAll(after) })
	for _, b := range before {
		if col2.count(b) != 0 {
			t.Fatalf("%s redelivered to the group after the restart", b)
		}
	}
	// A new group reads everything: the messages survived the restart.
	col3 := newCollector()
	c3 := s.newPushConsumer(t, "cg-restart-new")
	if err := c3.Subscribe(topic, consumer.MessageSelector{}, col3.handler); err != nil {
		t.Fatal(err)
	}
	if err := c3.Start(); err != nil {
		t.Fatal(err)
	}
	defer c3.Shutdown()
	waitFor(t, 60*time.Second, "all messages for a new group", func() bool {
		return col3.hasAll(before) && col3.hasAll(after)
	})
}

func TestVIPPortAnswersRocketMQSerializedSend(t *testing.T) {
	t.Parallel()
	s := sharedSpool(t)
	s.createTopic(t, s.newAdmin(t), "E2EVip", 1)
	rc := dialRaw(t, s.vipAddr)
	req := rawRequest(remoting.SendMessageV2, map[string]string{
		"a": "pg-vip", "b": "E2EVip", "c": "TBW102", "d": "4", "e": "0", "f": "0",
		"g": "1700000000000", "h": "0", "i": "TAGS\x01vip\x02", "j": "0", "k": "false", "m": "false",
	}, []byte("over the vip channel"))
	req.Language = "JAVA"
	req.Serialize = remoting.SerializeRocketMQ
	resp := rc.call(t, req)
	if resp.Serialize != remoting.SerializeRocketMQ {
		t.Errorf("answer came in serialization %d, want ROCKETMQ", resp.Serialize)
	}
	if resp.Code != remoting.Success || !resp.IsResponse() || resp.Opaque != req.Opaque {
		t.Fatalf("answer: code %d flag %d opaque %d remark %q", resp.Code, resp.Flag, resp.Opaque, resp.Remark)
	}
	if len(resp.Ext("msgId")) != 32 || resp.Ext("queueId") != "0" || resp.Ext("queueOffset") == "" {
		t.Fatalf("answer ext fields: %v", resp.ExtFields)
	}
}

func TestBadInputClosesOrAnswersAndOthersKeepWorking(t *testing.T) {
	t.Parallel()
	s := sharedSpool(t)
	s.createTopic(t, s.newAdmin(t), "E2EBadInput", 1)
	p := s.newProducer(t, "pg-bad-input")
	sendOK := func(what string) {
		t.Helper()
		if _, err := p.SendSync(context.Background(), primitive.NewMessage("E2EBadInput", []byte(what))); err != nil {
			t.Fatalf("normal client failed after %s: %v", what, err)
		}
	}
	sendOK("start")

	expectClosed := func(what string, payload []byte) {
		t.Helper()
		rc := dialRaw(t, s.brokerAddr)
		if _, err := rc.c.Write(payload); err != nil {
			t.Fatalf("%s: write: %v", what, err)
		}
		_ = rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 1)
		if _, err := rc.r.Read(buf); err == nil {
			t.Fatalf("%s: the broker answered instead of closing the connection", what)
		} else if strings.Contains(err.Error(), "timeout") {
			t.Fatalf("%s: the connection was left open", what)
		}
		sendOK(what)
	}
	expectClosed("garbage", []byte("GET / HTTP/1.1\r\nHost: spool\r\n\r\n"))
	huge := make([]byte, 8)
	binary.BigEndian.PutUint32(huge, 1<<31-1)
	expectClosed("a 2^31-1 length prefix", huge)
	long := make([]byte, 16)
	binary.BigEndian.PutUint32(long[0:], 12)   // frame of 12 bytes
	binary.BigEndian.PutUint32(long[4:], 1000) // JSON header claiming 1000 bytes
	expectClosed("a header longer than its frame", long)

	rc := dialRaw(t, s.brokerAddr)
	resp := rc.call(t, rawRequest(9999, nil, nil))
	if resp.Code != remoting.RequestCodeNotSupported || !strings.Contains(resp.Remark, "9999") {
		t.Fatalf("unknown code: got %d %q", resp.Code, resp.Remark)
	}
	resp = rc.call(t, rawRequest(remoting.SendMessage, map[string]string{
		"producerGroup": "pg", "topic": "bad topic!", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "0", "sysFlag": "0", "bornTimestamp": "1", "flag": "0",
	}, []byte("x")))
	if resp.Code != remoting.InvalidParameter || !strings.Contains(resp.Remark, "bad topic!") {
		t.Fatalf("illegal topic: got %d %q", resp.Code, resp.Remark)
	}
	sendOK("an unknown code and an illegal topic")
}
