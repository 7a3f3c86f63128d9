//go:build failover

package failover

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spoolmq/spool/test/failover/check"
)

// The focused test of the crash faults that failed (see the README's
// Failover section) runs with the failover tag, so that `make test`
// stays green while it does:
//
//	go test -tags failover -count=1 -run TestSlaveKilledDuringTruncation -v ./test/failover/

// A former master that rejoins as a slave cuts the records no other
// replica has; killed at a step of that cut (the broker kills itself
// there: SPOOL_CRASH_AT) and started again, it cuts again or finds the
// cut made, comes back into the sync-state set, and nothing acknowledged
// is lost.
func TestSlaveKilledDuringTruncation(t *testing.T) {
	requireControllerMode(t)
	c := startCluster(t)
	w := startWorkload(t, c, "FailoverTruncation", 3)
	w.awaitAcks(setA, 300, 60*time.Second)
	before, _ := c.master()
	w.rec.Faulted(check.Fault{Kind: "slave killed during truncation", Broker: setA, Master: before.MasterAddr, At: time.Now(), Failover: true})
	m, err := c.leaveTail()
	if err != nil {
		c.fail(err)
	}
	if _, err := c.view.await(90*time.Second, "a new master of "+setA, func(v view) bool {
		return v.MasterAddr != "" && v.MasterAddr != m.addr && v.MasterEpoch > before.MasterEpoch
	}); err != nil {
		c.fail(err)
	}
	if _, err := w.probe(m.addr, 90*time.Second); err != nil {
		c.fail(err)
	}
	// Killed once the checkpoint no longer claims the tail (nothing cut
	// yet, so the next start cuts again), then once the CommitLog is cut
	// (its consume queues and epoch file not yet).
	for _, point := range crashPoints[:2] {
		if err := c.crashDuringTruncation(m, point); err != nil {
			c.fail(err)
		}
	}
	if err := m.start(); err != nil {
		c.fail(err)
	}
	if _, err := c.view.await(90*time.Second, "the former master back in the sync-state set", func(v view) bool {
		return len(v.SyncStateSet) == 3 && slices.Contains(v.InSync, m.addr)
	}); err != nil {
		c.fail(err)
	}
	w.awaitAcks(setA, w.ackedOn(setA)+100, 60*time.Second)
	rep := w.finalRead(30 * time.Second)
	t.Logf("%s\n%s", rep, check.Table(w.rec.Faults(), w.rec.History().Sends))
	if rep.Failed() {
		c.fail(fmt.Errorf("the history breaks a guarantee: %s", rep))
	}
}
