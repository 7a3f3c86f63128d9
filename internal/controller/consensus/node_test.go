package consensus

import (
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/spoolmq/spool/internal/controller/replicas"
)

func fastRaft() *raft.Config {
	c := raft.DefaultConfig()
	c.HeartbeatTimeout = 300 * time.Millisecond
	c.ElectionTimeout = 300 * time.Millisecond
	c.LeaderLeaseTimeout = 150 * time.Millisecond
	c.CommitTimeout = 10 * time.Millisecond
	return c
}

type cluster struct {
	t     *testing.T
	peers []Peer
	nodes []*Node
	dirs  []string
	inmem []*raft.InmemTransport
}

// onLeader records the leader's remoting address, as the controller does.
func onLeader(n *Node) error {
	return n.ProposeOnLeader([]replicas.Event{{Type: replicas.EventControllerAddress, ControllerID: n.ID(), Address: "remoting-" + n.ID()}})
}

func (c *cluster) open(i int) {
	cfg := Config{ID: c.peers[i].ID, Peers: c.peers, Raft: fastRaft(), LogOutput: io.Discard, OnLeader: onLeader}
	if c.dirs != nil {
		cfg.Dir = c.dirs[i]
	}
	if c.inmem != nil {
		cfg.Transport = c.inmem[i]
	}
	n, err := Open(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	c.nodes[i] = n
}

func newInmemCluster(t *testing.T, size int) *cluster {
	c := &cluster{t: t, nodes: make([]*Node, size)}
	for i := 0; i < size; i++ {
		addr, tr := raft.NewInmemTransport("")
		c.peers = append(c.peers, Peer{ID: fmt.Sprintf("n%d", i), Addr: string(addr)})
		c.inmem = append(c.inmem, tr)
	}
	for i, a := range c.inmem {
		for j, b := range c.inmem {
			if i != j {
				a.Connect(raft.ServerAddress(c.peers[j].Addr), b)
			}
		}
	}
	for i := range c.nodes {
		c.open(i)
	}
	t.Cleanup(c.closeAll)
	return c
}

func freeAddrs(t *testing.T, n int) []string {
	var out []string
	var ls []net.Listener
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

func newTCPCluster(t *testing.T, size int) *cluster {
	c := &cluster{t: t, nodes: make([]*Node, size)}
	for i, a := range freeAddrs(t, size) {
		c.peers = append(c.peers, Peer{ID: fmt.Sprintf("n%d", i), Addr: a})
		c.dirs = append(c.dirs, filepath.Join(t.TempDir(), fmt.Sprintf("n%d", i)))
	}
	for i := range c.nodes {
		c.open(i)
	}
	t.Cleanup(c.closeAll)
	return c
}

func (c *cluster) closeAll() {
	for i, n := range c.nodes {
		if n != nil {
			n.Close()
			c.nodes[i] = nil
		}
	}
}

// leader waits for a serving leader among the open nodes.
func (c *cluster) leader() int {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range c.nodes {
			if n != nil && n.Serving() {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatal("no serving leader")
	return -1
}

// waitAll waits until every open node has applied what cond checks.
func (c *cluster) waitAll(what string, cond func(st *replicas.State, ctl replicas.Controllers) bool) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ok := true
		for _, n := range c.nodes {
			if n == nil {
				continue
			}
			n.Read(func(st *replicas.State, ctl replicas.Controllers) {
				if !cond(st, ctl) {
					ok = false
				}
			})
		}
		if ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("not every node has %s", what)
}

func applyID(name string, id int64) []replicas.Event {
	return []replicas.Event{{Type: replicas.EventApplyBrokerID, ClusterName: "c", BrokerName: name, BrokerID: id,
		Address: fmt.Sprintf("10.0.0.%d:10911", id), CheckCode: fmt.Sprintf("10.0.0.%d:10911;0", id)}}
}

func hasReplica(name string, id int64) func(*replicas.State, replicas.Controllers) bool {
	return func(st *replicas.State, _ replicas.Controllers) bool {
		b := st.Set(name)
		if b == nil {
			return false
		}
		_, ok := b.Replicas[id]
		return ok
	}
}

// exercise: an event applied on the leader reaches every node; followers
// refuse writes; the leader's loss elects a new leader that keeps the
// state and takes writes.
func exercise(t *testing.T, c *cluster) {
	l := c.leader()
	if err := c.nodes[l].Propose(applyID("b", 1)); err != nil {
		t.Fatal(err)
	}
	c.waitAll("broker b id 1", hasReplica("b", 1))
	lid := c.peers[l].ID
	c.waitAll("the leader's remoting address", func(_ *replicas.State, ctl replicas.Controllers) bool {
		return ctl[lid] == "remoting-"+lid
	})
	f := (l + 1) % len(c.nodes)
	if err := c.nodes[f].Propose(applyID("b", 2)); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a follower took a write: %v", err)
	}
	if id, _ := c.nodes[f].Leader(); id != lid {
		t.Fatalf("follower names leader %q, want %q", id, lid)
	}
	// A stale event (validated against an older epoch) is fenced by the FSM.
	stale := replicas.Event{Type: replicas.EventAlterSyncStateSet, BrokerName: "b", MasterEpoch: 7, SyncStateSet: []int64{1}}
	if err := c.nodes[l].Propose([]replicas.Event{stale}); !errors.Is(err, replicas.ErrFenced) {
		t.Fatalf("stale event: %v", err)
	}

	c.nodes[l].Close()
	c.nodes[l] = nil
	l2 := c.leader()
	if l2 == l {
		t.Fatal("closed node still leads")
	}
	c.nodes[l2].Read(func(st *replicas.State, _ replicas.Controllers) {
		if !hasReplica("b", 1)(st, nil) {
			t.Fatal("new leader lost the state")
		}
	})
	if err := c.nodes[l2].Propose(applyID("b", 2)); err != nil {
		t.Fatal(err)
	}
	c.waitAll("broker b id 2", hasReplica("b", 2))
	if err := c.nodes[l2].VerifyLeader(); err != nil {
		t.Fatalf("VerifyLeader on the leader: %v", err)
	}
}

func TestInmemCluster(t *testing.T) {
	exercise(t, newInmemCluster(t, 3))
}

// TestTCPClusterRestart runs the same over real TCP transports on loopback
// with raft-boltdb, then restarts every node from its directory (one from
// a snapshot) and finds the state again.
func TestTCPClusterRestart(t *testing.T) {
	c := newTCPCluster(t, 3)
	exercise(t, c)
	l := c.leader()
	if err := c.nodes[l].Snapshot(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if err := c.nodes[l].Propose(applyID("b", 3)); err != nil {
		t.Fatal(err)
	}
	c.waitAll("broker b id 3", hasReplica("b", 3))
	c.closeAll()
	for i := range c.nodes {
		c.open(i)
	}
	c.leader()
	c.waitAll("every broker after restart", func(st *replicas.State, _ replicas.Controllers) bool {
		return hasReplica("b", 1)(st, nil) && hasReplica("b", 2)(st, nil) && hasReplica("b", 3)(st, nil) &&
			st.Set("b").NextID == 4
	})
}

func TestParsePeers(t *testing.T) {
	p, err := ParsePeers("n0-127.0.0.1:9878;n1-127.0.0.1:9868; n2-127.0.0.1:9858;")
	if err != nil || len(p) != 3 || p[2] != (Peer{ID: "n2", Addr: "127.0.0.1:9858"}) {
		t.Fatalf("%+v %v", p, err)
	}
	for _, bad := range []string{"", "n0", "n0-nohost", "n0-a:1;n0-b:2"} {
		if _, err := ParsePeers(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestStoreLocked: a second node on a directory in use is refused, not
// left waiting for the lock.
func TestStoreLocked(t *testing.T) {
	dir := t.TempDir()
	_, tr := raft.NewInmemTransport("")
	peers := []Peer{{ID: "n0", Addr: string(tr.LocalAddr())}}
	n, err := Open(Config{ID: "n0", Peers: peers, Dir: dir, Transport: tr, Raft: fastRaft(), LogOutput: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	_, tr2 := raft.NewInmemTransport("")
	if _, err := Open(Config{ID: "n0", Peers: peers, Dir: dir, Transport: tr2, Raft: fastRaft(), LogOutput: io.Discard}); err == nil {
		t.Fatal("a second node opened the same store")
	}
}
