// Package controller is Spool's controller: the remoting face of RocketMQ's
// controller mode. It answers BROKER_HEARTBEAT (904) and the controller
// requests 1001–1006 and 1010–1013 with RocketMQ's headers, JSON bodies
// and response codes, runs the leader's scan for inactive masters and
// builds the NOTIFY_BROKER_ROLE_CHANGED (1008) pushes, which the caller
// sends.
//
// It owns the order of decisions: one lock serializes validation
// (internal/controller/replicas, against the applied state) and the
// proposal (internal/controller/consensus), so each request is checked
// against the state its events will land on, and answered after its
// events are committed and applied. Only the serving leader validates
// and proposes; the others answer CONTROLLER_NOT_LEADER (2007) naming the
// leader, and every node answers GET_METADATA_INFO. Liveness
// (internal/controller/liveness) is local to each controller. It never
// edits the replicas state itself, and never dials a broker: pushes go
// through Options.Notify.
//
// The scan (Run) runs every scanNotActiveBrokerInterval and, on the
// leader, also at the moment a master's liveness runs out (nextWake, a
// pure decision over the masters' expiries): its heartbeat timeout after
// its last heartbeat, or, once the connection its heartbeats came on
// closed (Register hooks the transport server's connection closes to
// ConnClosed), the broker's lease and a margin after it
// (liveness.CloseWait, 6 s by default). RocketMQ's controller elects the
// moment a master's channel closes; Spool waits for the lease, because a
// master whose connection a network fault cut still acknowledges until
// its lease runs out. Non-leaders only keep their table.
package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/controller/consensus"
	"github.com/spoolmq/spool/internal/controller/liveness"
	"github.com/spoolmq/spool/internal/controller/replicas"
	"github.com/spoolmq/spool/remoting"
)

// Options configures a Controller.
type Options struct {
	// Group is controllerDLegerGroup, named in GET_METADATA_INFO.
	Group string
	// Unclean is enableElectUncleanMaster.
	Unclean bool
	// ScanInterval is scanNotActiveBrokerInterval (default 5 s).
	ScanInterval time.Duration
	// ElectRetries is electMasterMaxRetryCount (default 3).
	ElectRetries int
	// Clock drives liveness and the scan (nil: the real clock).
	Clock clock.Clock
	// Notify sends a oneway NOTIFY_BROKER_ROLE_CHANGED to a broker (nil:
	// no pushes).
	Notify func(addr string, req *remoting.Command)
	Logger *slog.Logger
}

// Controller serves the controller requests of one controller node.
type Controller struct {
	opts Options
	node *consensus.Node
	live *liveness.Table
	// mu serializes validate-then-propose (RocketMQ's event thread).
	mu sync.Mutex

	// termMu guards the leadership generation this controller saw serving
	// and when it first saw it.
	termMu    sync.Mutex
	servedGen uint64
	servedAt  time.Time
	// expiredTimeout keeps the heartbeat timeout of replicas the scan
	// dropped; maxTimeout is the longest timeout any heartbeat carried.
	expiredTimeout map[replicaKey]time.Duration
	maxTimeout     time.Duration
	// lastScan is when the last Scan began.
	lastScan time.Time
	// kick wakes Run to recompute its next wake-up.
	kick chan struct{}
}

type replicaKey struct {
	cluster, name string
	id            int64
}

// New returns a controller over node. The node's OnLeader hook should
// call LeaderHook so that the leader's remoting address is replicated.
func New(node *consensus.Node, opts Options) *Controller {
	if opts.ScanInterval <= 0 {
		opts.ScanInterval = 5 * time.Second
	}
	if opts.ElectRetries <= 0 {
		opts.ElectRetries = 3
	}
	opts.Clock = clock.Or(opts.Clock)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Controller{opts: opts, node: node, live: liveness.New(opts.Clock), kick: make(chan struct{}, 1)}
}

// LeaderHook returns the consensus.Config.OnLeader hook that records this
// controller's remoting address (addr) when it becomes leader, before it
// serves.
func LeaderHook(addr string) func(n *consensus.Node) error {
	return func(n *consensus.Node) error {
		var known string
		n.Read(func(_ *replicas.State, ctl replicas.Controllers) { known = ctl[n.ID()] })
		if known == addr {
			return nil
		}
		return n.ProposeOnLeader([]replicas.Event{{Type: replicas.EventControllerAddress, ControllerID: n.ID(), Address: addr}})
	}
}

// Liveness is the controller's liveness table.
func (c *Controller) Liveness() *liveness.Table { return c.live }

func (c *Controller) policy() replicas.Policy { return replicas.Policy{Unclean: c.opts.Unclean} }

// errNotLeader is answered as CONTROLLER_NOT_LEADER.
var errNotLeader = consensus.ErrNotLeader

// decide validates with fn against the applied state and proposes the
// events, under the decision lock. It returns the result and the state's
// broker set after the events.
func (c *Controller) decide(name string, fn func(st *replicas.State) replicas.Result) (replicas.Result, *replicas.BrokerSet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.node.Serving() {
		return replicas.Result{}, nil, errNotLeader
	}
	var r replicas.Result
	c.node.Read(func(st *replicas.State, _ replicas.Controllers) { r = fn(st) })
	if err := c.node.Propose(r.Events); err != nil {
		return r, nil, err
	}
	return r, c.snapshotSet(name), nil
}

// snapshotSet copies a broker set out of the applied state (nil: none).
func (c *Controller) snapshotSet(name string) *replicas.BrokerSet {
	var b *replicas.BrokerSet
	c.node.Read(func(st *replicas.State, _ replicas.Controllers) {
		if s := st.Set(name); s != nil {
			b = (&replicas.State{Sets: map[string]*replicas.BrokerSet{name: s}}).Clone().Set(name)
		}
	})
	return b
}

// Run runs the leader's scan until ctx ends: every ScanInterval, and on
// the leader also at the moment an election for a master can become due
// (nextWake: the master's expiry, when its heartbeat timeout runs out or,
// once its heartbeat connection closed, its lease and a margin; or the
// end of a new leader's grace). Without the periodic scan's delay, a
// stopped master is replaced a heartbeat timeout after its last
// heartbeat, and a killed one CloseWait after it.
func (c *Controller) Run(ctx context.Context) {
	nextScan := c.opts.Clock.Now().Add(c.opts.ScanInterval)
	for {
		wake := nextWake(c.wakeInput(nextScan))
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
			continue // recompute the wake-up
		case <-clock.AfterTime(c.opts.Clock, wake):
		}
		if now := c.opts.Clock.Now(); !now.Before(nextScan) {
			nextScan = now.Add(c.opts.ScanInterval)
		}
		c.Scan()
	}
}

// ConnClosed is told that the remoting connection conn closed (Register
// hooks it to the server's connection closes). The replicas whose
// heartbeats came on it count as dead once CloseWait has passed since
// their last heartbeat (liveness.Table.ConnClosed); when one is a
// master, the leader's Run wakes at that moment to elect. Non-leaders
// only mark their table.
func (c *Controller) ConnClosed(conn uint64) {
	closed := c.live.ConnClosed(conn)
	if len(closed) == 0 || !c.node.Serving() {
		return
	}
	master := false
	c.node.Read(func(st *replicas.State, _ replicas.Controllers) {
		for _, i := range closed {
			if b := st.Set(i.BrokerName); b != nil && b.HasMaster() && b.MasterID == i.BrokerID {
				master = true
				c.opts.Logger.Info("a master's heartbeat connection closed: election check once its lease has run out",
					"cluster", i.ClusterName, "broker", i.BrokerName, "id", i.BrokerID, "addr", i.BrokerAddr,
					"check_at", i.Expiry(), "lease_wait", liveness.CloseWait(i.Timeout))
			}
		}
	})
	if master {
		c.kickRun()
	}
}

// Scan is one round of the leader's scan: replicas whose heartbeat timed
// out are dropped, and every broker set whose master is dead while a
// replica lives gets an election (up to ElectRetries tries), whose result
// is pushed to the set's live replicas. Non-leaders only expire. A leader
// elects for an inactive master only once the master's heartbeat timeout
// (10 s when it never heard the master) has passed since it was first
// seen serving, so a master cut from the old leader has stopped
// acknowledging by then (its lease is half that timeout).
func (c *Controller) Scan() {
	c.termMu.Lock()
	c.lastScan = c.opts.Clock.Now()
	c.termMu.Unlock()
	for _, dead := range c.live.Expire() {
		c.opts.Logger.Info("broker heartbeat timed out", "cluster", dead.ClusterName, "broker", dead.BrokerName, "id", dead.BrokerID, "addr", dead.BrokerAddr)
		c.termMu.Lock()
		if c.expiredTimeout == nil {
			c.expiredTimeout = map[replicaKey]time.Duration{}
		}
		c.expiredTimeout[replicaKey{dead.ClusterName, dead.BrokerName, dead.BrokerID}] = dead.Timeout
		c.termMu.Unlock()
	}
	if !c.node.Serving() {
		return
	}
	since := c.servingSince()
	var names []string
	c.node.Read(func(st *replicas.State, _ replicas.Controllers) {
		for _, name := range c.live.NeedElection(st) {
			// A new leader may not have heard the master, whose lease
			// (internal/failover) it cannot see: no election for an
			// inactive master until a heartbeat timeout after it began
			// serving.
			b := st.Set(name)
			if wait := c.masterTimeout(b.ClusterName, name, b.MasterID) - c.opts.Clock.Since(since); wait > 0 {
				c.opts.Logger.Info("election for an inactive master deferred: this controller leads since recently", "broker", name, "wait", wait)
				continue
			}
			names = append(names, name)
		}
	})
	for _, name := range names {
		for try := 0; try < c.opts.ElectRetries; try++ {
			r, b, err := c.decide(name, func(st *replicas.State) replicas.Result {
				return st.ElectMaster(name, replicas.ControllerTriggered, false, c.policy(), c.live)
			})
			if errors.Is(err, errNotLeader) {
				return
			}
			if err != nil {
				c.opts.Logger.Warn("election for an inactive master failed", "broker", name, "err", err)
				continue
			}
			c.opts.Logger.Info("elected for an inactive master", "broker", name, "code", r.Code, "remark", r.Remark)
			if r.OK() {
				c.notify(b)
			}
			break
		}
	}
}

// noteServing records when this controller was first seen serving in
// its current leadership (heartbeats and scans call it; the time is at
// or after the leadership began, so a grace counted from it is never
// short).
func (c *Controller) noteServing() {
	if !c.node.Serving() {
		return
	}
	g := c.node.Generation()
	c.termMu.Lock()
	changed := g != c.servedGen || c.servedAt.IsZero()
	if changed {
		c.servedGen, c.servedAt = g, c.opts.Clock.Now()
	}
	c.termMu.Unlock()
	if changed {
		c.kickRun() // the grace's end is a new wake-up
	}
}

// noteTimeout records a heartbeat's timeout.
func (c *Controller) noteTimeout(d time.Duration) {
	c.termMu.Lock()
	c.maxTimeout = max(c.maxTimeout, d)
	c.termMu.Unlock()
}

// masterTimeout is the heartbeat timeout a master announced: from its
// live or dropped entry, else the longest any broker announced (at least
// RocketMQ's default).
func (c *Controller) masterTimeout(cluster, name string, id int64) time.Duration {
	if i, ok := c.live.Info(cluster, name, id); ok {
		return i.Timeout
	}
	c.termMu.Lock()
	defer c.termMu.Unlock()
	if d, ok := c.expiredTimeout[replicaKey{cluster, name, id}]; ok {
		return d
	}
	return max(c.maxTimeout, liveness.DefaultTimeout)
}

// servingSince is when this controller was first seen serving in its
// current leadership.
func (c *Controller) servingSince() time.Time {
	c.noteServing()
	c.termMu.Lock()
	defer c.termMu.Unlock()
	return c.servedAt
}

// notify pushes NOTIFY_BROKER_ROLE_CHANGED to every live replica of b.
func (c *Controller) notify(b *replicas.BrokerSet) {
	if c.opts.Notify == nil || b == nil {
		return
	}
	for _, id := range b.IDs() {
		if !c.live.Alive(b.ClusterName, b.BrokerName, id) {
			continue
		}
		req := remoting.NewRequest(remoting.NotifyBrokerRoleChanged, map[string]string{
			"masterAddress":     b.MasterAddress(),
			"masterEpoch":       fmt.Sprint(b.MasterEpoch),
			"syncStateSetEpoch": fmt.Sprint(b.SyncStateSetEpoch),
			"masterBrokerId":    fmt.Sprint(b.MasterID),
		}, setBody(b))
		c.opts.Notify(b.Replicas[id].Address, req)
	}
}

// leaderInfo names the leader this node knows: its id and remoting
// address ("" when unknown).
func (c *Controller) leaderInfo() (id, addr string) {
	id, _ = c.node.Leader()
	c.node.Read(func(_ *replicas.State, ctl replicas.Controllers) { addr = ctl[id] })
	return id, addr
}

func sortedIDs(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}
