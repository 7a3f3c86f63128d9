package auth

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/spoolmq/spool/remoting"
)

// fakeCluster answers the official Go client as a name server and a
// broker on one loopback port, and keeps every request it receives.
type fakeCluster struct {
	ln   net.Listener
	mu   sync.Mutex
	reqs []*remoting.Command
	sent chan struct{}
	once sync.Once
}

func newFakeCluster(t *testing.T) *fakeCluster {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fc := &fakeCluster{ln: ln, sent: make(chan struct{})}
	t.Cleanup(func() { ln.Close() })
	go fc.accept()
	return fc
}

func (fc *fakeCluster) accept() {
	for {
		c, err := fc.ln.Accept()
		if err != nil {
			return
		}
		go fc.serve(c)
	}
}

func (fc *fakeCluster) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		req, err := remoting.ReadCommand(r, remoting.MaxFrameSize)
		if err != nil {
			return
		}
		if req.IsResponse() {
			continue
		}
		fc.mu.Lock()
		fc.reqs = append(fc.reqs, req)
		fc.mu.Unlock()
		resp := remoting.NewResponse(req, remoting.Success, "")
		switch req.Code {
		case remoting.GetRouteinfoByTopic:
			resp.Body = []byte(fmt.Sprintf(`{"brokerDatas":[{"brokerAddrs":{"0":"%s"},"brokerName":"b0","cluster":"c0","enableActingMaster":false}],`+
				`"filterServerTable":{},"queueDatas":[{"brokerName":"b0","perm":6,"readQueueNums":1,"topicSysFlag":0,"writeQueueNums":1}]}`, fc.ln.Addr()))
		case remoting.SendMessage, remoting.SendMessageV2:
			resp.ExtFields = map[string]string{"msgId": "0A00000100002A9F0000000000000000", "queueId": "0", "queueOffset": "0"}
		}
		if req.IsOneway() {
			continue
		}
		frame, err := remoting.Encode(resp)
		if err != nil {
			return
		}
		if _, err := c.Write(frame); err != nil {
			return
		}
		if req.Code == remoting.SendMessage || req.Code == remoting.SendMessageV2 {
			fc.once.Do(func() { close(fc.sent) })
		}
	}
}

func (fc *fakeCluster) requests() []*remoting.Command {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return append([]*remoting.Command(nil), fc.reqs...)
}

// TestOfficialGoClientSignatures sends a message with the official Go
// client's credentials (primitive.Credentials, its ACL interceptor signs
// every request) and verifies every signed request it sent: the route
// query (ext fields only) and the send (ext fields and a body).
func sendWithGoClient(t *testing.T, instance string, cred primitive.Credentials) *fakeCluster {
	t.Helper()
	rlog.SetLogLevel("fatal")
	fc := newFakeCluster(t)
	p, err := producer.NewDefaultProducer(
		producer.WithNameServer([]string{fc.ln.Addr().String()}),
		producer.WithCredentials(cred),
		producer.WithRetry(0),
		producer.WithGroupName("PID_SIGN"),
		producer.WithInstanceName(instance),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.SendSync(ctx, primitive.NewMessage("TopicA", []byte("signed body"))); err != nil {
		t.Fatalf("send: %v", err)
	}
	<-fc.sent
	return fc
}

func TestOfficialGoClientSignatures(t *testing.T) {
	fc := sendWithGoClient(t, "sign", primitive.Credentials{AccessKey: "alice", SecretKey: "s3cret"})
	users := map[string]*User{"alice": {Username: "alice", Password: "s3cret", Type: Normal, Status: Enabled}}
	lookup := func(n string) *User { return users[n] }
	var route, send bool
	for _, req := range fc.requests() {
		if req.Ext(SignatureField) == "" {
			continue
		}
		if _, err := Authenticate(req.ExtFields, req.Body, req.Version, lookup); err != nil {
			t.Errorf("%s: %v (ext %v)", remoting.RequestName(req.Code), err, req.ExtFields)
		}
		if err := Verify(req.ExtFields, req.Body, req.Version, "not the secret"); err == nil {
			t.Errorf("%s: verified with a wrong secret", remoting.RequestName(req.Code))
		}
		switch req.Code {
		case remoting.GetRouteinfoByTopic:
			route = true
		case remoting.SendMessage, remoting.SendMessageV2:
			send = len(req.Body) > 0
		}
	}
	if !route || !send {
		t.Fatalf("signed route query seen %v, signed send with a body seen %v; requests: %d", route, send, len(fc.requests()))
	}
}

// TestOfficialGoClientSecurityToken pins down a known difference: the Go
// client sends SecurityToken but leaves it out of what it signs, where
// RocketMQ's server (and Java's client) put it in. Spool verifies as
// RocketMQ's server does, so such a request fails, and it would verify
// without the token.
func TestOfficialGoClientSecurityToken(t *testing.T) {
	fc := sendWithGoClient(t, "token", primitive.Credentials{AccessKey: "alice", SecretKey: "s3cret", SecurityToken: "tok"})
	seen := 0
	for _, req := range fc.requests() {
		if req.Ext(SignatureField) == "" {
			continue
		}
		seen++
		if req.Ext(SecurityTokenField) != "tok" {
			t.Fatalf("%s: no security token sent", remoting.RequestName(req.Code))
		}
		if err := Verify(req.ExtFields, req.Body, req.Version, "s3cret"); err == nil {
			t.Errorf("%s: verified although the client left the token out of the signature", remoting.RequestName(req.Code))
		}
		without := map[string]string{}
		for k, v := range req.ExtFields {
			if k != SecurityTokenField {
				without[k] = v
			}
		}
		if err := Verify(without, req.Body, req.Version, "s3cret"); err != nil {
			t.Errorf("%s: not what the Go client signs either: %v", remoting.RequestName(req.Code), err)
		}
	}
	if seen == 0 {
		t.Fatal("no signed request")
	}
}
