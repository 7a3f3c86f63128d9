package controller

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/controller/consensus"
	"github.com/spoolmq/spool/remoting"
)

type pushed struct {
	addr string
	req  *remoting.Command
}

type rig struct {
	t     *testing.T
	clk   *clock.Manual
	nodes []*consensus.Node
	ctls  []*Controller
	mu    sync.Mutex
	push  []pushed
}

func newRig(t *testing.T) *rig { return newRigWith(t, nil) }

// newRigWith is newRig with each controller's options passed through opt.
func newRigWith(t *testing.T, opt func(*Options)) *rig {
	r := &rig{t: t, clk: clock.NewManual(time.Unix(1_700_000_000, 0))}
	var peers []consensus.Peer
	var trans []*raft.InmemTransport
	for i := 0; i < 3; i++ {
		addr, tr := raft.NewInmemTransport("")
		peers = append(peers, consensus.Peer{ID: fmt.Sprintf("n%d", i), Addr: string(addr)})
		trans = append(trans, tr)
	}
	for i, a := range trans {
		for j, b := range trans {
			if i != j {
				a.Connect(raft.ServerAddress(peers[j].Addr), b)
			}
		}
	}
	rc := raft.DefaultConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = 300*time.Millisecond, 300*time.Millisecond
	rc.LeaderLeaseTimeout, rc.CommitTimeout = 150*time.Millisecond, 10*time.Millisecond
	for i := range peers {
		n, err := consensus.Open(consensus.Config{ID: peers[i].ID, Peers: peers, Transport: trans[i], Raft: rc,
			LogOutput: io.Discard, OnLeader: LeaderHook(fmt.Sprintf("127.0.0.1:%d", 19876+i))})
		if err != nil {
			t.Fatal(err)
		}
		r.nodes = append(r.nodes, n)
		o := Options{Group: "g", Clock: r.clk, Notify: func(addr string, req *remoting.Command) {
			r.mu.Lock()
			r.push = append(r.push, pushed{addr, req})
			r.mu.Unlock()
		}}
		if opt != nil {
			opt(&o)
		}
		r.ctls = append(r.ctls, New(n, o))
	}
	t.Cleanup(func() {
		for _, n := range r.nodes {
			if n != nil {
				n.Close()
			}
		}
	})
	return r
}

func (r *rig) leader() int {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range r.nodes {
			if n != nil && n.Serving() {
				// Every live node must name its remoting address too.
				ok := true
				for j, c := range r.ctls {
					if r.nodes[j] == nil {
						continue
					}
					if _, addr := c.leaderInfo(); addr != fmt.Sprintf("127.0.0.1:%d", 19876+i) {
						ok = false
					}
				}
				if ok {
					return i
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.t.Fatal("no leader")
	return -1
}

func (r *rig) call(i int, code int32, ext map[string]string, body []byte) *remoting.Command {
	req := remoting.NewRequest(code, ext, body)
	return r.ctls[i].Handle(req)
}

func want(t *testing.T, resp *remoting.Command, code int32) {
	t.Helper()
	if resp.Code != code {
		t.Fatalf("code %d (%s), want %d", resp.Code, resp.Remark, code)
	}
}

func (r *rig) heartbeat(id int64, epoch int32, maxOffset int64) {
	for i, c := range r.ctls {
		if r.nodes[i] == nil {
			continue
		}
		want(r.t, c.Handle(remoting.NewRequest(remoting.BrokerHeartbeat, map[string]string{
			"clusterName": "c", "brokerName": "b", "brokerAddr": addrOf(id), "brokerId": fmt.Sprint(id),
			"epoch": fmt.Sprint(epoch), "maxOffset": fmt.Sprint(maxOffset), "confirmOffset": "0",
			"heartbeatTimeoutMills": "3000",
		}, nil)), remoting.Success)
	}
}

func addrOf(id int64) string { return fmt.Sprintf("10.0.0.%d:10911", id) }

// TestBrokerSetLifecycle drives a broker set through the controller
// requests as a broker's ReplicasManager sends them, then kills the
// leader's master and the controller leader.
func TestBrokerSetLifecycle(t *testing.T) {
	r := newRig(t)
	l := r.leader()
	f := (l + 1) % 3

	md := r.call(f, remoting.ControllerGetMetadataInfo, nil, nil)
	want(t, md, remoting.Success)
	if md.Ext("isLeader") != "false" || md.Ext("controllerLeaderId") != fmt.Sprintf("n%d", l) ||
		md.Ext("controllerLeaderAddress") != fmt.Sprintf("127.0.0.1:%d", 19876+l) || md.Ext("group") != "g" ||
		strings.Count(md.Ext("peers"), ";") != 2 {
		t.Fatalf("metadata from a follower: %v", md.ExtFields)
	}
	if r.call(l, remoting.ControllerGetMetadataInfo, nil, nil).Ext("isLeader") != "true" {
		t.Fatal("the leader does not say so")
	}
	nl := r.call(f, remoting.ControllerGetNextBrokerID, map[string]string{"clusterName": "c", "brokerName": "b"}, nil)
	want(t, nl, remoting.ControllerNotLeader)
	if !strings.Contains(nl.Remark, fmt.Sprintf("127.0.0.1:%d", 19876+l)) {
		t.Fatalf("NOT_LEADER names no leader: %q", nl.Remark)
	}

	// Three brokers take ids 1, 2, 3 and register.
	for id := int64(1); id <= 3; id++ {
		next := r.call(l, remoting.ControllerGetNextBrokerID, map[string]string{"clusterName": "c", "brokerName": "b"}, nil)
		want(t, next, remoting.Success)
		if next.Ext("nextBrokerId") != fmt.Sprint(id) {
			t.Fatalf("nextBrokerId %s, want %d", next.Ext("nextBrokerId"), id)
		}
		want(t, r.call(l, remoting.ControllerApplyBrokerID, map[string]string{"clusterName": "c", "brokerName": "b",
			"appliedBrokerId": fmt.Sprint(id), "registerCheckCode": addrOf(id) + ";1700000000000"}, nil), remoting.Success)
		want(t, r.call(l, remoting.ControllerRegisterBroker, map[string]string{"clusterName": "c", "brokerName": "b",
			"brokerId": fmt.Sprint(id), "brokerAddress": addrOf(id)}, nil), remoting.Success)
		r.heartbeat(id, 0, 0)
	}
	// Another broker may not take id 2.
	want(t, r.call(l, remoting.ControllerApplyBrokerID, map[string]string{"clusterName": "c", "brokerName": "b",
		"appliedBrokerId": "2", "registerCheckCode": "10.9.9.9:1;5"}, nil), remoting.ControllerBrokerIDInvalid)

	el := r.call(l, remoting.ControllerElectMaster, map[string]string{"clusterName": "c", "brokerName": "b", "brokerId": "1"}, nil)
	want(t, el, remoting.Success)
	if el.Ext("masterBrokerId") != "1" || el.Ext("masterAddress") != addrOf(1) || el.Ext("masterEpoch") != "1" || el.Ext("syncStateSetEpoch") != "1" {
		t.Fatalf("elect header %v", el.ExtFields)
	}
	var eb ElectMasterResponseBody
	if err := json.Unmarshal(el.Body, &eb); err != nil || !slices.Equal(eb.SyncStateSet, []int64{1}) || eb.BrokerMemberGroup.BrokerAddrs["3"] != addrOf(3) {
		t.Fatalf("elect body %s %v", el.Body, err)
	}
	r.mu.Lock()
	if len(r.push) != 3 || r.push[0].req.Code != remoting.NotifyBrokerRoleChanged || r.push[0].req.Ext("masterBrokerId") != "1" {
		t.Fatalf("role-change pushes %+v", r.push)
	}
	r.push = nil
	r.mu.Unlock()

	body, _ := json.Marshal(SyncStateSet{SyncStateSet: []int64{1, 2, 3}, SyncStateSetEpoch: 1})
	alter := map[string]string{"brokerName": "b", "masterBrokerId": "1", "masterEpoch": "1", "invokeTime": "0"}
	as := r.call(l, remoting.ControllerAlterSyncStateSet, alter, body)
	want(t, as, remoting.Success)
	if as.Ext("newSyncStateSetEpoch") != "2" {
		t.Fatalf("newSyncStateSetEpoch %q", as.Ext("newSyncStateSetEpoch"))
	}
	// The same request again carries a stale set epoch.
	body, _ = json.Marshal(SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1})
	want(t, r.call(l, remoting.ControllerAlterSyncStateSet, alter, body), remoting.ControllerFencedSyncStateSetEpoch)
	want(t, r.call(l, remoting.ControllerAlterSyncStateSet, alter, []byte("{")), remoting.ControllerInvalidRequest)
	want(t, r.call(l, remoting.ControllerGetReplicaInfo, map[string]string{"brokerName": "nope"}, nil), remoting.ControllerBrokerMetadataNotExist)
	want(t, r.call(l, remoting.ControllerElectMaster, map[string]string{"brokerName": "b", "brokerId": "x"}, nil), remoting.ControllerInvalidRequest)

	// Master 1 stops heartbeating; 3 has the most data.
	r.clk.Advance(2 * time.Second)
	r.heartbeat(2, 1, 100)
	r.heartbeat(3, 1, 300)
	r.clk.Advance(1500 * time.Millisecond)
	for i := range r.ctls {
		if i != l {
			r.ctls[i].Scan() // followers only expire
		}
	}
	r.ctls[l].Scan()
	ri := r.call(l, remoting.ControllerGetReplicaInfo, map[string]string{"brokerName": "b"}, nil)
	want(t, ri, remoting.Success)
	if ri.Ext("masterBrokerId") != "3" || ri.Ext("masterEpoch") != "2" {
		t.Fatalf("after the scan: %v", ri.ExtFields)
	}
	var set SyncStateSet
	if err := json.Unmarshal(ri.Body, &set); err != nil || !slices.Equal(set.SyncStateSet, []int64{3}) || set.SyncStateSetEpoch != 3 {
		t.Fatalf("set %s", ri.Body)
	}
	r.mu.Lock()
	var to []string
	for _, p := range r.push {
		to = append(to, p.addr)
	}
	r.mu.Unlock()
	slices.Sort(to)
	if !slices.Equal(to, []string{addrOf(2), addrOf(3)}) {
		t.Fatalf("pushed to %v, want the live replicas", to)
	}

	sd := r.call(l, remoting.ControllerGetSyncStateData, nil, []byte(`["b"]`))
	want(t, sd, remoting.Success)
	var info BrokerReplicasInfo
	if err := json.Unmarshal(sd.Body, &info); err != nil || info.ReplicasInfoTable["b"].MasterBrokerID != 3 ||
		len(info.ReplicasInfoTable["b"].NotInSyncReplicas) != 2 || info.ReplicasInfoTable["b"].InSyncReplicas[0].Alive != true {
		t.Fatalf("sync state data %s %v", sd.Body, err)
	}

	// The controller leader dies: a new one answers with the same state.
	r.nodes[l].Close()
	r.nodes[l] = nil
	l2 := r.leader()
	ri = r.call(l2, remoting.ControllerGetReplicaInfo, map[string]string{"brokerName": "b"}, nil)
	want(t, ri, remoting.Success)
	if ri.Ext("masterBrokerId") != "3" || ri.Ext("masterEpoch") != "2" || ri.Ext("masterAddress") != addrOf(3) {
		t.Fatalf("new leader: %v", ri.ExtFields)
	}
	// Dead replica 1 may be cleaned; alive 2 only when asked.
	clean := map[string]string{"clusterName": "c", "brokerName": "b", "brokerControllerIdsToClean": "1;2"}
	want(t, r.call(l2, remoting.CleanBrokerData, clean, nil), remoting.ControllerInvalidCleanBrokerMetadata)
	clean["brokerControllerIdsToClean"] = "1"
	want(t, r.call(l2, remoting.CleanBrokerData, clean, nil), remoting.Success)
}

// A new leader that never heard the master does not elect for it before a
// heartbeat timeout has passed since it began serving: the master, cut
// from the old leader, has fenced itself by then.
func TestNewLeaderWaitsBeforeElecting(t *testing.T) {
	r := newRig(t)
	l := r.leader()
	for id := int64(1); id <= 2; id++ {
		want(t, r.call(l, remoting.ControllerApplyBrokerID, map[string]string{"clusterName": "c", "brokerName": "b",
			"appliedBrokerId": fmt.Sprint(id), "registerCheckCode": addrOf(id) + ";1"}, nil), remoting.Success)
		want(t, r.call(l, remoting.ControllerRegisterBroker, map[string]string{"clusterName": "c", "brokerName": "b",
			"brokerId": fmt.Sprint(id), "brokerAddress": addrOf(id)}, nil), remoting.Success)
	}
	// The master reaches only the leader; the slave reaches every
	// controller.
	hb := func(i int, id int64) {
		want(t, r.ctls[i].Handle(remoting.NewRequest(remoting.BrokerHeartbeat, map[string]string{
			"clusterName": "c", "brokerName": "b", "brokerAddr": addrOf(id), "brokerId": fmt.Sprint(id),
			"epoch": "1", "maxOffset": "0", "confirmOffset": "0", "heartbeatTimeoutMills": "3000",
		}, nil)), remoting.Success)
	}
	hb(l, 1)
	r.heartbeat(2, 0, 0)
	want(t, r.call(l, remoting.ControllerElectMaster, map[string]string{"clusterName": "c", "brokerName": "b", "brokerId": "1"}, nil), remoting.Success)
	body, _ := json.Marshal(SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1})
	want(t, r.call(l, remoting.ControllerAlterSyncStateSet, map[string]string{"brokerName": "b", "masterBrokerId": "1", "masterEpoch": "1"}, body), remoting.Success)

	r.nodes[l].Close()
	r.nodes[l] = nil
	l2 := r.leader()
	epoch := func() string {
		ri := r.call(l2, remoting.ControllerGetReplicaInfo, map[string]string{"brokerName": "b"}, nil)
		want(t, ri, remoting.Success)
		return ri.Ext("masterBrokerId") + "@" + ri.Ext("masterEpoch")
	}
	r.heartbeat(2, 1, 0)
	r.ctls[l2].Scan()
	if got := epoch(); got != "1@1" {
		t.Fatalf("a new leader elected at once: %s", got)
	}
	// It never heard the master: it waits the longest timeout it knows,
	// at least RocketMQ's default 10 s.
	r.clk.Advance(9 * time.Second)
	r.heartbeat(2, 1, 0)
	r.ctls[l2].Scan()
	if got := epoch(); got != "1@1" {
		t.Fatalf("elected inside the grace: %s", got)
	}
	r.clk.Advance(time.Second)
	r.heartbeat(2, 1, 0)
	r.ctls[l2].Scan()
	if got := epoch(); got != "2@2" {
		t.Fatalf("after the grace: %s, want 2@2", got)
	}
}
