//go:build failover

package failover

import (
	"fmt"
	"testing"
	"time"

	"github.com/spoolmq/spool/test/failover/check"
)

// A master whose CommitLog rolls over to new files keeps its slaves in
// the sync-state set (each file ends with RocketMQ's blank record, which
// the transfer carries like any other bytes), and a SIGKILL after several
// rolls loses nothing acknowledged. The replicas keep 256 KiB files, so
// the load crosses many of them.
func TestFailoverAcrossCommitLogFiles(t *testing.T) {
	requireControllerMode(t)
	c := startCluster(t, "mappedFileSizeCommitLog=262144")
	w := startWorkload(t, c, "FailoverRolls", 3)
	// About 200 bytes a message: 4000 acknowledgements cross three files.
	w.awaitAcks(setA, 4000, 3*time.Minute)

	before, m := c.master()
	if m == nil || !c.canFailOver(before) {
		c.fail(fmt.Errorf("after the CommitLog rolled, the sync-state set holds no other running replica: %v", before))
	}
	f := check.Fault{Kind: "kill -9 master after rolls", Broker: setA, Master: m.addr, At: time.Now(), Failover: true}
	m.kill()
	w.rec.Faulted(f)
	if _, err := c.view.await(90*time.Second, "a new master of "+setA, func(v view) bool {
		return v.MasterAddr != "" && v.MasterAddr != m.addr && v.MasterEpoch > before.MasterEpoch
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
