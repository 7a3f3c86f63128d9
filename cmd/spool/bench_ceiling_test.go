package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/broker"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

// startCeiling runs the ceiling responder on a loopback port.
func startCeiling(t *testing.T) string {
	t.Helper()
	s := newCeilingServer(broker.DefaultConfig())
	addr, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return addr.String()
}

// The responder answers each send code as a broker's SEND_OK does (an id
// per message, the queue, a queue offset), refuses a send without a queue
// and any other code, in both serializations.
func TestCeilingAnswersSendsLikeSendOK(t *testing.T) {
	addr := startCeiling(t)
	for _, ser := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		cli := benchClient(ser)
		defer cli.Close()
		send := func(req *remoting.Command) *remoting.Command {
			t.Helper()
			resp, err := call(cli, addr, req, remoting.SystemError, remoting.RequestCodeNotSupported)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		var sb sendBuilder
		body := []byte("0123456789")
		for _, n := range []int{1, 3} {
			resp := send(sb.build("T", 5, body, n, ser, time.Now()))
			ids := strings.Split(resp.Ext("msgId"), ",")
			if resp.Code != remoting.Success || resp.Ext("queueId") != "5" || resp.Ext("queueOffset") == "" || len(ids) != n {
				t.Fatalf("%v, %d messages: code %d %q, fields %v", ser, n, resp.Code, resp.Remark, resp.ExtMap())
			}
			for _, id := range ids {
				if _, _, err := message.ParseOffsetMsgID(id); err != nil {
					t.Fatalf("msgId %q: %v", id, err)
				}
			}
		}
		v1 := remoting.NewRequest(remoting.SendMessage, map[string]string{"producerGroup": "g", "topic": "T", "queueId": "2"}, body)
		if resp := send(v1); resp.Code != remoting.Success || resp.Ext("queueId") != "2" {
			t.Fatalf("SEND_MESSAGE: code %d %q, fields %v", resp.Code, resp.Remark, resp.ExtMap())
		}
		noQueue := remoting.NewRequest(remoting.SendMessageV2, map[string]string{"a": "g", "b": "T"}, body)
		if resp := send(noQueue); resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "queueId") {
			t.Fatalf("send without a queue: code %d %q", resp.Code, resp.Remark)
		}
		if resp := send(remoting.NewRequest(remoting.PullMessage, nil, nil)); resp.Code != remoting.RequestCodeNotSupported {
			t.Fatalf("pull: code %d %q", resp.Code, resp.Remark)
		}
	}
}

// `bench produce --broker` sends to queues 0..n-1 of that address without
// a name server; against the responder every send is answered SEND_OK.
func TestProduceDirectAgainstCeiling(t *testing.T) {
	addr := startCeiling(t)
	qs, err := produceQueues(nil, "", addr, "T", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 3 || qs[2].addr != addr || qs[2].queueID != 2 {
		t.Fatalf("queues %+v", qs)
	}
	if _, err := produceQueues(nil, "", addr, "T", 0); err == nil {
		t.Fatal("--queues 0 accepted")
	}
	body := []byte("0123456789")
	build := func(sb *sendBuilder, q queueRef, now time.Time) (*remoting.Command, int, int) {
		return sb.build("T", q.queueID, body, 1, remoting.SerializeJSON, now), 1, len(body)
	}
	m := newMeter()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	produceConn(ctx, addr, qs, 8, build, m)
	cancel()
	if s := m.summary(); s.OK == 0 || s.Errors != 0 {
		t.Fatalf("summary %+v", s)
	}
}
