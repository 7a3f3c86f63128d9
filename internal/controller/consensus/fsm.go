// Package consensus replicates the controller's replicas state with
// github.com/hashicorp/raft: Spool writes the FSM (Apply of a JSON batch
// of replicas.Events, Snapshot, Restore) and a leader gate; the log, the
// elections, the snapshots' files and the transport are raft's, with
// raft-boltdb/v2 as the log and stable store.
//
// It owns the raft node's life (bootstrap on first start, restart from its
// directory), the leader gate (a new leader runs a Barrier, so that every
// entry of earlier terms is applied, and its OnLeader hook, before it
// serves) and the mapping of raft's leadership errors to ErrNotLeader. It
// never validates a request (that is the caller's, against the state it
// reads) and never does remoting I/O. It imports only
// internal/controller/replicas of Spool's.
package consensus

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/spoolmq/spool/internal/controller/replicas"
)

// snapshotData is the FSM's snapshot and the form of State on disk.
type snapshotData struct {
	Sets        map[string]*replicas.BrokerSet `json:"sets"`
	Controllers replicas.Controllers           `json:"controllers"`
}

// FSM is the replicated replicas state.
type FSM struct {
	mu  sync.RWMutex
	st  *replicas.State
	ctl replicas.Controllers
}

// NewFSM returns an empty FSM.
func NewFSM() *FSM { return &FSM{st: replicas.NewState(), ctl: replicas.Controllers{}} }

// ApplyResult is what Apply returns for one batch: the error of each
// event (nil when applied).
type ApplyResult []error

// Err returns the first error of the batch.
func (r ApplyResult) Err() error {
	for _, err := range r {
		if err != nil {
			return err
		}
	}
	return nil
}

// Apply applies one log entry: a JSON array of events, each applied in
// order; a fenced event leaves the state as it was and does not stop the
// batch's later events.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	var batch []replicas.Event
	if err := json.Unmarshal(l.Data, &batch); err != nil {
		return ApplyResult{fmt.Errorf("consensus: log entry %d: %w", l.Index, err)}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	res := make(ApplyResult, len(batch))
	for i, e := range batch {
		res[i] = f.st.Apply(e, f.ctl)
	}
	return res
}

// Read calls fn with the state under the FSM's read lock; fn must not keep
// or change what it is given.
func (f *FSM) Read(fn func(st *replicas.State, ctl replicas.Controllers)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(f.st, f.ctl)
}

// Snapshot copies the state; raft persists it outside the FSM's lock.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	ctl := make(replicas.Controllers, len(f.ctl))
	for k, v := range f.ctl {
		ctl[k] = v
	}
	data, err := json.Marshal(snapshotData{Sets: f.st.Clone().Sets, Controllers: ctl})
	if err != nil {
		return nil, err
	}
	return snapshot(data), nil
}

// Restore replaces the state with a snapshot's.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var d snapshotData
	if err := json.NewDecoder(rc).Decode(&d); err != nil {
		return fmt.Errorf("consensus: restore: %w", err)
	}
	st := replicas.NewState()
	for n, b := range d.Sets {
		if b.Replicas == nil {
			b.Replicas = map[int64]replicas.Replica{}
		}
		st.Sets[n] = b
	}
	if d.Controllers == nil {
		d.Controllers = replicas.Controllers{}
	}
	f.mu.Lock()
	f.st, f.ctl = st, d.Controllers
	f.mu.Unlock()
	return nil
}

type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s snapshot) Release() {}
