package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/controller/liveness"
	"github.com/spoolmq/spool/remoting"
)

// connOf is the connection broker id's heartbeats come on, generation g.
func connOf(id int64, g int) uint64 { return uint64(100*id) + uint64(g) }

// closeRig is a rig whose periodic scan never comes in a test's time, a
// broker set of two with 1 the master of epoch 1 and a sync-state set of
// [1 2], every controller's Run going, and the clock 4 s on.
func closeRig(t *testing.T) (*rig, int) {
	r := newRigWith(t, func(o *Options) { o.ScanInterval = time.Hour })
	l := r.leader()
	for id := int64(1); id <= 2; id++ {
		want(t, r.call(l, remoting.ControllerApplyBrokerID, map[string]string{"clusterName": "c", "brokerName": "b",
			"appliedBrokerId": fmt.Sprint(id), "registerCheckCode": addrOf(id) + ";1"}, nil), remoting.Success)
		want(t, r.call(l, remoting.ControllerRegisterBroker, map[string]string{"clusterName": "c", "brokerName": "b",
			"brokerId": fmt.Sprint(id), "brokerAddress": addrOf(id)}, nil), remoting.Success)
		r.heartbeatOn(id, connOf(id, 1))
	}
	want(t, r.call(l, remoting.ControllerElectMaster, map[string]string{"clusterName": "c", "brokerName": "b", "brokerId": "1"}, nil), remoting.Success)
	body, _ := json.Marshal(SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1})
	want(t, r.call(l, remoting.ControllerAlterSyncStateSet, map[string]string{"brokerName": "b", "masterBrokerId": "1", "masterEpoch": "1"}, body), remoting.Success)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, c := range r.ctls {
		go c.Run(ctx)
	}
	// Past the leader's grace (a heartbeat timeout, 3 s, after it was
	// first seen serving), with the replicas heard just now.
	r.clk.Advance(4 * time.Second)
	r.heartbeatOn(1, connOf(1, 1))
	r.heartbeatOn(2, connOf(2, 1))
	return r, l
}

// heartbeatOn sends broker id's heartbeat (timeout 3 s, epoch 1) to every
// controller on connection conn.
func (r *rig) heartbeatOn(id int64, conn uint64) {
	for i, c := range r.ctls {
		if r.nodes[i] == nil {
			continue
		}
		want(r.t, c.handle(conn, remoting.NewRequest(remoting.BrokerHeartbeat, map[string]string{
			"clusterName": "c", "brokerName": "b", "brokerAddr": addrOf(id), "brokerId": fmt.Sprint(id),
			"epoch": "1", "maxOffset": "0", "confirmOffset": "0", "heartbeatTimeoutMills": "3000",
		}, nil)), remoting.Success)
	}
}

func (r *rig) closeConn(conn uint64) {
	for i, c := range r.ctls {
		if r.nodes[i] != nil {
			c.ConnClosed(conn)
		}
	}
}

func (r *rig) masterOf(l int) string {
	ri := r.call(l, remoting.ControllerGetReplicaInfo, map[string]string{"brokerName": "b"}, nil)
	want(r.t, ri, remoting.Success)
	return ri.Ext("masterBrokerId") + "@" + ri.Ext("masterEpoch")
}

// settle gives the controllers' Run loops time to act on what just
// happened (a negative check: nothing may follow).
func settle() { time.Sleep(100 * time.Millisecond) }

// waitMaster waits until the leader names want; a deadline only bounds a
// failing test.
func (r *rig) waitMaster(l int, want string) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := r.masterOf(l)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("master %s, want %s", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMasterConnCloseElectsAfterLease: the connection a master's
// heartbeats came on closes (kill -9). The leader elects a new master
// once the master's lease and margin (liveness.CloseWait, 1.8 s for a 3 s
// timeout) have passed since its last heartbeat, on its own and without
// waiting for the periodic scan, and not before; a close followed by a
// heartbeat on a new connection elects nothing.
func TestMasterConnCloseElectsAfterLease(t *testing.T) {
	r, l := closeRig(t)
	// The broker's lease for a 3 s timeout (internal/failover: half of
	// it), and the controller's wait after a close.
	lease, wait := 1500*time.Millisecond, liveness.CloseWait(3*time.Second)

	// A cut connection the master re-dials: no election.
	r.closeConn(connOf(1, 1))
	r.clk.Advance(500 * time.Millisecond)
	r.heartbeatOn(1, connOf(1, 2))
	r.heartbeatOn(2, connOf(2, 1))
	r.clk.Advance(wait) // past the first close's wait
	settle()
	r.ctls[l].Scan()
	if got := r.masterOf(l); got != "1@1" {
		t.Fatalf("elected after a close the master recovered from: %s", got)
	}

	// The master dies: its connection closes just after its last
	// heartbeat.
	r.heartbeatOn(1, connOf(1, 2))
	r.heartbeatOn(2, connOf(2, 1))
	last := r.clk.Now()
	r.clk.Advance(10 * time.Millisecond)
	r.closeConn(connOf(1, 2))
	settle()
	if got := r.masterOf(l); got != "1@1" {
		t.Fatalf("elected at the close, inside the master's lease: %s", got)
	}
	r.clk.Set(last.Add(lease))
	r.heartbeatOn(2, connOf(2, 1))
	settle()
	r.ctls[l].Scan()
	if got := r.masterOf(l); got != "1@1" {
		t.Fatalf("elected as the master's lease ran out, with no margin: %s", got)
	}
	r.clk.Set(last.Add(wait - time.Millisecond))
	r.heartbeatOn(2, connOf(2, 1))
	settle()
	r.ctls[l].Scan()
	if got := r.masterOf(l); got != "1@1" {
		t.Fatalf("elected a millisecond before the lease and margin ran out: %s", got)
	}
	for n, c := range r.ctls {
		if i, ok := c.Liveness().Info("c", "b", 1); !ok || !i.Closed {
			t.Fatalf("controller %d: master not marked closed: %+v", n, i)
		}
	}
	r.mu.Lock()
	r.push = nil
	r.mu.Unlock()
	r.clk.Advance(time.Millisecond)
	r.waitMaster(l, "2@2")
	// The push follows the commit the leader's answer already shows.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		p := r.push
		r.mu.Unlock()
		if len(p) > 0 || time.Now().After(deadline) {
			if len(p) != 1 || p[0].addr != addrOf(2) || p[0].req.Ext("masterBrokerId") != "2" {
				t.Fatalf("pushes %+v, want one to the new master", p)
			}
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// TestStoppedMasterElectedAtItsTimeout: a stopped master (SIGSTOP: no
// heartbeat, no close) is replaced at its last heartbeat plus its
// heartbeat timeout, not at the next periodic scan.
func TestStoppedMasterElectedAtItsTimeout(t *testing.T) {
	r, l := closeRig(t)
	last := r.clk.Now()
	r.clk.Advance(2 * time.Second)
	r.heartbeatOn(2, connOf(2, 1))
	r.clk.Set(last.Add(3*time.Second - time.Millisecond))
	settle()
	if got := r.masterOf(l); got != "1@1" {
		t.Fatalf("elected inside the heartbeat timeout: %s", got)
	}
	r.clk.Advance(time.Millisecond)
	r.waitMaster(l, "2@2")
}

// TestRevivedMasterIsWatched: a master dropped from the table (its whole
// set silent, so no election) and heard again is watched from its next
// heartbeat, so that it is replaced at its expiry, not at the periodic
// scan.
func TestRevivedMasterIsWatched(t *testing.T) {
	r, l := closeRig(t)
	r.clk.Advance(3 * time.Second) // both replicas silent for their timeout
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := r.ctls[l].Liveness().Info("c", "b", 1); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leader's scan did not drop the silent master at its expiry")
		}
		time.Sleep(time.Millisecond)
	}
	settle()
	if got := r.masterOf(l); got != "1@1" {
		t.Fatalf("elected with no live replica: %s", got)
	}
	r.heartbeatOn(1, connOf(1, 2))
	r.heartbeatOn(2, connOf(2, 2))
	last := r.clk.Now()
	settle()
	r.clk.Advance(2 * time.Second)
	r.heartbeatOn(2, connOf(2, 2))
	r.clk.Set(last.Add(3 * time.Second))
	r.waitMaster(l, "2@2")
}
