package ha

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"
)

// A slave with a ResolveMaster asks it before every connection attempt,
// with the address ChangeToSlave was given, and dials what it answers:
// the first answer names a port nothing listens on, the later ones the
// master, and the slave replicates from the master once it is named.
func TestAutoSwitchSlaveResolvesBeforeEveryDial(t *testing.T) {
	m := startReplica(t, 1, nil)
	if err := m.as.ChangeToMaster(1, []int64{1, 2}, 1); err != nil {
		t.Fatal(err)
	}
	end := putOn(t, m, 20, "m")
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()

	const given = "master-remoting-address"
	var mu sync.Mutex
	var asked []string
	s := startReplica(t, 2, func(c *SwitchConfig) {
		c.ResolveMaster = func(_ context.Context, addr string) string {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, addr)
			if len(asked) == 1 {
				return deadAddr
			}
			return m.addr
		}
	})
	if err := s.as.ChangeToSlave(1, given, 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the slave to catch up once the master is named", func() bool { return s.log.MaxOffset() == end })
	sameLogs(t, m.log, s.log)
	mu.Lock()
	n := len(asked)
	for _, a := range asked {
		if a != given {
			t.Errorf("the resolver was asked for %q, want %q", a, given)
		}
	}
	mu.Unlock()
	if n < 2 {
		t.Fatalf("the resolver was asked %d times, want once per connection attempt (at least 2)", n)
	}
	if c := s.as.client.connects(); c != 1 {
		t.Fatalf("%d connections opened, want 1 (the first attempt dialed a closed port)", c)
	}
}

func TestReconnectDelay(t *testing.T) {
	for _, c := range []struct {
		fails int
		max   time.Duration
		want  time.Duration
	}{
		{1, 5 * time.Second, 100 * time.Millisecond},
		{2, 5 * time.Second, 200 * time.Millisecond},
		{3, 5 * time.Second, 400 * time.Millisecond},
		{6, 5 * time.Second, 3200 * time.Millisecond},
		{7, 5 * time.Second, 5 * time.Second},
		{100, 5 * time.Second, 5 * time.Second},
		{1, 20 * time.Millisecond, 20 * time.Millisecond},
	} {
		if got := ReconnectDelay(c.fails, c.max); got != c.want {
			t.Errorf("ReconnectDelay(%d, %v) = %v, want %v", c.fails, c.max, got, c.want)
		}
	}
}
