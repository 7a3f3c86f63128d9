package broker

import (
	"context"
	"testing"
	"time"

	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

func TestSendReplyPushesToRequester(t *testing.T) {
	e := startBroker(t, nil)
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
	hb := []byte(`{"clientID":"req@1","producerDataSet":[{"groupName":"rq"}],"consumerDataSet":[]}`)
	if r, err := requester.Invoke(ctx, e.b.Addr(), goRequest(remoting.HeartBeat, nil, hb)); err != nil || r.Code != 0 {
		t.Fatalf("heartbeat: %v", err)
	}
	reply := sendV1("DefaultCluster_REPLY_TOPIC", 0, map[string]string{
		message.PropertyReplyToClient: "req@1", message.PropertyCorrelationID: "corr-1", message.PropertyMessageType: "reply",
	}, []byte("answer"))
	reply.Code = remoting.SendReplyMessage
	r := e.invoke(reply)
	if r.Code != remoting.Success || r.Ext("msgId") == "" {
		t.Fatalf("reply: code %d remark %q", r.Code, r.Remark)
	}
	p := <-pushed
	props := message.DecodeProperties(p.Ext("properties"))
	if string(p.Body) != "answer" || props[message.PropertyCorrelationID] != "corr-1" || props[message.PropertyPushReplyTime] == "" {
		t.Fatalf("push: body %q props %v", p.Body, props)
	}
	unknown := sendV1("DefaultCluster_REPLY_TOPIC", 0, map[string]string{message.PropertyReplyToClient: "nobody"}, []byte("x"))
	unknown.Code = remoting.SendReplyMessage
	if r := e.invoke(unknown); r.Code != remoting.SystemError {
		t.Errorf("reply to an unknown client: code %d", r.Code)
	}
}
