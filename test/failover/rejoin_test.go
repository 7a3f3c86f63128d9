package failover

import (
	"fmt"
	"testing"
	"time"
)

// A slave killed and started again under steady load comes back into
// the sync-state set: its acknowledgements never equal the master's end
// while producers keep appending, yet it is caught up.
func TestSlaveRejoinsUnderLoad(t *testing.T) {
	requireControllerMode(t)
	c := startCluster(t)
	w := startWorkload(t, c, "FailoverRejoin", 3)
	w.awaitAcks(setA, 200, 60*time.Second)
	v, _ := c.master()
	var slave *replica
	for _, r := range c.a {
		if r.addr != v.MasterAddr {
			slave = r
			break
		}
	}
	slave.kill()
	if _, err := c.view.await(60*time.Second, "the killed slave out of the sync-state set", func(v view) bool {
		return len(v.SyncStateSet) == 2
	}); err != nil {
		c.fail(err)
	}
	if err := slave.start(); err != nil {
		c.fail(err)
	}
	before := w.ackedOn(setA)
	if _, err := c.view.await(60*time.Second, "the restarted slave back in the sync-state set under load", func(v view) bool {
		return len(v.SyncStateSet) == 3
	}); err != nil {
		c.fail(fmt.Errorf("%w (%d sends acknowledged meanwhile)", err, w.ackedOn(setA)-before))
	}
	if w.ackedOn(setA) == before {
		c.fail(fmt.Errorf("no load while the slave rejoined"))
	}
	rep := w.finalRead(30 * time.Second)
	if rep.Failed() {
		c.fail(fmt.Errorf("the history breaks a guarantee: %s", rep))
	}
}
