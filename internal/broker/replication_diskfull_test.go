package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// A slave whose disk fills stops replicating with an error naming the
// offset and the full disk (haClientError in its runtime figures), and
// resumes by itself, without a gap, once space returns: the SYNC_MASTER
// answers FLUSH_SLAVE_TIMEOUT (or SLAVE_NOT_AVAILABLE) meanwhile and
// SEND_OK again afterwards.
func TestSlaveDiskFullStopsReplicationAndResumes(t *testing.T) {
	t.Parallel()
	ns, err := namesrv.New(namesrv.DefaultConfig(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	m := startHABroker(t, ns, func(c *Config, s *store.Config) {
		s.BrokerRole = store.SyncMaster
		c.HA.SlaveTimeout = 300
		c.HA.SendHeartbeatInterval = 100
	})
	inj := vfs.NewInjector(vfs.OS())
	sdir := t.TempDir()
	scfg := testkit.StoreConfig(sdir, testkit.Medium)
	scfg.BrokerRole = store.Slave
	scfg.WriteWithoutMmap = true // every CommitLog write goes through pwrite
	st, err := store.Open(scfg, inj, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.BrokerID = 1
	cfg.HA.SendHeartbeatInterval = 100
	sb, err := New(cfg, Options{Store: st, StoreConfig: scfg, LocalNamesrv: ns, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Start(); err != nil {
		t.Fatal(err)
	}
	s := &testEnv{t: t, b: sb, client: transport.NewClient(transport.ClientConfig{DialTimeout: 3 * time.Second}),
		dir: sdir, cfg: cfg, scfg: scfg}
	t.Cleanup(s.stop)
	waitFor(t, "the slave in sync", func() bool { return m.b.repl.master.InSyncSlaves() == 1 })

	m.createTopic("TopicDiskFull", 1)
	send := func() int32 {
		return m.invoke(sendV1("TopicDiskFull", 0, map[string]string{}, []byte("m"))).Code
	}
	if code := send(); code != remoting.Success {
		t.Fatalf("send with the slave in sync: %d", code)
	}

	inj.SetENOSPCOn("commitlog", true, true)
	// The send's own bytes are what the full slave fails to write: the
	// master ships them once they are in its log, and counts the slaves in
	// sync only after that, as RocketMQ's handleHA does. A slave that
	// fails and drops its connection in between is no longer in sync, and
	// the answer is SLAVE_NOT_AVAILABLE; otherwise the wait times out.
	// Either way the message is not acknowledged as replicated.
	if code := send(); code != remoting.FlushSlaveTimeout && code != remoting.SlaveNotAvailable {
		t.Fatalf("send with the slave's disk full: %d, want FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE", code)
	}
	waitFor(t, "the slave's stop error", func() bool { return sb.RuntimeInfo()["haClientError"] != "" })
	if e := sb.RuntimeInfo()["haClientError"]; !strings.Contains(e, "no space left on device") || !strings.Contains(e, "stopped at CommitLog offset") {
		t.Fatalf("haClientError %q, want the offset and the full disk named", e)
	}

	inj.SetENOSPCOn("", false, false)
	waitFor(t, "a send answered SEND_OK once space returned", func() bool { return send() == remoting.Success })
	// Both sides dispatch into their queues behind their logs: the
	// master's queue may lag its log as much as the slave's does.
	waitFor(t, "the slave to hold the master's log, both dispatched", func() bool {
		return st.MaxPhyOffset() == m.b.store.MaxPhyOffset() && st.DispatchBehindBytes() == 0 &&
			m.b.store.DispatchBehindBytes() == 0
	})
	if got, want := st.MaxOffsetInQueue("TopicDiskFull", 0), m.b.store.MaxOffsetInQueue("TopicDiskFull", 0); got != want {
		t.Fatalf("the slave's queue ends at %d, the master's at %d", got, want)
	}
	if e := sb.RuntimeInfo()["haClientError"]; e != "" {
		t.Errorf("haClientError %q after the resume, want none", e)
	}
	m.stop()
}
