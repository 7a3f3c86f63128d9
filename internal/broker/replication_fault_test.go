package broker

import (
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/internal/testkit/faultproxy"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// startHABroker starts a broker of broker-a registering with ns.
func startHABroker(t *testing.T, ns *namesrv.Server, mutate func(*Config, *store.Config)) *testEnv {
	t.Helper()
	dir := t.TempDir()
	cfg := testConfig()
	scfg := testkit.StoreConfig(dir, testkit.Medium)
	mutate(&cfg, &scfg)
	b, err := New(cfg, Options{StoreConfig: scfg, LocalNamesrv: ns, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := b.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	env := &testEnv{t: t, b: b, client: transport.NewClient(transport.ClientConfig{DialTimeout: 3 * time.Second}),
		dir: dir, cfg: cfg, scfg: scfg}
	t.Cleanup(env.stop)
	return env
}

// A SYNC_MASTER with its slave behind a fault proxy: SEND_OK while the
// slave acknowledges, FLUSH_SLAVE_TIMEOUT while the proxy stalls the
// slave's reports, SEND_OK again once they flow; the slave is admitted
// because the name server lists it under the broker name.
func TestSyncMasterSlaveThroughFaultProxy(t *testing.T) {
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
	haAddr := m.b.repl.advertisedHA()
	proxy, err := faultproxy.New(haAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	startHABroker(t, ns, func(c *Config, s *store.Config) {
		s.BrokerRole, c.BrokerID = store.Slave, 1
		c.HA.MasterAddress = proxy.Addr()
		c.HA.SendHeartbeatInterval = 100
	})
	waitFor(t, "the slave in sync", func() bool { return m.b.repl.master.InSyncSlaves() == 1 })

	m.createTopic("TopicSync", 1)
	send := func() *remoting.Command {
		return m.invoke(sendV1("TopicSync", 0, map[string]string{}, []byte("m")))
	}
	if resp := send(); resp.Code != remoting.Success {
		t.Fatalf("send with the slave in sync: %d %q", resp.Code, resp.Remark)
	}
	proxy.Stall(faultproxy.Up)
	if resp := send(); resp.Code != remoting.FlushSlaveTimeout {
		t.Fatalf("send with the slave's reports stalled: %d %q, want FLUSH_SLAVE_TIMEOUT", resp.Code, resp.Remark)
	}
	proxy.Unstall(faultproxy.Up)
	waitFor(t, "a send answered SEND_OK again", func() bool { return send().Code == remoting.Success })
	if tb := m.b.RuntimeInfo(); tb["inSyncSlaveNums"] != "1" || tb["haConnectionCount"] != "1" {
		t.Errorf("runtime info inSyncSlaveNums %q haConnectionCount %q", tb["inSyncSlaveNums"], tb["haConnectionCount"])
	}
	m.stop() // the master before the proxy: a stalled relay is not waited for
}
