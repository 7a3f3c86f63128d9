package processor

import (
	"context"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// A heartbeat is stamped by the injected clock: the expiry scan, given
// times on that clock, keeps the producer until the expiry has passed
// since the heartbeat and drops it after.
func TestHeartbeatTimeReadsTheClock(t *testing.T) {
	start := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clock.NewManual(start)
	p := newProcessor(t, &fakeStore{})
	p.clock = clk
	srv := transport.NewServer(transport.ServerConfig{})
	srv.Register(remoting.HeartBeat, p.HandleHeartbeat, nil)
	la, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := transport.NewClient(transport.ClientConfig{})
	t.Cleanup(func() {
		cl.Close()
		srv.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := remoting.NewRequest(remoting.HeartBeat, nil, []byte(`{"clientID":"c@1","producerDataSet":[{"groupName":"pg"}]}`))
	resp, err := cl.Invoke(ctx, la.String(), req)
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %v %+v", err, resp)
	}
	const expiry = 2 * time.Minute
	p.producers.ScanExpired(start.Add(expiry), expiry)
	if p.producers.AnyConn("pg") == nil {
		t.Fatal("producer expired before its expiry passed on the clock")
	}
	p.producers.ScanExpired(start.Add(expiry+time.Millisecond), expiry)
	if p.producers.AnyConn("pg") != nil {
		t.Fatal("producer kept after its expiry passed on the clock")
	}
}
