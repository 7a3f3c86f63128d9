package failover

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spoolmq/spool/test/failover/check"
)

// fault is one kind of fault the suite injects into setA.
type fault struct {
	kind string
	// failover: the fault must move setA's master elsewhere.
	failover bool
	// needs is what the fault acts on (needMaster, needSlave, needLeader,
	// or'ed): in a pair, the first fault may leave none, and the second is
	// then not injected (counted as skipped, not as a run).
	needs int
	// inject starts the fault and returns what ends it.
	inject func(c *cluster) (heal func() error)
}

const (
	needMaster     = 1 << iota // a running master of setA
	needSlave                  // a running slave of setA
	needSlaveInSet             // a running slave in setA's sync-state set
	needLeader                 // a known controller leader
)

// unmet says what of f.needs setA lacks now ("" when nothing).
func (c *cluster) unmet(f fault) string {
	v, m := c.master()
	var out []string
	if f.needs&needMaster != 0 && (m == nil || !m.running() || m.isPaused() || m.cut) {
		out = append(out, "no running master")
	}
	if f.needs&(needSlave|needSlaveInSet) != 0 {
		ok := false
		for _, r := range c.a {
			if r.addr != v.MasterAddr && r.running() && !r.isPaused() && (f.needs&needSlaveInSet == 0 || slices.Contains(v.InSync, r.addr)) {
				ok = true
			}
		}
		switch {
		case ok:
		case f.needs&needSlaveInSet != 0:
			out = append(out, "no running slave in the sync-state set")
		default:
			out = append(out, "no running slave")
		}
	}
	if f.needs&needLeader != 0 && c.controllerLeader() == nil {
		out = append(out, "no controller leader known")
	}
	return strings.Join(out, ", ")
}

// lease is the master's controller lease with the harness's settings
// (controllerHeartBeatTimeoutMills 10000 by default: half of it; the long
// form sets it from SPOOL_FAILOVER_BROKER_SETS).
var lease = 5 * time.Second

var faults = []fault{
	{kind: "kill -9 master", failover: true, needs: needMaster, inject: func(c *cluster) func() error {
		_, m := c.master()
		m.kill()
		return m.startIfStopped
	}},
	{kind: "SIGSTOP master > lease", failover: true, needs: needMaster, inject: func(c *cluster) func() error {
		_, m := c.master()
		m.pause()
		stopped := time.Now()
		return func() error {
			if d := lease + time.Second - time.Since(stopped); d > 0 {
				time.Sleep(d)
			}
			m.resume()
			return nil
		}
	}},
	{kind: "master cut from controllers", failover: true, needs: needMaster, inject: func(c *cluster) func() error {
		_, m := c.master()
		m.cutFromControllers(true)
		return func() error { m.cutFromControllers(false); return nil }
	}},
	{kind: "controller leader kill -9", needs: needLeader, inject: func(c *cluster) func() error {
		p := c.controllerLeader()
		if p == nil {
			return func() error { return fmt.Errorf("no controller leader known") }
		}
		p.kill()
		return p.startIfStopped
	}},
	{kind: "slave restarted", needs: needSlave, inject: func(c *cluster) func() error {
		v, _ := c.master()
		for _, r := range c.a {
			if r.addr != v.MasterAddr && r.running() {
				r.kill()
				return r.startIfStopped
			}
		}
		return func() error { return fmt.Errorf("no running slave to restart") }
	}},
	{kind: "master restarted, unsynced tail dropped", needs: needMaster, inject: tailDropped(true)},
	{kind: "slave restarted, unsynced tail dropped", needs: needSlave, inject: tailDropped(false)},
	{kind: "slave killed during truncation", failover: true, needs: needMaster | needSlaveInSet, inject: killedDuringTruncation},
}

// awaitHealthy waits until every process runs, setA has a master whose
// sync-state set holds all three replicas and a controller leads.
func (c *cluster) awaitHealthy(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		ok := true
		for _, p := range append(append([]*proc{}, c.ctls...), c.ns, c.b) {
			ok = ok && p.running()
		}
		for _, r := range c.a {
			ok = ok && r.running()
		}
		v := c.view.current()
		ok = ok && c.replicaAt(v.MasterAddr) != nil && len(v.SyncStateSet) == 3 && c.view.leader() != ""
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not healthy within %v; view: %v", limit, v)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// canFailOver reports whether setA has a replica other than its master,
// running and in the sync-state set, that an election may choose, and
// besides the master at least minInSyncReplicas running replicas, so that
// the new master can acknowledge once one of them joins its set.
func (c *cluster) canFailOver(v view) bool {
	electable, up := false, 0
	for _, r := range c.a {
		if r.addr == v.MasterAddr || !r.running() || r.isPaused() || r.cut {
			continue
		}
		up++
		electable = electable || slices.Contains(v.InSync, r.addr)
	}
	return electable && up >= minInSyncReplicas
}

// minInSyncReplicas is setA's minInSyncReplicas: 1 (the default), 2 in
// the long form, where every acknowledgement is then on two replicas and
// a power cut of any one replica (the crash faults) is within what a
// SEND_OK promises under ASYNC_FLUSH.
var minInSyncReplicas = 1

// step injects fs (one fault, or a pair: the second once the first has
// done its work, before it is healed), waits for each failover and
// measures it with a probe, then heals in reverse order. It returns the
// faults as recorded and the errors seen.
func (c *cluster) step(w *workload, fs ...fault) (errs []error, skipped []string) {
	var heals []func() error
	var healed []fault
	for _, f := range fs {
		if f.needs&needMaster != 0 && w != nil {
			if err := w.awaitServingMaster(60 * time.Second); err != nil {
				errs = append(errs, fmt.Errorf("before %s: %w", f.kind, err))
			}
		}
		if why := c.unmet(f); why != "" {
			skipped = append(skipped, fmt.Sprintf("%s: %s", f.kind, why))
			continue
		}
		before := c.view.current()
		rec := check.Fault{Kind: f.kind, Broker: setA, Master: before.MasterAddr, At: time.Now(),
			Failover: f.failover && c.canFailOver(before)}
		if f.kind == "controller leader kill -9" {
			rec.Master = c.view.leader()
		}
		c.masterKilledAt = time.Time{}
		heals = append(heals, f.inject(c))
		healed = append(healed, f)
		if !c.masterKilledAt.IsZero() {
			// The fault readied the master and wrote it a tail first: the
			// failover runs from the kill.
			rec.At = c.masterKilledAt
		}
		w.rec.Faulted(rec)
		switch {
		case rec.Failover:
			if _, err := c.view.await(90*time.Second, "a new master after "+f.kind, func(v view) bool {
				return v.MasterAddr != "" && v.MasterAddr != before.MasterAddr && v.MasterEpoch > before.MasterEpoch
			}); err != nil {
				errs = append(errs, err)
				continue
			}
			if _, err := w.probe(before.MasterAddr, 90*time.Second); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", f.kind, err))
			}
		case f.kind == "controller leader kill -9":
			old := rec.Master
			_, err := c.view.await(60*time.Second, "a new controller leader", func(view) bool {
				l := c.view.leader()
				return l != "" && l != old
			})
			if err != nil {
				errs = append(errs, err)
			}
		default:
			time.Sleep(2 * time.Second)
		}
	}
	for i := len(heals) - 1; i >= 0; i-- {
		if err := heals[i](); err != nil {
			errs = append(errs, fmt.Errorf("healing %s: %w", healed[i].kind, err))
		}
	}
	return errs, skipped
}
