package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// serverMaxConnectionsPerIp bounds the broker's connections from one
// address: one more is answered SYSTEM_BUSY naming the key and counted
// in the runtime info.
func TestBrokerConnectionLimitPerIP(t *testing.T) {
	e := startBroker(t, func(c *Config, _ *store.Config) { c.ServerMaxConnectionsPerIp = 1 })
	if r := e.invoke(goRequest(remoting.GetBrokerRuntimeInfo, nil, nil)); r.Code != remoting.Success {
		t.Fatalf("first connection: code %d %q", r.Code, r.Remark)
	}
	second := transport.NewClient(transport.ClientConfig{DialTimeout: 3 * time.Second})
	defer second.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := second.Invoke(ctx, e.b.Addr(), goRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != remoting.SystemBusy || !strings.Contains(r.Remark, "serverMaxConnectionsPerIp") {
		t.Fatalf("second connection: code %d %q", r.Code, r.Remark)
	}
	if got := e.b.RuntimeInfo()["connectionsRefusedPerIp"]; got != "1" {
		t.Fatalf("connectionsRefusedPerIp = %q, want 1", got)
	}
}
