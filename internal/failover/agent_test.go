package failover

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/controller"
	"github.com/spoolmq/spool/internal/controller/consensus"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// fakeReplica records what the agent asks of the replication engine and
// reports the figures a test sets.
type fakeReplica struct {
	mu       sync.Mutex
	calls    []string
	events   chan string
	epoch    int32
	max      int64
	confirm  int64
	replicas []ReplicaState
	fenced   bool
	set      []int64
	setEpoch int32
}

func newFakeReplica() *fakeReplica { return &fakeReplica{events: make(chan string, 100), fenced: true} }

func (f *fakeReplica) record(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
	f.events <- s
}

func (f *fakeReplica) ChangeToMaster(epoch int32, set []int64, setEpoch int32) error {
	f.mu.Lock()
	f.epoch, f.set, f.setEpoch = epoch, set, setEpoch
	f.mu.Unlock()
	f.record(fmt.Sprintf("master epoch=%d set=%v", epoch, set))
	return nil
}

func (f *fakeReplica) ChangeToSlave(master int64, haAddr string, epoch int32) error {
	f.mu.Lock()
	f.epoch = epoch
	f.mu.Unlock()
	f.record(fmt.Sprintf("slave of %d at %s epoch=%d", master, haAddr, epoch))
	return nil
}

func (f *fakeReplica) SetSyncStateSet(set []int64, epoch int32) {
	f.mu.Lock()
	f.set, f.setEpoch = set, epoch
	f.mu.Unlock()
	f.record(fmt.Sprintf("set %v epoch=%d", set, epoch))
}

func (f *fakeReplica) SetFenced(v bool) {
	f.mu.Lock()
	f.fenced = v
	f.mu.Unlock()
	f.record(fmt.Sprintf("fenced=%v", v))
}

func (f *fakeReplica) MasterEpoch() int32 { f.mu.Lock(); defer f.mu.Unlock(); return f.epoch }
func (f *fakeReplica) MaxOffset() int64   { f.mu.Lock(); defer f.mu.Unlock(); return f.max }
func (f *fakeReplica) ConfirmOffset() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.confirm
}
func (f *fakeReplica) Replicas() []ReplicaState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.replicas)
}

func (f *fakeReplica) isFenced() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.fenced }

// waitFor reads events until one equals want; a deadline only bounds a
// failing test.
func (f *fakeReplica) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case got := <-f.events:
			if got == want {
				return
			}
		case <-deadline:
			f.mu.Lock()
			defer f.mu.Unlock()
			t.Fatalf("no %q; calls so far %q", want, f.calls)
		}
	}
}

// drain forgets the events so far.
func (f *fakeReplica) drain() {
	for {
		select {
		case <-f.events:
		default:
			return
		}
	}
}

// startController starts a single-node controller on a loopback port,
// with its liveness and scan on clk, pushing role changes over TCP.
func startController(t *testing.T, clk clock.Clock) (*controller.Controller, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	raddr, tr := raft.NewInmemTransport("")
	rc := raft.DefaultConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = 300*time.Millisecond, 300*time.Millisecond
	rc.LeaderLeaseTimeout, rc.CommitTimeout = 150*time.Millisecond, 10*time.Millisecond
	node, err := consensus.Open(consensus.Config{ID: "n0", Peers: []consensus.Peer{{ID: "n0", Addr: string(raddr)}},
		Transport: tr, Raft: rc, LogOutput: io.Discard, OnLeader: controller.LeaderHook(addr)})
	if err != nil {
		t.Fatal(err)
	}
	pusher := transport.NewClient(transport.ClientConfig{})
	ctl := controller.New(node, controller.Options{Group: "g", Clock: clk, Notify: func(to string, req *remoting.Command) {
		go pusher.InvokeOneway(to, req)
	}})
	srv := transport.NewServer(transport.ServerConfig{})
	ctl.Register(srv, nil)
	if _, err := srv.Serve(ln); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		pusher.Close()
		node.Close()
	})
	deadline := time.Now().Add(20 * time.Second)
	for !node.Serving() {
		if time.Now().After(deadline) {
			t.Fatal("the controller did not lead")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return ctl, addr
}

// waitRole waits until the agent applied role in epoch; a deadline only
// bounds a failing test.
func waitRole(t *testing.T, a *Agent, role Role, epoch int32) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := a.Status()
		if st.Role == role && st.MasterEpoch == epoch {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %+v, want %v in epoch %d", st, role, epoch)
		}
		time.Sleep(time.Millisecond)
	}
}

type testBroker struct {
	agent *Agent
	rep   *fakeReplica
	srv   *transport.Server
	addr  string
	root  string
}

// startBroker builds an agent over a fake replica with its notify
// handler on a loopback port; nothing runs until the test steps it.
func startBroker(t *testing.T, clk clock.Clock, ctlAddr, root string) *testBroker {
	t.Helper()
	rep := newFakeReplica()
	cfg := DefaultConfig()
	cfg.ControllerAddr = ctlAddr
	a, err := New(Deps{Config: cfg, ClusterName: "c", BrokerName: "b", Replica: rep, FS: vfs.OS(), StoreRoot: root, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	srv := transport.NewServer(transport.ServerConfig{})
	srv.Register(remoting.NotifyBrokerRoleChanged, a.HandleNotify, nil)
	addr, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.Close()
		srv.Close()
	})
	return &testBroker{agent: a, rep: rep, srv: srv, addr: addr.String(), root: root}
}

// TestFailoverAgainstController drives two brokers of one name against a
// real controller: ids, roles, the sync-state set, the lease and an
// election after the master goes silent.
func TestFailoverAgainstController(t *testing.T) {
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	ctl, ctlAddr := startController(t, clk)
	ctx := context.Background()
	b1 := startBroker(t, clk, ctlAddr, t.TempDir())
	b2 := startBroker(t, clk, ctlAddr, t.TempDir())

	// The first broker gets id 1 and, electing itself, becomes master.
	if err := b1.agent.Bootstrap(ctx, b1.addr); err != nil {
		t.Fatal(err)
	}
	b1.rep.waitFor(t, "master epoch=1 set=[1]")
	if st := b1.agent.Status(); st.BrokerID != 1 || st.Role != RoleMaster || !st.Fenced || st.Leader != ctlAddr {
		t.Fatalf("broker 1: %+v", st)
	}
	// The second gets id 2 and is told it is a slave of 1.
	if err := b2.agent.Bootstrap(ctx, b2.addr); err != nil {
		t.Fatal(err)
	}
	b2.rep.waitFor(t, "slave of 1 at "+DefaultHAAddr(b1.addr)+" epoch=1")
	for _, b := range []*testBroker{b1, b2} {
		id, ok, err := b.agent.files.Load(false)
		if !ok || err != nil || id.BrokerID != b.agent.Status().BrokerID {
			t.Fatalf("%s: %+v ok=%v err=%v", IdentityFile, id, ok, err)
		}
		if _, ok, _ := b.agent.files.Load(true); ok {
			t.Fatalf("%s left behind", TempIdentityFile)
		}
	}
	if b2.agent.Status().BrokerID != 2 {
		t.Fatalf("broker 2: %+v", b2.agent.Status())
	}

	// A new master acknowledges only after its first lease round.
	if !b1.rep.isFenced() {
		t.Fatal("master unfenced before a lease round")
	}
	b1.agent.HeartbeatOnce(ctx)
	b2.agent.HeartbeatOnce(ctx)
	if b1.rep.isFenced() {
		t.Fatal("master still fenced after a lease round")
	}
	if !b2.rep.isFenced() {
		t.Fatal("slave unfenced")
	}

	// The sync-state set grows once the slave caught up to the confirm
	// offset.
	b1.rep.mu.Lock()
	b1.rep.confirm, b1.rep.max = 4096, 4096
	b1.rep.replicas = []ReplicaState{{BrokerID: 2, Addr: b2.addr, AckOffset: 4000}}
	b1.rep.mu.Unlock()
	b1.agent.CheckSyncStateSetOnce(ctx)
	if st := b1.agent.Status(); !slices.Equal(st.SyncStateSet, []int64{1}) {
		t.Fatalf("slave behind joined: %+v", st)
	}
	b1.rep.mu.Lock()
	b1.rep.replicas = []ReplicaState{{BrokerID: 2, Addr: b2.addr, AckOffset: 4096, CaughtUpAt: clk.Now()}}
	b1.rep.mu.Unlock()
	b1.rep.drain()
	// The round between the periodic ones proposes the join at once.
	b1.agent.ExpandSyncStateSetOnce(ctx)
	b1.rep.waitFor(t, "set [1 2] epoch=2")
	// The joiner counted for acknowledgements before the controller was
	// asked, not only once it answered.
	b1.rep.mu.Lock()
	union, committed := slices.Index(b1.rep.calls, "set [1 2] epoch=1"), slices.Index(b1.rep.calls, "set [1 2] epoch=2")
	b1.rep.mu.Unlock()
	if union < 0 || union > committed {
		t.Fatalf("the joiner was not counted while the expansion was in flight: calls %q", b1.rep.calls)
	}

	// The master is cut from the controller: it fences itself before the
	// controller counts it dead.
	clk.Advance(3 * time.Second)
	b2.agent.HeartbeatOnce(ctx)
	b1.agent.CheckLease()
	if b1.rep.isFenced() {
		t.Fatal("fenced inside the lease")
	}
	clk.Advance(2 * time.Second) // 5 s since the last round: the lease
	b2.agent.HeartbeatOnce(ctx)
	b1.agent.CheckLease()
	if !b1.rep.isFenced() {
		t.Fatal("master not fenced at the end of its lease")
	}
	if !ctl.Liveness().Alive("c", "b", 1) {
		t.Fatal("the controller counted the master dead before its lease ended")
	}
	ctl.Scan()
	b2.rep.drain()

	// The controller counts it dead, elects the slave and tells it.
	clk.Advance(5 * time.Second)
	b2.agent.HeartbeatOnce(ctx)
	ctl.Scan()
	b2.rep.waitFor(t, "master epoch=2 set=[2]")
	waitRole(t, b2.agent, RoleMaster, 2) // the push is applied on the server's goroutine
	if !b2.rep.isFenced() {
		t.Fatal("new master unfenced before a lease round")
	}
	b2.agent.HeartbeatOnce(ctx)
	if b2.rep.isFenced() {
		t.Fatal("new master fenced after a lease round")
	}

	// A stale push for the old epoch changes nothing.
	b2.rep.drain()
	push := remoting.NewRequest(remoting.NotifyBrokerRoleChanged, map[string]string{
		"masterAddress": b1.addr, "masterBrokerId": "1", "masterEpoch": "1", "syncStateSetEpoch": "2"}, []byte(`{"syncStateSet":[1,2],"syncStateSetEpoch":2}`))
	if resp := b2.agent.HandleNotify(nil, push); resp.Code != remoting.Success {
		t.Fatalf("notify answered %d", resp.Code)
	}
	if st := b2.agent.Status(); st.Role != RoleMaster || st.MasterEpoch != 2 || len(b2.rep.events) != 0 {
		t.Fatalf("stale push applied: %+v, events %d", st, len(b2.rep.events))
	}

	// The old master's contact returns: it learns the newer epoch, becomes
	// a slave and stays fenced.
	b1.agent.HeartbeatOnce(ctx)
	b1.rep.waitFor(t, "slave of 2 at "+DefaultHAAddr(b2.addr)+" epoch=2")
	waitRole(t, b1.agent, RoleSlave, 2)
	if st := b1.agent.Status(); st.Role != RoleSlave || !st.Fenced || !b1.rep.isFenced() {
		t.Fatalf("old master: %+v", st)
	}

	// A restart keeps the id: brokerIdentity is read, no new id applied.
	b1.agent.Close()
	again := startBroker(t, clk, ctlAddr, b1.root)
	if err := again.agent.Bootstrap(ctx, b1.addr); err != nil {
		t.Fatal(err)
	}
	if st := again.agent.Status(); st.BrokerID != 1 {
		t.Fatalf("restarted broker got id %d", st.BrokerID)
	}
	again.rep.waitFor(t, "slave of 2 at "+DefaultHAAddr(b2.addr)+" epoch=2")

	// A broker that stopped after writing its temp file resumes with
	// APPLY_BROKER_ID; when its id went to another broker meanwhile, it
	// asks for a new one.
	root := t.TempDir()
	files := IdentityFiles{FS: vfs.OS(), Root: root}
	if err := files.Store(Identity{ClusterName: "c", BrokerName: "b", BrokerID: 1, CheckCode: "10.9.9.9:1;1"}, true); err != nil {
		t.Fatal(err)
	}
	b3 := startBroker(t, clk, ctlAddr, root)
	if err := b3.agent.Bootstrap(ctx, b3.addr); err != nil {
		t.Fatal(err)
	}
	if st := b3.agent.Status(); st.BrokerID != 3 {
		t.Fatalf("broker with a taken id in its temp file got id %d, want 3", st.BrokerID)
	}
	if id, ok, _ := files.Load(false); !ok || id.BrokerID != 3 {
		t.Fatalf("%s: %+v", IdentityFile, id)
	}
	if _, ok, _ := files.Load(true); ok {
		t.Fatalf("%s left behind", TempIdentityFile)
	}
}

// TestFollowsNotLeader sends a request to a controller that is not the
// leader: the agent learns the leader and sends it there.
func TestFollowsNotLeader(t *testing.T) {
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	_, leader := startController(t, clk)
	fake := transport.NewServer(transport.ServerConfig{})
	fake.RegisterDefault(func(_ *transport.Conn, req *remoting.Command) *remoting.Command {
		if req.Code == remoting.ControllerGetMetadataInfo {
			resp := remoting.NewResponse(req, remoting.Success, "")
			resp.SetExt("isLeader", "false")
			resp.SetExt("controllerLeaderAddress", leader)
			return resp
		}
		return remoting.NewResponse(req, remoting.ControllerNotLeader, "not the leader")
	})
	fa, err := fake.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	// Only the follower is configured: the leader is known by the
	// address the follower names.
	b := startBroker(t, clk, fa.String(), t.TempDir())
	b.agent.ctl.setLeader(fa.String())
	if err := b.agent.Bootstrap(context.Background(), b.addr); err != nil {
		t.Fatal(err)
	}
	b.rep.waitFor(t, "master epoch=1 set=[1]")
	if st := b.agent.Status(); st.Leader != leader || st.BrokerID != 1 {
		t.Fatalf("%+v, leader %s", st, leader)
	}
	// The lease is renewed by the leader under that address.
	b.agent.HeartbeatOnce(context.Background())
	if b.rep.isFenced() {
		t.Fatal("lease not renewed through the named leader")
	}
	b.agent.ctl.setLeader(fa.String())
	resp, err := b.agent.ctl.callLeader(context.Background(), b.agent.replicaInfoRequest)
	if err != nil || resp.Ext("masterBrokerId") != "1" || b.agent.ctl.leaderAddr() != leader {
		t.Fatalf("after NOT_LEADER: %v %v, leader %s", resp, err, b.agent.ctl.leaderAddr())
	}
}
