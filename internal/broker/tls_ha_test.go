package broker

import (
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/internal/tlsconf"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// startTLSBroker is startHABroker with TLS keys.
func startTLSBroker(t *testing.T, ns *namesrv.Server, props map[string]string, mutate func(*Config, *store.Config)) *testEnv {
	t.Helper()
	tc, err := tlsconf.Parse(props)
	if err != nil {
		t.Fatal(err)
	}
	if _, set := props[tlsconf.KeyServerMode]; !set {
		tc.Mode = tlsconf.Disabled
	}
	dir := t.TempDir()
	cfg := testConfig()
	scfg := testkit.StoreConfig(dir, testkit.Medium)
	mutate(&cfg, &scfg)
	b, err := New(cfg, Options{StoreConfig: scfg, LocalNamesrv: ns, Logger: testLogger(t), TLS: &tc})
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

// A master's HA port takes the mode of its other ports: with permissive,
// a slave with tls.enable replicates over TLS, and after it stops a
// plain slave replicates over plain TCP; each acknowledges SYNC_MASTER
// sends.
func TestHAPortPermissiveTLSAndPlainSlaves(t *testing.T) {
	t.Parallel()
	ns, err := namesrv.New(namesrv.DefaultConfig(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	m := startTLSBroker(t, ns, map[string]string{"tls.server.mode": "permissive"}, func(c *Config, s *store.Config) {
		s.BrokerRole = store.SyncMaster
		c.HA.SendHeartbeatInterval = 100
	})
	ha := m.b.repl.advertisedHA()
	m.createTopic("TopicTLSHA", 1)
	send := func() *remoting.Command {
		return m.invoke(sendV1("TopicTLSHA", 0, map[string]string{}, []byte("m")))
	}
	slave := func(c *Config, s *store.Config) {
		s.BrokerRole, c.BrokerID = store.Slave, 1
		c.HA.MasterAddress = ha
		c.HA.SendHeartbeatInterval = 100
	}
	ln := m.b.repl.ln.(*tlsconf.Listener)
	tlsSlave := startTLSBroker(t, ns, map[string]string{"tls.enable": "true"}, slave)
	waitFor(t, "the TLS slave in sync", func() bool { return m.b.repl.master.InSyncSlaves() == 1 })
	if resp := send(); resp.Code != remoting.Success {
		t.Fatalf("send with the TLS slave: %d %q", resp.Code, resp.Remark)
	}
	if st := ln.Stats(); st.TLS != 1 || st.Plain != 0 {
		t.Fatalf("HA listener stats %+v, want one TLS slave", st)
	}
	tlsSlave.stop()
	startHABroker(t, ns, slave)
	waitFor(t, "the plain slave connected", func() bool { return ln.Stats().Plain == 1 })
	waitFor(t, "a send acknowledged by the plain slave", func() bool { return send().Code == remoting.Success })
}
