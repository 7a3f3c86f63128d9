package liveness

import (
	"slices"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/controller/replicas"
)

func TestTimeoutFromHeartbeat(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	tb := New(clk)
	prio := int32(3)
	tb.Heartbeat(Heartbeat{ClusterName: "c", BrokerName: "b", BrokerID: 1, Timeout: 3 * time.Second, Epoch: 2, MaxOffset: 77, Priority: &prio})
	tb.Heartbeat(Heartbeat{ClusterName: "c", BrokerName: "b", BrokerID: 2}) // default 10 s
	clk.Advance(2999 * time.Millisecond)
	if !tb.Alive("c", "b", 1) || !tb.Alive("c", "b", 2) {
		t.Fatal("both alive before their timeouts")
	}
	clk.Advance(time.Millisecond)
	if tb.Alive("c", "b", 1) {
		t.Fatal("broker 1 alive after its 3 s timeout")
	}
	if !tb.Alive("c", "b", 2) {
		t.Fatal("broker 2 took the 3 s timeout of another heartbeat")
	}
	c, ok := tb.Candidate("c", "b", 1)
	if !ok || c != (replicas.Candidate{Epoch: 2, MaxOffset: 77, Priority: 3}) {
		t.Fatalf("candidate %+v %v", c, ok)
	}
	if c, _ := tb.Candidate("c", "b", 2); c.Priority != DefaultPriority {
		t.Fatalf("default priority %d", c.Priority)
	}
	clk.Advance(7 * time.Second)
	if tb.Alive("c", "b", 2) {
		t.Fatal("broker 2 alive after 10 s")
	}
	got := tb.Expire()
	if len(got) != 2 || got[0].BrokerID != 1 || got[1].BrokerID != 2 {
		t.Fatalf("expired %+v", got)
	}
	if _, ok := tb.Info("c", "b", 1); ok {
		t.Fatal("expired replica still in the table")
	}
}

// TestScanFindsDeadMasters: the leader's scan elects only for sets whose
// master is dead and that still have a live replica.
func TestScanFindsDeadMasters(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	tb := New(clk)
	st := replicas.NewState()
	for _, name := range []string{"alive-master", "dead-master", "all-dead", "never-elected"} {
		for id := int64(1); id <= 2; id++ {
			r := st.ApplyBrokerID("c", name, id, "a;0")
			for _, e := range r.Events {
				if err := st.Apply(e, nil); err != nil {
					t.Fatal(err)
				}
			}
			tb.Heartbeat(Heartbeat{ClusterName: "c", BrokerName: name, BrokerID: id, Timeout: 2 * time.Second})
		}
		if name == "never-elected" {
			continue
		}
		r := st.ElectMaster(name, 1, false, replicas.Policy{}, tb)
		for _, e := range r.Events {
			if err := st.Apply(e, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := tb.NeedElection(st); len(got) != 0 {
		t.Fatalf("all masters alive, scan wants %v", got)
	}
	clk.Advance(time.Second)
	// Keep alive: alive-master's both; dead-master's slave; never-elected's slave.
	for _, k := range []struct {
		n  string
		id int64
	}{{"alive-master", 1}, {"alive-master", 2}, {"dead-master", 2}, {"never-elected", 2}} {
		tb.Heartbeat(Heartbeat{ClusterName: "c", BrokerName: k.n, BrokerID: k.id, Timeout: 2 * time.Second})
	}
	clk.Advance(1500 * time.Millisecond)
	if got := tb.NeedElection(st); !slices.Equal(got, []string{"dead-master"}) {
		t.Fatalf("scan wants %v, want [dead-master]", got)
	}
}
