package failover

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/broker"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/internal/testkit/brokerkit"
	"github.com/spoolmq/spool/internal/vfs"
)

// slowSync is the latency added to every fsync (and msync) of the master
// while the slow-disk window lasts; slowWindow is how long it lasts (the
// timed form, behind the failover tag, makes it the 30 s).
const slowSync = 2 * time.Second

var slowWindow = 12 * time.Second // longer than the controllers' 10 s heartbeat timeout

// Slow disks are not dead replicas: while every fsync of setA's master
// takes 2 s, the controllers see no change of its sync-state set and
// elect no one; a master stopped with SIGSTOP afterwards is detected and
// replaced. The master of the slow window runs in this process, over a
// file-system seam that injects the latency; the other two replicas are
// processes, so the second master can be stopped.
func TestSlowDiskIsNotADeadReplica(t *testing.T) {
	requireControllerMode(t)
	c := startClusterOf(t, false)
	if _, err := c.view.awaitLeader(30 * time.Second); err != nil {
		c.fail(err)
	}
	inj := vfs.NewInjector(vfs.Default)
	port := brokerPort(t)
	logs := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("in-process master's log (tail):\n%s", tail(logs.String()))
		}
	})
	kb := brokerkit.Start(t, brokerkit.Config{
		FS:   inj,
		Size: testkit.Medium, // 16 MiB CommitLog files: the test stays in the first

		Broker: func(bc *broker.Config) {
			bc.BrokerName, bc.BrokerClusterName = setA, clusterName
			bc.ListenPort, bc.NamesrvAddr, bc.VipChannelEnable = port, c.ns.addr, false
			bc.EnableControllerMode = true
			bc.Controller.ControllerAddr = strings.Join(c.ctlAddrs, ";")
		},
		Options: broker.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))},
	})
	slow := &replica{proc: &proc{name: "in-process master " + setA, addr: kb.Addr()}}
	c.a = append(c.a, slow)
	if _, err := c.view.await(60*time.Second, "the in-process broker as master", func(v view) bool {
		return v.MasterAddr == kb.Addr()
	}); err != nil {
		c.fail(err)
	}
	for i := 1; i <= 2; i++ {
		r := c.newReplica(i)
		c.a = append(c.a, r)
		if err := r.start(); err != nil {
			c.fail(err)
		}
	}
	before, err := c.view.await(90*time.Second, "all three replicas in the sync-state set", func(v view) bool {
		return v.MasterAddr == kb.Addr() && len(v.SyncStateSet) == 3
	})
	if err != nil {
		c.fail(err)
	}
	w := startWorkload(t, c, "FailoverSlowDisk", 2)
	w.awaitAcks(setA, 50, 60*time.Second)

	start := time.Now()
	ackedBefore := w.ackedOn(setA)
	inj.SetLatency(vfs.OpSync, slowSync)
	time.Sleep(slowWindow)
	ackedDuring := w.ackedOn(setA) - ackedBefore
	inj.SetLatency(vfs.OpSync, 0)
	// A shrink would be reported at the next sync-state-set check.
	time.Sleep(6 * time.Second)
	if at := c.view.answeredAt(); at.Before(start.Add(slowWindow)) {
		c.fail(fmt.Errorf("the controllers were not read after the slow window (last answer %v)", at))
	}
	for _, v := range c.view.since(start) {
		if !v.same(before) {
			c.fail(fmt.Errorf("the controllers' view changed while the master's disk was slow: %v, before: %v", v, before))
		}
	}
	if ackedDuring == 0 {
		c.fail(fmt.Errorf("%s acknowledged nothing while its master's fsyncs were slow", setA))
	}
	t.Logf("slow fsync (%v each) for %v: %d sends acknowledged by %s, no sync-state-set change, no election (%v)", slowSync, slowWindow, ackedDuring, setA, before)

	// The in-process master steps down; one of the processes takes over.
	kb.Stop(t)
	// It is stopped once another replica is back in its sync-state set, so
	// that an election has someone to choose.
	next, err := c.view.await(90*time.Second, "a master after the in-process one stopped, with another replica in its sync-state set", func(v view) bool {
		return v.MasterAddr != kb.Addr() && v.MasterEpoch > before.MasterEpoch && c.replicaAt(v.MasterAddr) != nil && c.canFailOver(v)
	})
	if err != nil {
		c.fail(err)
	}
	// A stopped process is a dead replica: it is replaced.
	stopped := c.replicaAt(next.MasterAddr)
	stopped.pause()
	replaced, err := c.view.await(90*time.Second, "a master replacing the stopped one", func(v view) bool {
		return v.MasterAddr != "" && v.MasterAddr != stopped.addr && v.MasterAddr != kb.Addr() && v.MasterEpoch > next.MasterEpoch
	})
	stopped.resume()
	if err != nil {
		c.fail(err)
	}
	t.Logf("SIGSTOP of %s (epoch %d): replaced by %s in epoch %d", stopped.addr, next.MasterEpoch, replaced.MasterAddr, replaced.MasterEpoch)
	rep := w.finalRead(30 * time.Second)
	t.Logf("%s", rep)
	if rep.Failed() {
		c.fail(fmt.Errorf("the history breaks a guarantee: %s", rep))
	}
}
