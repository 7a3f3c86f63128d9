// Package liveness keeps the controller's view of which broker replicas are
// alive: per (cluster, broker name, controller id) the last BROKER_HEARTBEAT,
// its timeout, the connection it came on and the figures an election
// compares (epoch, max offset, confirm offset, brokerElectionPriority). It
// also plans the leader's scan for inactive masters
// (scanNotActiveBrokerInterval), which yields the broker names to elect
// for.
//
// A replica is alive until its expiry: its last heartbeat plus the
// heartbeat timeout it announced (heartbeatTimeoutMills, RocketMQ's
// controllerHeartBeatTimeoutMills, 10 s by default). When the connection
// its last heartbeat came on closes (a kill -9 closes it at once), the
// expiry moves up to the last heartbeat plus CloseWait: the broker's
// lease (half the timeout, internal/failover) and a fifth of the lease
// more, 6 s by default. RocketMQ's controller drops a broker the moment
// its channel closes; Spool waits for the lease because a close does not
// say the broker is dead — a master whose connection a network fault or
// a proxy cut still acknowledges until its lease runs out, and a
// successor elected before then would acknowledge beside it. A heartbeat
// on another connection clears the mark.
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

// CloseWait is how long after its last heartbeat a replica whose
// heartbeat connection closed counts as dead, for a heartbeat timeout of
// timeout: the master's lease as the broker computes it (timeout/2, see
// internal/failover's Config.Lease) plus a margin of a fifth of the lease
// (1 s of the default 5 s). The broker counts its lease from the start of
// a lease round, before the heartbeat the controller received, so the
// lease has run out by the last heartbeat plus the lease; the margin
// covers the broker's fence check, which runs every tenth of the lease,
// and clocks that run at slightly different rates.
func CloseWait(timeout time.Duration) time.Duration {
	lease := timeout / 2
	return lease + lease/5
}

// Info is what the table holds of one replica.
type Info struct {
	Heartbeat
	// Last is when the last heartbeat was received.
	Last time.Time
	// Conn identifies the connection the last heartbeat came on (0:
	// unknown, e.g. a heartbeat handed over in-process).
	Conn uint64
	// Closed says Conn has closed since.
	Closed bool
}

// Expiry is when the replica stops counting as alive: Last plus its
// timeout, or plus CloseWait(timeout) once its connection closed.
func (i Info) Expiry() time.Time {
	if i.Closed {
		return i.Last.Add(CloseWait(i.Timeout))
	}
	return i.Last.Add(i.Timeout)
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

// Heartbeat records h at the clock's now, received on no known
// connection.
func (t *Table) Heartbeat(h Heartbeat) { t.HeartbeatOn(0, h) }

// HeartbeatOn records h at the clock's now, received on connection conn
// (0: unknown), and reports whether the replica was not in the table
// (never heard, or dropped by Expire). A heartbeat on another connection
// than the last one clears the closed mark; one on the connection
// already seen closed (a heartbeat read before the close and handled
// after it) keeps it.
func (t *Table) HeartbeatOn(conn uint64, h Heartbeat) (fresh bool) {
	if h.Timeout <= 0 {
		h.Timeout = DefaultTimeout
	}
	if h.Priority == nil {
		p := DefaultPriority
		h.Priority = &p
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := key{h.ClusterName, h.BrokerName, h.BrokerID}
	prev, ok := t.m[k]
	closed := ok && prev.Closed && conn != 0 && prev.Conn == conn
	t.m[k] = Info{Heartbeat: h, Last: t.clk.Now(), Conn: conn, Closed: closed}
	return !ok
}

// ConnClosed marks the replicas whose last heartbeat came on connection
// conn as closed and returns them (their Expiry is then the earlier one),
// sorted by broker name and id. Conn 0 marks nothing.
func (t *Table) ConnClosed(conn uint64) []Info {
	if conn == 0 {
		return nil
	}
	t.mu.Lock()
	var out []Info
	for k, i := range t.m {
		if i.Conn == conn && !i.Closed {
			i.Closed = true
			t.m[k] = i
			out = append(out, i)
		}
	}
	t.mu.Unlock()
	sortInfos(out)
	return out
}

func (t *Table) get(cluster, name string, id int64) (Info, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.m[key{cluster, name, id}]
	return i, ok
}

func (i Info) alive(now time.Time) bool { return now.Before(i.Expiry()) }

// Alive reports whether the replica is before its Expiry: it heartbeat
// within its timeout, or within CloseWait when its connection closed.
func (t *Table) Alive(cluster, name string, id int64) bool {
	i, ok := t.get(cluster, name, id)
	return ok && i.alive(t.clk.Now())
}

// Electable reports whether the replica is alive and the connection of its
// last heartbeat has not closed since: only such a replica is made master
// in place of another (replicas.Liveness).
func (t *Table) Electable(cluster, name string, id int64) bool {
	i, ok := t.get(cluster, name, id)
	return ok && !i.Closed && i.alive(t.clk.Now())
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

// Expire drops the replicas past their Expiry and returns them, sorted
// by broker name and id.
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
	sortInfos(out)
	return out
}

func sortInfos(out []Info) {
	sort.Slice(out, func(a, b int) bool {
		if out[a].BrokerName != out[b].BrokerName {
			return out[a].BrokerName < out[b].BrokerName
		}
		return out[a].BrokerID < out[b].BrokerID
	})
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
