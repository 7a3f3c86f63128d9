package failover

import (
	"fmt"
	"testing"
	"time"

	"github.com/spoolmq/spool/test/failover/check"
)

// The harness itself, in any build: controllers, name server and the
// classic broker set start, the watcher finds the controller leader, the
// producers' acknowledgements and the consumers' deliveries are recorded
// across a SIGKILL and restart of the broker (the process dies, its page
// cache does not, so nothing acknowledged may go), and the checker finds
// the history clean.
func TestHarnessRecordsAcrossBrokerKill(t *testing.T) {
	c := startClusterOf(t, false)
	if _, err := c.view.awaitLeader(30 * time.Second); err != nil {
		c.fail(err)
	}
	w := startWorkload(t, c, "FailoverHarness", 2)
	w.awaitAcks(setB, 100, 60*time.Second)
	w.awaitDelivered("live", 1, 60*time.Second)
	f := check.Fault{Kind: "kill -9 classic master", Broker: setB, Master: c.b.addr, At: time.Now()}
	c.b.kill()
	w.rec.Faulted(f)
	time.Sleep(500 * time.Millisecond)
	if err := c.b.start(); err != nil {
		c.fail(err)
	}
	w.awaitAcks(setB, w.ackedOn(setB)+100, 90*time.Second)
	rep := w.finalRead(20 * time.Second)
	t.Logf("%s\n%s", rep, check.Table(w.rec.Faults(), w.rec.History().Sends))
	if rep.Failed() {
		c.fail(fmt.Errorf("the history breaks a guarantee: %s", rep))
	}
	if rep.Unique < rep.Acked-rep.Unacked || rep.Acked < 200 {
		c.fail(fmt.Errorf("too little recorded: %s", rep))
	}
}
