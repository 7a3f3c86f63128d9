//go:build failover

package failover

import (
	"fmt"
	"testing"
	"time"
)

// A master stopped with SIGSTOP until it is replaced and then continued
// comes back as a slave of the new epoch and into its sync-state set.
func TestStoppedMasterRejoins(t *testing.T) {
	requireControllerMode(t)
	c := startCluster(t)
	w := startWorkload(t, c, "FailoverStopped", 3)
	w.awaitAcks(setA, 200, 60*time.Second)
	before, m := c.master()
	m.pause()
	if _, err := c.view.await(90*time.Second, "a new master", func(v view) bool {
		return v.MasterAddr != "" && v.MasterAddr != m.addr && v.MasterEpoch > before.MasterEpoch
	}); err != nil {
		m.resume()
		c.fail(err)
	}
	m.resume()
	if _, err := c.view.await(90*time.Second, "the continued broker back in the sync-state set", func(v view) bool {
		return len(v.SyncStateSet) == 3
	}); err != nil {
		c.fail(err)
	}
	rep := w.finalRead(30 * time.Second)
	if rep.Failed() {
		c.fail(fmt.Errorf("the history breaks a guarantee: %s", rep))
	}
}
