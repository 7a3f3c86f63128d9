package failover

import (
	"fmt"
	"testing"
	"time"

	"github.com/spoolmq/spool/test/failover/check"
)

// The short form: a SIGKILL of setA's master under load. The controllers
// elect another replica of the sync-state set in a newer epoch, the
// producers move to it, and the final read finds every acknowledged
// message, in order, with no epoch acknowledged by two masters.
func TestFailoverKill9(t *testing.T) {
	requireControllerMode(t)
	c := startCluster(t)
	w := startWorkload(t, c, "FailoverKill9", 3)
	w.awaitAcks(setA, 100, 60*time.Second)
	w.awaitDelivered("live", 1, 60*time.Second)

	before, m := c.master()
	if m == nil {
		c.fail(fmt.Errorf("no replica serves the master %s", before.MasterAddr))
	}
	if !c.canFailOver(before) {
		c.fail(fmt.Errorf("under load the master's sync-state set holds no other running replica, so no election could choose one: %v", before))
	}
	f := check.Fault{Kind: "kill -9 master", Broker: setA, Master: m.addr, At: time.Now(), Failover: true}
	m.kill()
	w.rec.Faulted(f)
	after, err := c.view.await(90*time.Second, "a new master of "+setA, func(v view) bool {
		return v.MasterAddr != "" && v.MasterAddr != m.addr && v.MasterEpoch > before.MasterEpoch
	})
	if err != nil {
		c.fail(err)
	}
	if _, err := w.probe(m.addr, 90*time.Second); err != nil {
		c.fail(err)
	}
	w.awaitAcks(setA, w.ackedOn(setA)+50, 60*time.Second)

	rep := w.finalRead(30 * time.Second)
	t.Logf("controllers: epoch %d master %s -> epoch %d master %s", before.MasterEpoch, before.MasterAddr, after.MasterEpoch, after.MasterAddr)
	t.Logf("%s\n%s", rep, check.Table(w.rec.Faults(), w.rec.History().Sends))
	if rep.Failed() {
		c.fail(fmt.Errorf("the history breaks a guarantee: %s", rep))
	}
	if rep.Acked == 0 || rep.Unique == 0 {
		c.fail(fmt.Errorf("nothing was acknowledged or read: %s", rep))
	}
}

// awaitDelivered waits until consumer has been handed n messages.
func (w *workload) awaitDelivered(consumer string, n int, limit time.Duration) {
	w.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		got := 0
		for _, d := range w.rec.History().Deliveries {
			if d.Consumer == consumer {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			w.c.fail(fmt.Errorf("consumer %s was handed %d messages within %v, want %d", consumer, got, limit, n))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ackedOn counts the acknowledgements by broker set name.
func (w *workload) ackedOn(broker string) int {
	n := 0
	for _, s := range w.rec.History().Sends {
		if s.Broker == broker {
			n++
		}
	}
	return n
}

// awaitAcks waits until broker set name has acknowledged n sends.
func (w *workload) awaitAcks(broker string, n int, limit time.Duration) {
	w.t.Helper()
	deadline := time.Now().Add(limit)
	for w.ackedOn(broker) < n {
		if time.Now().After(deadline) {
			w.c.fail(fmt.Errorf("%s acknowledged %d sends within %v, want %d", broker, w.ackedOn(broker), limit, n))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
