package failover

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spoolmq/spool/test/failover/check"
)

// A slave killed under load and restarted at once with its unsynced tail
// dropped fetches what it lost again: once the other slave is killed and
// the master has dropped it from the sync-state set, the restarted slave
// is the only replica an election may choose, and after the master is
// killed it serves every acknowledged message.
func TestSlaveRestartedWithTailDropped(t *testing.T) {
	requireControllerMode(t)
	c := startCluster(t)
	w := startWorkload(t, c, "FailoverTailSlave", 3)
	w.awaitAcks(setA, 300, 60*time.Second)
	v, m := c.master()
	var slaves []*replica
	for _, r := range c.a {
		if r.addr != v.MasterAddr {
			slaves = append(slaves, r)
		}
	}
	dropped, other := slaves[0], slaves[1]
	w.rec.Faulted(check.Fault{Kind: "slave restarted, unsynced tail dropped", Broker: setA, Master: m.addr, At: time.Now()})
	d, err := dropped.dropTail()
	if err != nil {
		c.fail(err)
	}
	if d.Bytes == 0 {
		c.fail(fmt.Errorf("the killed slave had nothing unflushed past its checkpoint's offset %d: the fault did nothing", d.From))
	}
	t.Logf("%s: dropped %d CommitLog bytes from offset %d", dropped.name, d.Bytes, d.From)
	if err := dropped.start(); err != nil {
		c.fail(err)
	}
	w.awaitAcks(setA, w.ackedOn(setA)+100, 60*time.Second)

	other.kill()
	w.rec.Faulted(check.Fault{Kind: "slave restarted", Broker: setA, Master: m.addr, At: time.Now()})
	if _, err := c.view.await(90*time.Second, "the sync-state set of the master and the restarted slave only", func(v view) bool {
		return v.MasterAddr == m.addr && len(v.InSync) == 2 && slices.Contains(v.InSync, dropped.addr)
	}); err != nil {
		c.fail(err)
	}
	w.awaitAcks(setA, w.ackedOn(setA)+100, 60*time.Second)
	before := c.view.current()
	f := check.Fault{Kind: "kill -9 master", Broker: setA, Master: m.addr, At: time.Now(), Failover: true}
	m.kill()
	w.rec.Faulted(f)
	if _, err := c.view.await(90*time.Second, "the restarted slave master of a newer epoch", func(v view) bool {
		return v.MasterAddr == dropped.addr && v.MasterEpoch > before.MasterEpoch
	}); err != nil {
		c.fail(err)
	}
	if _, err := w.probe(m.addr, 90*time.Second); err != nil {
		c.fail(err)
	}
	rep := w.finalRead(30 * time.Second)
	t.Logf("%s\n%s", rep, check.Table(w.rec.Faults(), w.rec.History().Sends))
	if rep.Failed() {
		c.fail(fmt.Errorf("the history breaks a guarantee: %s", rep))
	}
}

// A master killed under load and restarted at once with its unsynced
// tail dropped (a power cut, not a process kill) comes back before the
// controllers' heartbeat timeout, named master of its own epoch again:
// it must not serve its shorter log (the slaves would cut theirs to it),
// nothing acknowledged may be lost and the set must be whole again.
func TestMasterRestartedWithTailDropped(t *testing.T) {
	requireControllerMode(t)
	c := startCluster(t)
	w := startWorkload(t, c, "FailoverTailMaster", 3)
	w.awaitAcks(setA, 300, 60*time.Second)
	before, m := c.master()
	if m == nil {
		c.fail(fmt.Errorf("no replica serves the master %s", before.MasterAddr))
	}
	w.rec.Faulted(check.Fault{Kind: "master restarted, unsynced tail dropped", Broker: setA, Master: m.addr, At: time.Now()})
	d, err := m.dropTail()
	if err != nil {
		c.fail(err)
	}
	if d.Bytes == 0 {
		c.fail(fmt.Errorf("the killed master had nothing unflushed past its checkpoint's offset %d: the fault did nothing", d.From))
	}
	t.Logf("%s: dropped %d CommitLog bytes from offset %d (checkpoint %+v)", m.name, d.Bytes, d.From, d.Checkpoint)
	if err := m.start(); err != nil {
		c.fail(err)
	}
	if err := c.awaitHealthy(90 * time.Second); err != nil {
		c.fail(err)
	}
	w.awaitAcks(setA, w.ackedOn(setA)+100, 60*time.Second)
	after := c.view.current()
	t.Logf("controllers: epoch %d master %s -> epoch %d master %s", before.MasterEpoch, before.MasterAddr, after.MasterEpoch, after.MasterAddr)
	rep := w.finalRead(30 * time.Second)
	t.Logf("%s", rep)
	if rep.Failed() {
		c.fail(fmt.Errorf("the history breaks a guarantee: %s", rep))
	}
}
