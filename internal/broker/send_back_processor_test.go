package broker

import (
	"math"
	"testing"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

// readQueue returns the records of a queue from offset 0.
func (e *testEnv) readQueue(topic string, qid int32) []*message.Ext {
	e.t.Helper()
	res := e.b.store.GetMessage("test", topic, qid, 0, 32, math.MaxInt32, nil)
	defer res.Release()
	var out []*message.Ext
	for _, buf := range res.Buffers {
		x, err := message.DecodeRecord(buf)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, x)
	}
	return out
}

func TestConsumerSendMsgBack(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("SB", 1)
	resp := e.mustSend("SB", 0, "tg", "payload")
	_, off, err := message.ParseOffsetMsgID(resp.ExtFields["msgId"])
	if err != nil {
		t.Fatal(err)
	}
	back := func(level string, max string) *remoting.Command {
		ext := map[string]string{"offset": itoa64(off), "group": "sbg", "delayLevel": level, "originMsgId": "ORIG", "originTopic": "SB"}
		if max != "" {
			ext["maxReconsumeTimes"] = max
		}
		return e.invoke(goRequest(remoting.ConsumerSendMsgBack, ext, nil))
	}
	if r := back("0", "16"); r.Code != remoting.Success {
		t.Fatalf("send back: code %d remark %q", r.Code, r.Remark)
	}
	if e.b.topics.Find("%RETRY%sbg") == nil {
		t.Fatalf("retry topic not created")
	}
	// Level 3 + reconsumeTimes(0) -> schedule queue 2.
	e.waitDispatched("SCHEDULE_TOPIC_XXXX", 2, 1)
	recs := e.readQueue("SCHEDULE_TOPIC_XXXX", 2)
	p := recs[0].Properties
	if p[message.PropertyRealTopic] != "%RETRY%sbg" || p[message.PropertyRetryTopic] != "SB" ||
		p[message.PropertyOriginMessageID] != resp.ExtFields["msgId"] || recs[0].ReconsumeTimes != 1 || string(recs[0].Body) != "payload" {
		t.Fatalf("retry record: reconsume %d props %v", recs[0].ReconsumeTimes, p)
	}
	// delayLevel < 0: straight to the DLQ.
	if r := back("-1", "16"); r.Code != remoting.Success {
		t.Fatalf("send back to DLQ: code %d remark %q", r.Code, r.Remark)
	}
	e.waitDispatched("%DLQ%sbg", 0, 1)
	// Past the limit (reconsumeTimes 0 >= max 0): DLQ too.
	if r := back("0", "0"); r.Code != remoting.Success {
		t.Fatalf("send back over max: code %d", r.Code)
	}
	e.waitDispatched("%DLQ%sbg", 0, 2)
	if r := e.invoke(goRequest(remoting.ConsumerSendMsgBack, map[string]string{"offset": "99999999", "group": "sbg", "delayLevel": "0"}, nil)); r.Code != remoting.SystemError {
		t.Errorf("bad offset: code %d", r.Code)
	}
}

func TestSendToRetryTopicOverMaxGoesToDLQ(t *testing.T) {
	e := startBroker(t, nil)
	req := sendV1("%RETRY%rg", 0, nil, []byte("r"))
	req.ExtFields["reconsumeTimes"] = "17"
	req.ExtFields["maxReconsumeTimes"] = "16"
	if r := e.invoke(req); r.Code != remoting.Success {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	e.waitDispatched("%DLQ%rg", 0, 1)
}

func TestDelayedMessageDelivered(t *testing.T) {
	e := startBroker(t, func(c *Config, s *store.Config) { s.MessageDelayLevel = "1s"; c.TimerWheelEnable = false })
	e.createTopic("DL", 2)
	resp := e.invoke(sendV1("DL", 1, map[string]string{"DELAY": "4", "TAGS": "t"}, []byte("soon")))
	if resp.Code != remoting.Success {
		t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
	}
	e.waitDispatched("DL", 1, 1)
	recs := e.readQueue("DL", 1)
	if len(recs) != 1 || string(recs[0].Body) != "soon" {
		t.Fatalf("delivered %+v", recs)
	}
	if _, ok := recs[0].Properties[message.PropertyDelayTimeLevel]; ok {
		t.Errorf("DELAY kept on the delivered message")
	}
	if recs[0].Properties[message.PropertyRealTopic] != "DL" {
		t.Errorf("REAL_TOPIC not kept: %v", recs[0].Properties)
	}
	waitFor(t, "delay offset to advance", func() bool { return e.b.schedule.Offset(1) == 1 })
}
