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

func TestCloseWaitIsTheLeaseAndAMargin(t *testing.T) {
	for _, tt := range []struct {
		timeout, want time.Duration
	}{
		{DefaultTimeout, 6 * time.Second},
		{3 * time.Second, 1800 * time.Millisecond},
		{600 * time.Second, 360 * time.Second},
	} {
		got := CloseWait(tt.timeout)
		if got != tt.want {
			t.Errorf("CloseWait(%v) = %v, want %v", tt.timeout, got, tt.want)
		}
		// Never shorter than the broker's lease (internal/failover:
		// half the timeout), never as long as the timeout.
		if got < tt.timeout/2 || got >= tt.timeout {
			t.Errorf("CloseWait(%v) = %v outside [lease, timeout)", tt.timeout, got)
		}
	}
}

// TestClosedConnectionExpiry: when a replica counts as dead after the
// connection its heartbeats came on closes, and what clears it. Each
// step is applied at the clock's time, then the replica's liveness is
// checked.
func TestClosedConnectionExpiry(t *testing.T) {
	type step struct {
		at   time.Duration // since the start
		hb   uint64        // a heartbeat on this connection (0: none)
		anon bool          // a heartbeat on no known connection
		shut uint64        // this connection closes (0: none)
	}
	type check struct {
		at     time.Duration
		alive  bool
		expiry time.Duration // since the start
	}
	const timeout = 10 * time.Second
	tests := []struct {
		name   string
		steps  []step
		checks []check
	}{
		{"open connection: the full timeout",
			[]step{{at: 0, hb: 1}},
			[]check{{9999 * time.Millisecond, true, 10 * time.Second}, {10 * time.Second, false, 10 * time.Second}}},
		{"closed at once: the lease and margin since the last heartbeat",
			[]step{{at: 0, hb: 1}, {at: 100 * time.Millisecond, shut: 1}},
			[]check{{5999 * time.Millisecond, true, 6 * time.Second}, {6 * time.Second, false, 6 * time.Second}}},
		{"closed late: dead at the close when the wait has passed",
			[]step{{at: 0, hb: 1}, {at: 7 * time.Second, shut: 1}},
			[]check{{7 * time.Second, false, 6 * time.Second}}},
		{"another connection closes: nothing changes",
			[]step{{at: 0, hb: 1}, {at: time.Second, shut: 2}},
			[]check{{7 * time.Second, true, 10 * time.Second}}},
		{"a heartbeat on a new connection clears the mark",
			[]step{{at: 0, hb: 1}, {at: time.Second, shut: 1}, {at: 2 * time.Second, hb: 2}},
			[]check{{7 * time.Second, true, 12 * time.Second}, {12 * time.Second, false, 12 * time.Second}}},
		{"a late heartbeat on the closed connection keeps the mark",
			[]step{{at: 0, hb: 1}, {at: time.Second, shut: 1}, {at: 2 * time.Second, hb: 1}},
			[]check{{7999 * time.Millisecond, true, 8 * time.Second}, {8 * time.Second, false, 8 * time.Second}}},
		{"a heartbeat on no known connection clears the mark",
			[]step{{at: 0, hb: 1}, {at: time.Second, shut: 1}, {at: 2 * time.Second, anon: true}},
			[]check{{11 * time.Second, true, 12 * time.Second}}},
		{"unknown connections never close",
			[]step{{at: 0, anon: true}, {at: time.Second, shut: 0}},
			[]check{{9 * time.Second, true, 10 * time.Second}}},
		{"closed, reconnected, closed again: from the last heartbeat",
			[]step{{at: 0, hb: 1}, {at: time.Second, shut: 1}, {at: 3 * time.Second, hb: 2}, {at: 4 * time.Second, shut: 2}},
			[]check{{8999 * time.Millisecond, true, 9 * time.Second}, {9 * time.Second, false, 9 * time.Second}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Unix(1000, 0)
			clk := clock.NewManual(t0)
			tb := New(clk)
			hb := Heartbeat{ClusterName: "c", BrokerName: "b", BrokerID: 1, Timeout: timeout}
			for _, s := range tt.steps {
				clk.Set(t0.Add(s.at))
				switch {
				case s.anon:
					tb.Heartbeat(hb)
				case s.hb != 0:
					tb.HeartbeatOn(s.hb, hb)
				default:
					tb.ConnClosed(s.shut)
				}
			}
			for _, c := range tt.checks {
				clk.Set(t0.Add(c.at))
				if got := tb.Alive("c", "b", 1); got != c.alive {
					t.Errorf("at %v: alive %v, want %v", c.at, got, c.alive)
				}
				i, ok := tb.Info("c", "b", 1)
				if !ok || !i.Expiry().Equal(t0.Add(c.expiry)) {
					t.Errorf("at %v: expiry %v, want %v", c.at, i.Expiry().Sub(t0), c.expiry)
				}
			}
		})
	}
}

// TestConnClosedMarksEveryReplicaOnIt: one connection may carry the
// heartbeats of several replicas; its close marks them all, once, and
// the scan then drops them at the shorter expiry.
func TestConnClosedMarksEveryReplicaOnIt(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	tb := New(clk)
	for _, id := range []int64{2, 1} {
		tb.HeartbeatOn(7, Heartbeat{ClusterName: "c", BrokerName: "b", BrokerID: id, Timeout: 2 * time.Second})
	}
	if !tb.HeartbeatOn(8, Heartbeat{ClusterName: "c", BrokerName: "b", BrokerID: 3, Timeout: 2 * time.Second}) {
		t.Fatal("a first heartbeat is not fresh")
	}
	if tb.HeartbeatOn(8, Heartbeat{ClusterName: "c", BrokerName: "b", BrokerID: 3, Timeout: 2 * time.Second}) {
		t.Fatal("a second heartbeat is fresh")
	}
	got := tb.ConnClosed(7)
	if len(got) != 2 || got[0].BrokerID != 1 || got[1].BrokerID != 2 || !got[0].Closed || got[0].Conn != 7 {
		t.Fatalf("closed %+v", got)
	}
	if again := tb.ConnClosed(7); len(again) != 0 {
		t.Fatalf("closed twice: %+v", again)
	}
	clk.Advance(1199 * time.Millisecond)
	if e := tb.Expire(); len(e) != 0 {
		t.Fatalf("expired inside the wait: %+v", e)
	}
	clk.Advance(time.Millisecond) // CloseWait(2 s) = 1.2 s
	if e := tb.Expire(); len(e) != 2 || e[0].BrokerID != 1 || e[1].BrokerID != 2 {
		t.Fatalf("expired %+v, want 1 and 2", e)
	}
	if !tb.Alive("c", "b", 3) {
		t.Fatal("a replica on another connection was dropped")
	}
	if !tb.HeartbeatOn(9, Heartbeat{ClusterName: "c", BrokerName: "b", BrokerID: 1, Timeout: 2 * time.Second}) {
		t.Fatal("a heartbeat after Expire dropped the replica is not fresh")
	}
}

// TestElectableEndsAtTheClose: a replica whose heartbeat connection
// closed is alive until its expiry but no longer electable; a heartbeat on
// a new connection makes it electable again.
func TestElectableEndsAtTheClose(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	tb := New(clk)
	tb.HeartbeatOn(7, Heartbeat{ClusterName: "c", BrokerName: "b", BrokerID: 1, Timeout: 2 * time.Second})
	if !tb.Electable("c", "b", 1) {
		t.Fatal("a replica that just heartbeat is not electable")
	}
	tb.ConnClosed(7)
	if !tb.Alive("c", "b", 1) || tb.Electable("c", "b", 1) {
		t.Fatalf("after the close: alive %v electable %v, want alive and not electable", tb.Alive("c", "b", 1), tb.Electable("c", "b", 1))
	}
	tb.HeartbeatOn(8, Heartbeat{ClusterName: "c", BrokerName: "b", BrokerID: 1, Timeout: 2 * time.Second})
	if !tb.Electable("c", "b", 1) {
		t.Fatal("a heartbeat on a new connection did not make it electable")
	}
	clk.Advance(2 * time.Second)
	if tb.Electable("c", "b", 1) || tb.Electable("c", "b", 9) {
		t.Fatal("an expired or unknown replica is electable")
	}
}
