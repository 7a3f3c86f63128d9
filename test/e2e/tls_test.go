package e2e

import (
	"bufio"
	"context"
	"net"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/spoolmq/spool/remoting"
)

// With tls.server.mode=enforcing (RocketMQ's test certificate), the
// official client with WithTls sends through the name server and the
// broker; a plain client is closed without an answer.
func TestTLSEnforcing(t *testing.T) {
	s := startSpool(t, "tls.server.mode=enforcing")
	// The client's WithTls sets its process-wide default remoting
	// configuration: put it back for the tests after this one (cleanups
	// run last-in first-out, so this runs after the producer's shutdown).
	t.Cleanup(func() {
		if _, err := producer.NewDefaultProducer(producer.WithNameServer([]string{s.namesrvAddr}), producer.WithTls(false)); err != nil {
			t.Errorf("reset WithTls: %v", err)
		}
	})
	p := s.newProducer(t, "pg-tls", producer.WithTls(true))
	var err error
	waitFor(t, 30*time.Second, "a send over TLS", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var r *primitive.SendResult
		r, err = p.SendSync(ctx, primitive.NewMessage("TLSTopic", []byte("over tls")))
		return err == nil && r.Status == primitive.SendOK
	})

	for _, addr := range []string{s.brokerAddr, s.namesrvAddr} {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		req := remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil)
		frame, err := remoting.Encode(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(frame); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if n, err := bufio.NewReader(c).Read(make([]byte, 64)); err == nil {
			t.Fatalf("%s: a plain client read %d bytes, want the connection closed", addr, n)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("%s: a plain client was left open", addr)
		}
		c.Close()
	}
}
