package consensus

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/spoolmq/spool/internal/controller/replicas"
)

// ErrNotLeader: this node is not the serving leader (not leader, or a new
// leader whose barrier has not completed); the caller answers
// CONTROLLER_NOT_LEADER.
var ErrNotLeader = errors.New("consensus: not the controller leader")

// Peer is one member of the controller group.
type Peer struct {
	ID   string
	Addr string // the raft address, host:port
}

// ParsePeers reads controllerDLegerPeers: "n0-host:port;n1-host:port;...".
func ParsePeers(s string) ([]Peer, error) {
	var out []Peer
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, addr, ok := strings.Cut(part, "-")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("controllerDLegerPeers: %q is not id-host:port", part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("controllerDLegerPeers: %q: %w", part, err)
		}
		if seen[id] {
			return nil, fmt.Errorf("controllerDLegerPeers: id %s twice", id)
		}
		seen[id] = true
		out = append(out, Peer{ID: id, Addr: addr})
	}
	if len(out) == 0 {
		return nil, errors.New("controllerDLegerPeers is empty")
	}
	return out, nil
}

// Config configures a Node.
type Config struct {
	// ID is this node's peer id (controllerDLegerSelfId).
	ID    string
	Peers []Peer
	// Dir holds raft.db (raft-boltdb) and the snapshots; "" keeps
	// everything in memory (tests).
	Dir string
	// Transport is the raft transport; nil opens a TCP transport on this
	// node's peer address.
	Transport raft.Transport
	// Raft overrides raft's timings (nil: raft.DefaultConfig()); LocalID,
	// NotifyCh and Logger are set by the node.
	Raft *raft.Config
	// LogOutput receives raft's log at warn level and above (nil:
	// stderr).
	LogOutput io.Writer
	// OnLeader runs on a new leader after its barrier and before it
	// serves; an error keeps it from serving this term.
	OnLeader func(n *Node) error
	// Timeout bounds an Apply, a Barrier and a VerifyLeader (default 5 s,
	// RocketMQ's wait for commit).
	Timeout time.Duration
}

// Node is one controller's raft member and its FSM.
type Node struct {
	cfg     Config
	raft    *raft.Raft
	fsm     *FSM
	closers []io.Closer
	notify  chan bool

	mu      sync.Mutex
	gen     uint64 // leadership changes seen
	serving atomic.Bool
	done    chan struct{}
	wg      sync.WaitGroup
}

// Open starts the node: from its directory when it has raft state, else
// bootstrapped with every peer as a voter.
func Open(cfg Config) (*Node, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	self := -1
	for i, p := range cfg.Peers {
		if p.ID == cfg.ID {
			self = i
		}
	}
	if self < 0 {
		return nil, fmt.Errorf("controllerDLegerSelfId %q is not in controllerDLegerPeers", cfg.ID)
	}
	out := cfg.LogOutput
	if out == nil {
		out = os.Stderr
	}
	rc := raft.DefaultConfig()
	if cfg.Raft != nil {
		c := *cfg.Raft
		rc = &c
	}
	n := &Node{cfg: cfg, fsm: NewFSM(), notify: make(chan bool, 64), done: make(chan struct{})}
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.NotifyCh = n.notify
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft-" + cfg.ID, Output: out, Level: hclog.Warn})

	var logs raft.LogStore
	var stable raft.StableStore
	var snaps raft.SnapshotStore
	if cfg.Dir == "" {
		s := raft.NewInmemStore()
		logs, stable, snaps = s, s, raft.NewInmemSnapshotStore()
	} else {
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return nil, err
		}
		// A second controller on the same directory fails at once
		// instead of waiting for the file lock.
		db := filepath.Join(cfg.Dir, "raft.db")
		bs, err := raftboltdb.New(raftboltdb.Options{Path: db, BoltOptions: &bbolt.Options{Timeout: time.Second}})
		if err != nil {
			return nil, fmt.Errorf("controllerStorePath: %s: %w", db, err)
		}
		n.closers = append(n.closers, bs)
		fs, err := raft.NewFileSnapshotStore(cfg.Dir, 3, out)
		if err != nil {
			n.closeAll()
			return nil, err
		}
		logs, stable, snaps = bs, bs, fs
	}
	trans := cfg.Transport
	if trans == nil {
		addr, err := net.ResolveTCPAddr("tcp", cfg.Peers[self].Addr)
		if err != nil {
			n.closeAll()
			return nil, err
		}
		tt, err := raft.NewTCPTransport(cfg.Peers[self].Addr, addr, 3, 10*time.Second, out)
		if err != nil {
			n.closeAll()
			return nil, fmt.Errorf("raft transport on %s: %w", cfg.Peers[self].Addr, err)
		}
		n.closers = append(n.closers, tt)
		trans = tt
	}
	existing, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		n.closeAll()
		return nil, err
	}
	r, err := raft.NewRaft(rc, n.fsm, logs, stable, snaps, trans)
	if err != nil {
		n.closeAll()
		return nil, err
	}
	n.raft = r
	if !existing {
		var servers []raft.Server
		for _, p := range cfg.Peers {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
		}
		if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			n.Close()
			return nil, err
		}
	}
	n.wg.Add(1)
	go n.watchLeadership()
	return n, nil
}

// watchLeadership opens the gate on each leadership gain once the barrier
// and OnLeader have succeeded, and closes it on each loss.
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	for {
		select {
		case <-n.done:
			return
		case leader := <-n.notify:
			n.mu.Lock()
			n.gen++
			gen := n.gen
			n.serving.Store(false)
			n.mu.Unlock()
			if leader {
				n.wg.Add(1)
				go n.gate(gen)
			}
		}
	}
}

func (n *Node) gate(gen uint64) {
	defer n.wg.Done()
	for {
		err := n.raft.Barrier(n.cfg.Timeout).Error()
		if err == nil && n.cfg.OnLeader != nil {
			err = n.cfg.OnLeader(n)
		}
		n.mu.Lock()
		current := n.gen == gen && n.raft.State() == raft.Leader
		if current && err == nil {
			n.serving.Store(true)
		}
		n.mu.Unlock()
		if !current || err == nil {
			return
		}
		select {
		case <-n.done:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// proposeRaw appends events without the gate (OnLeader's own writes).
func (n *Node) proposeRaw(events []replicas.Event) error {
	data, err := json.Marshal(events)
	if err != nil {
		return err
	}
	f := n.raft.Apply(data, n.cfg.Timeout)
	if err := f.Error(); err != nil {
		return leadershipError(err)
	}
	if res, ok := f.Response().(ApplyResult); ok {
		return res.Err()
	}
	return nil
}

// Propose appends events as one log entry and waits until it is applied
// here. It returns ErrNotLeader when this node is not serving, and the
// first event's error (replicas.ErrFenced) when one was refused.
func (n *Node) Propose(events []replicas.Event) error {
	if len(events) == 0 {
		return nil
	}
	if !n.serving.Load() {
		return ErrNotLeader
	}
	return n.proposeRaw(events)
}

// ProposeOnLeader is Propose for OnLeader, which runs before the gate
// opens.
func (n *Node) ProposeOnLeader(events []replicas.Event) error { return n.proposeRaw(events) }

func leadershipError(err error) error {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) ||
		errors.Is(err, raft.ErrLeadershipTransferInProgress) || errors.Is(err, raft.ErrRaftShutdown) {
		return fmt.Errorf("%w: %v", ErrNotLeader, err)
	}
	return err
}

// Serving reports whether this node is the leader and its gate is open.
func (n *Node) Serving() bool { return n.serving.Load() && n.raft.State() == raft.Leader }

// Generation counts the leadership changes this node has seen: a serving
// node whose generation changed has lost and regained leadership since.
func (n *Node) Generation() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.gen
}

// VerifyLeader confirms with a quorum that this node still leads, for
// reads that must be current.
func (n *Node) VerifyLeader() error {
	if !n.serving.Load() {
		return ErrNotLeader
	}
	if err := n.raft.VerifyLeader().Error(); err != nil {
		return leadershipError(err)
	}
	return nil
}

// Leader returns the id and raft address of the leader this node knows,
// "" when none.
func (n *Node) Leader() (id, addr string) {
	a, i := n.raft.LeaderWithID()
	return string(i), string(a)
}

// ID is this node's peer id.
func (n *Node) ID() string { return n.cfg.ID }

// Peers are the configured peers.
func (n *Node) Peers() []Peer { return n.cfg.Peers }

// Read calls fn with the state this node has applied.
func (n *Node) Read(fn func(st *replicas.State, ctl replicas.Controllers)) { n.fsm.Read(fn) }

// Snapshot makes raft take a snapshot now.
func (n *Node) Snapshot() error { return n.raft.Snapshot().Error() }

// Close shuts the node down and closes its stores.
func (n *Node) Close() error {
	select {
	case <-n.done:
		return nil
	default:
	}
	close(n.done)
	n.serving.Store(false)
	err := n.raft.Shutdown().Error()
	n.wg.Wait()
	if cerr := n.closeAll(); err == nil {
		err = cerr
	}
	return err
}

func (n *Node) closeAll() error {
	var first error
	for i := len(n.closers) - 1; i >= 0; i-- {
		if err := n.closers[i].Close(); err != nil && first == nil {
			first = err
		}
	}
	n.closers = nil
	return first
}
