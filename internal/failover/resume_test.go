package failover

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

func TestCovers(t *testing.T) {
	// This broker: epoch 1 from 0, epoch 3 from 1000, its log ends at 1500.
	own := []Epoch{{1, 0}, {3, 1000}}
	for _, tt := range []struct {
		name string
		m    MemberLog
		want bool
	}{
		{"empty member", MemberLog{}, true},
		{"member with an epoch but no byte", MemberLog{Epochs: []Epoch{{1, 0}}, MaxOffset: 0}, true},
		{"same epoch, shorter", MemberLog{Epochs: []Epoch{{1, 0}, {3, 1000}}, MaxOffset: 1200}, true},
		{"same epoch, same end", MemberLog{Epochs: []Epoch{{1, 0}, {3, 1000}}, MaxOffset: 1500}, true},
		{"same epoch, longer: the lost tail", MemberLog{Epochs: []Epoch{{1, 0}, {3, 1000}}, MaxOffset: 1501}, false},
		{"older epoch, within it", MemberLog{Epochs: []Epoch{{1, 0}}, MaxOffset: 1000}, true},
		{"older epoch, past its end here", MemberLog{Epochs: []Epoch{{1, 0}}, MaxOffset: 1001}, false},
		{"later epoch", MemberLog{Epochs: []Epoch{{1, 0}, {3, 1000}, {4, 1400}}, MaxOffset: 1450}, false},
		{"later epoch that holds no byte", MemberLog{Epochs: []Epoch{{1, 0}, {3, 1000}, {4, 1400}}, MaxOffset: 1400}, true},
		{"an epoch this broker never had", MemberLog{Epochs: []Epoch{{1, 0}, {2, 900}}, MaxOffset: 950}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Covers(own, 1500, tt.m); got != tt.want {
				t.Errorf("Covers = %v, want %v", got, tt.want)
			}
		})
	}
	// The log's end bounds its last epoch: an epoch start past the end
	// (a power cut dropped bytes below it) holds nothing.
	if Covers([]Epoch{{1, 0}, {2, 800}}, 700, MemberLog{Epochs: []Epoch{{1, 0}}, MaxOffset: 750}) {
		t.Error("a member past this broker's end in an earlier epoch is covered")
	}
}

func TestDecideResume(t *testing.T) {
	own := []Epoch{{1, 0}, {2, 1000}}
	at := func(id int64, max int64, es ...Epoch) MemberLog {
		return MemberLog{BrokerID: id, Reachable: true, Epochs: es, MaxOffset: max}
	}
	silent := func(id int64) MemberLog { return MemberLog{BrokerID: id} }
	e1, e2, e3 := Epoch{1, 0}, Epoch{2, 1000}, Epoch{3, 1300}
	for _, tt := range []struct {
		name     string
		members  []MemberLog
		timedOut bool
		want     Resume
	}{
		{name: "no other member", want: Resume{Action: ResumeServe}},
		{name: "members hold the same",
			members: []MemberLog{at(2, 1200, e1, e2), at(3, 1200, e1, e2)}, want: Resume{Action: ResumeServe}},
		{name: "members hold less",
			members: []MemberLog{at(2, 1100, e1, e2), at(3, 900, e1)}, want: Resume{Action: ResumeServe}},
		{name: "a member holds the lost tail",
			members: []MemberLog{at(2, 1100, e1, e2), at(3, 1350, e1, e2)},
			want:    Resume{Action: ResumeElect, Elect: 3, Ahead: []int64{3}}},
		{name: "the one holding the most is elected",
			members: []MemberLog{at(2, 1400, e1, e2), at(3, 1350, e1, e2)},
			want:    Resume{Action: ResumeElect, Elect: 2, Ahead: []int64{2, 3}}},
		{name: "a later epoch wins over a larger end",
			members: []MemberLog{at(2, 1400, e1, e2), at(3, 1350, e1, e2, e3)},
			want:    Resume{Action: ResumeElect, Elect: 3, Ahead: []int64{2, 3}}},
		{name: "ties go to the lowest id",
			members: []MemberLog{at(4, 1350, e1, e2), at(3, 1350, e1, e2)},
			want:    Resume{Action: ResumeElect, Elect: 3, Ahead: []int64{3, 4}}},
		{name: "a silent member: wait",
			members: []MemberLog{at(2, 1200, e1, e2), silent(3)},
			want:    Resume{Action: ResumeWait, Silent: []int64{3}}},
		{name: "a silent member: wait even when another holds more",
			members: []MemberLog{at(2, 1400, e1, e2), silent(3)},
			want:    Resume{Action: ResumeWait, Ahead: []int64{2}, Silent: []int64{3}}},
		{name: "silent past the bound: serve without it",
			members: []MemberLog{at(2, 1200, e1, e2), silent(3)}, timedOut: true,
			want: Resume{Action: ResumeServe, Silent: []int64{3}}},
		{name: "silent past the bound: elect among those that answered",
			members: []MemberLog{silent(2), at(3, 1400, e1, e2)}, timedOut: true,
			want: Resume{Action: ResumeElect, Elect: 3, Ahead: []int64{3}, Silent: []int64{2}}},
		{name: "all silent past the bound: serve",
			members: []MemberLog{silent(2), silent(3)}, timedOut: true,
			want: Resume{Action: ResumeServe, Silent: []int64{2, 3}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := DecideResume(ResumeInput{Epochs: own, End: 1200, Members: tt.members, TimedOut: tt.timedOut})
			if got.Action != tt.want.Action || got.Elect != tt.want.Elect ||
				!slices.Equal(got.Ahead, tt.want.Ahead) || !slices.Equal(got.Silent, tt.want.Silent) {
				t.Errorf("got %+v (%v), want %+v (%v)", got, got.Action, tt.want, tt.want.Action)
			}
		})
	}
}

// restartedMaster sets up a broker set whose master (id 1, epoch 1) and
// slave (id 2) are both in the sync-state set, then restarts the master
// on its store with its log ending at end: the controller names it
// master of epoch 1 again. peer, when not nil, answers
// GET_BROKER_EPOCH_CACHE for the slave. It returns the clock, the slave
// and the restarted master, which has not bootstrapped yet.
func restartedMaster(t *testing.T, end int64, peer func(*remoting.Command) *remoting.Command) (*clock.Manual, *testBroker, *testBroker) {
	t.Helper()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	_, ctlAddr := startController(t, clk)
	ctx := context.Background()
	b1 := startBroker(t, clk, ctlAddr, t.TempDir())
	b2 := startBroker(t, clk, ctlAddr, t.TempDir())
	if err := b1.agent.Bootstrap(ctx, b1.addr); err != nil {
		t.Fatal(err)
	}
	b1.rep.waitFor(t, "master epoch=1 set=[1]")
	if err := b2.agent.Bootstrap(ctx, b2.addr); err != nil {
		t.Fatal(err)
	}
	b2.rep.waitFor(t, "slave of 1 at "+DefaultHAAddr(b1.addr)+" epoch=1")
	b1.agent.HeartbeatOnce(ctx)
	b1.rep.mu.Lock()
	b1.rep.confirm, b1.rep.max = 4096, 4096
	b1.rep.replicas = []ReplicaState{{BrokerID: 2, Addr: b2.addr, AckOffset: 4096, CaughtUpAt: clk.Now()}}
	b1.rep.mu.Unlock()
	b1.agent.CheckSyncStateSetOnce(ctx)
	b1.rep.waitFor(t, "set [1 2] epoch=2")
	if peer != nil {
		b2.srv.Register(remoting.GetBrokerEpochCache, func(_ *transport.Conn, req *remoting.Command) *remoting.Command {
			return peer(req)
		}, nil)
	}

	b1.agent.Close()
	again := startBroker(t, clk, ctlAddr, b1.root)
	again.rep.mu.Lock()
	again.rep.epoch, again.rep.max = 1, end
	again.rep.mu.Unlock()
	again.addr = b1.addr
	return clk, b2, again
}

// epochCache answers GET_BROKER_EPOCH_CACHE as broker 2 of c/b holding
// epoch 1 up to max.
func epochCache(max int64) func(*remoting.Command) *remoting.Command {
	return func(req *remoting.Command) *remoting.Command {
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.Body = []byte(fmt.Sprintf(`{"brokerId":2,"brokerName":"b","clusterName":"c",`+
			`"epochList":[{"endOffset":9223372036854775807,"epoch":1,"startOffset":0}],"maxOffset":%d}`, max))
		return resp
	}
}

func (f *fakeReplica) called(prefix string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.ContainsFunc(f.calls, func(c string) bool { return strings.HasPrefix(c, prefix) })
}

// A master restarted with less than a member of its sync-state set holds
// asks for that member's election and follows it: it never takes its
// own epoch back.
func TestRestartedMasterBehindElectsTheMember(t *testing.T) {
	_, b2, m := restartedMaster(t, 3000, epochCache(4096))
	if err := m.agent.Bootstrap(context.Background(), m.addr); err != nil {
		t.Fatal(err)
	}
	m.rep.waitFor(t, "slave of 2 at "+DefaultHAAddr(b2.addr)+" epoch=2")
	waitRole(t, m.agent, RoleSlave, 2)
	b2.rep.waitFor(t, "master epoch=2 set=[2]")
	if m.rep.called("master") {
		t.Fatalf("the restarted master took a master role: %q", m.rep.calls)
	}
	if !m.rep.isFenced() {
		t.Fatal("the restarted master was unfenced")
	}
}

// A master restarted with everything its sync-state set holds takes its
// epoch back.
func TestRestartedMasterWholeServes(t *testing.T) {
	_, _, m := restartedMaster(t, 4096, epochCache(4096))
	if err := m.agent.Bootstrap(context.Background(), m.addr); err != nil {
		t.Fatal(err)
	}
	m.rep.waitFor(t, "master epoch=1 set=[1 2]")
	waitRole(t, m.agent, RoleMaster, 1)
}

// A member that does not answer is waited for, up to the heartbeat
// timeout, before the restarted master serves without it; meanwhile it
// has no role and a push naming it master of its epoch is not applied.
func TestRestartedMasterWaitsForSilentMember(t *testing.T) {
	clk, _, m := restartedMaster(t, 4096, nil) // broker 2 does not know GET_BROKER_EPOCH_CACHE
	done := make(chan error, 1)
	go func() { done <- m.agent.Bootstrap(context.Background(), m.addr) }()
	start := clk.Now()
	deadline := time.Now().Add(20 * time.Second)
	pushed := false
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if waited := clk.Now().Sub(start); waited < 10*time.Second {
				t.Fatalf("served after %v of the clock, before the heartbeat timeout", waited)
			}
			m.rep.waitFor(t, "master epoch=1 set=[1 2]")
			waitRole(t, m.agent, RoleMaster, 1)
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("still waiting; calls %q", m.rep.calls)
		}
		if st := m.agent.Status(); st.Role != RoleNone || m.rep.called("master") {
			t.Fatalf("took a role while a member was silent: %+v, calls %q", st, m.rep.calls)
		}
		if !pushed && clk.Waiters() > 0 { // the agent sleeps between rounds
			push := remoting.NewRequest(remoting.NotifyBrokerRoleChanged, map[string]string{
				"masterAddress": m.addr, "masterBrokerId": "1", "masterEpoch": "1", "syncStateSetEpoch": "2"},
				[]byte(`{"syncStateSet":[1,2],"syncStateSetEpoch":2}`))
			m.agent.HandleNotify(nil, push)
			pushed = true
			continue
		}
		time.Sleep(20 * time.Millisecond)
		clk.Advance(500 * time.Millisecond)
	}
}
