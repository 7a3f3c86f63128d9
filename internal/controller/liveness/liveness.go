// Package liveness keeps the controller's view of which broker replicas are
// alive: per (cluster, broker name, controller id) the last BROKER_HEARTBEAT,
// its timeout and the figures an election compares (epoch, max offset,
// confirm offset, brokerElectionPriority). It also plans the leader's scan
// for inactive masters (scanNotActiveBrokerInterval), which yields the
// broker names to elect for.
//
// It owns time-based decisions only, read from the clock.Clock it is given
// (clock.Manual in tests); it does no I/O and never changes the replicas
// state: the caller turns the scan's names into elections and pushes
// NOTIFY_BROKER_ROLE_CHANGED. Liveness is not replicated: every controller
// receives every broker's heartbeats (brokers heartbeat to all of them).
// It imports internal/clock and internal/controller/replicas (the
// Candidate type) and nothing else of Spool's.
package liveness

import (
	"sort"
	"sync"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/controller/replicas"
)

// DefaultTimeout is the heartbeat timeout of a heartbeat that carries none
// (RocketMQ's controllerHeartBeatTimeoutMills default, 10 s).
const DefaultTimeout = 10 * time.Second

// DefaultPriority is brokerElectionPriority's default (Integer.MAX_VALUE).
const DefaultPriority int32 = 1<<31 - 1

// Heartbeat is one BROKER_HEARTBEAT's header.
type Heartbeat struct {
	ClusterName   string
	BrokerName    string
	BrokerAddr    string
	BrokerID      int64
	Epoch         int32
	MaxOffset     int64
	ConfirmOffset int64
	// Timeout is heartbeatTimeoutMills; 0 takes DefaultTimeout.
	Timeout time.Duration
	// Priority is electionPriority; nil takes DefaultPriority.
	Priority *int32
}

// Info is what the table holds of one replica.
type Info struct {
	Heartbeat
	Last time.Time
}

type key struct {
	cluster, name string
	id            int64
}

// Table is the liveness table. It is safe for concurrent use.
type Table struct {
	clk clock.Clock
	mu  sync.Mutex
	m   map[key]Info
}

// New returns an empty table reading clk (nil: the real clock).
func New(clk clock.Clock) *Table {
	return &Table{clk: clock.Or(clk), m: map[key]Info{}}
}

// Heartbeat records h at the clock's now.
func (t *Table) Heartbeat(h Heartbeat) {
	if h.Timeout <= 0 {
		h.Timeout = DefaultTimeout
	}
	if h.Priority == nil {
		p := DefaultPriority
		h.Priority = &p
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[key{h.ClusterName, h.BrokerName, h.BrokerID}] = Info{Heartbeat: h, Last: t.clk.Now()}
}

func (t *Table) get(cluster, name string, id int64) (Info, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.m[key{cluster, name, id}]
	return i, ok
}

func (i Info) alive(now time.Time) bool { return now.Sub(i.Last) < i.Timeout }

// Alive reports whether the replica heartbeat within its timeout.
func (t *Table) Alive(cluster, name string, id int64) bool {
	i, ok := t.get(cluster, name, id)
	return ok && i.alive(t.clk.Now())
}

// Candidate returns the election figures of the replica's last heartbeat.
func (t *Table) Candidate(cluster, name string, id int64) (replicas.Candidate, bool) {
	i, ok := t.get(cluster, name, id)
	if !ok {
		return replicas.Candidate{}, false
	}
	return replicas.Candidate{Epoch: i.Epoch, MaxOffset: i.MaxOffset, Priority: *i.Priority}, true
}

// Info returns the replica's last heartbeat.
func (t *Table) Info(cluster, name string, id int64) (Info, bool) { return t.get(cluster, name, id) }

// Remove forgets a replica (its data was cleaned).
func (t *Table) Remove(cluster, name string, id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, key{cluster, name, id})
}

// Expire drops the replicas whose heartbeat is older than their timeout
// and returns them, sorted by broker name and id.
func (t *Table) Expire() []Info {
	now := t.clk.Now()
	t.mu.Lock()
	var out []Info
	for k, i := range t.m {
		if !i.alive(now) {
			out = append(out, i)
			delete(t.m, k)
		}
	}
	t.mu.Unlock()
	sort.Slice(out, func(a, b int) bool {
		if out[a].BrokerName != out[b].BrokerName {
			return out[a].BrokerName < out[b].BrokerName
		}
		return out[a].BrokerID < out[b].BrokerID
	})
	return out
}

// NeedElection returns the broker names the leader's scan must elect for:
// sets whose master is not alive while some replica is. A set whose
// master is alive, or whose replicas are all dead, is left alone (an
// election there changes nothing but the epoch). Names come sorted.
func (t *Table) NeedElection(st *replicas.State) []string {
	var out []string
	for _, name := range st.Names() {
		b := st.Set(name)
		if b.HasMaster() && t.Alive(b.ClusterName, name, b.MasterID) {
			continue
		}
		if b.MasterEpoch == 0 {
			continue // never elected: the brokers start the first election
		}
		for _, id := range b.IDs() {
			if t.Alive(b.ClusterName, name, id) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}
