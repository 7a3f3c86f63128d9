package broker

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/failover"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
)

// haInfoRequest is EXCHANGE_BROKER_HA_INFO as RocketMQ's BrokerOuterAPI
// sends it, in either serialization.
func haInfoRequest(ext map[string]string, ser remoting.SerializeType) *remoting.Command {
	req := goRequest(remoting.ExchangeBrokerHAInfo, ext, nil)
	req.Serialize = ser
	return req
}

var haInfoSerializations = map[string]remoting.SerializeType{"JSON": remoting.SerializeJSON, "ROCKETMQ": remoting.SerializeRocketMQ}

// A master answers its HA listener as advertised (here haListenPort, not
// listenPort+1), the CommitLog's end when it started and its address; a
// slave answers SUCCESS with none of them and, told its master's HA
// address, follows it.
func TestExchangeBrokerHAInfo(t *testing.T) {
	haPort := freePort(t)
	m := startBroker(t, func(c *Config, _ *store.Config) { c.HA.ListenPort = haPort })
	wantHA := net.JoinHostPort("127.0.0.1", strconv.Itoa(haPort))
	if m.b.Addr() == failover.DefaultHAAddr(wantHA) {
		t.Skip("the free HA port is listenPort+1 by chance")
	}
	s := startBroker(t, func(c *Config, sc *store.Config) {
		c.BrokerID = 1
		sc.BrokerRole = store.Slave
	})
	for name, ser := range haInfoSerializations {
		resp := m.invoke(haInfoRequest(nil, ser))
		if resp.Code != remoting.Success || resp.Ext("masterHaAddress") != wantHA ||
			resp.Ext("masterAddress") != m.b.Addr() || resp.Ext("masterFlushOffset") != "0" {
			t.Errorf("%s: master answered %d %q %v, want masterHaAddress %s masterAddress %s masterFlushOffset 0",
				name, resp.Code, resp.Remark, resp.ExtFields, wantHA, m.b.Addr())
		}
		resp = s.invoke(haInfoRequest(nil, ser))
		if resp.Code != remoting.Success || resp.Ext("masterHaAddress") != "" || resp.Ext("masterAddress") != "" ||
			resp.Ext("masterFlushOffset") != "" {
			t.Errorf("%s: slave answered %d %q %v, want SUCCESS without fields", name, resp.Code, resp.Remark, resp.ExtFields)
		}
	}
	resp := s.invoke(haInfoRequest(map[string]string{"masterHaAddress": wantHA, "masterAddress": m.b.Addr(),
		"masterFlushOffset": "0"}, remoting.SerializeRocketMQ))
	if resp.Code != remoting.Success {
		t.Fatalf("slave told its master: %d %q", resp.Code, resp.Remark)
	}
	if got := s.b.repl.haMaster.get(); got != wantHA {
		t.Fatalf("slave's HA master %q, want %s", got, wantHA)
	}
	if got := s.b.repl.masterClient.get(); got != m.b.Addr() {
		t.Fatalf("slave's master client %q, want %s", got, m.b.Addr())
	}
	m.createTopic("HAInfo", 1)
	m.mustSend("HAInfo", 0, "", "x")
	waitFor(t, "the slave to replicate from the named HA address", func() bool {
		return s.b.store.MaxPhyOffset() == m.b.store.MaxPhyOffset()
	})
}

// In controller mode a broker without a role answers SUCCESS without
// fields; an HA address named for a master is what the HA client's
// resolver dials for that master (and only for it); without one, a master
// that cannot be reached resolves to its port + 1.
func TestExchangeBrokerHAInfoControllerMode(t *testing.T) {
	rep := &recReplica{events: make(chan string, 100)}
	e := startBrokerOpts(t, t.TempDir(), Options{replica: rep}, func(c *Config, _ *store.Config) {
		c.EnableControllerMode = true
		c.Controller.ControllerAddr = "127.0.0.1:1"
	})
	for name, ser := range haInfoSerializations {
		resp := e.invoke(haInfoRequest(nil, ser))
		if resp.Code != remoting.Success || resp.Ext("masterHaAddress") != "" || resp.Ext("masterAddress") != "" ||
			resp.Ext("masterFlushOffset") != "" {
			t.Errorf("%s: a broker without a role answered %d %q %v", name, resp.Code, resp.Remark, resp.ExtFields)
		}
	}
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	master := dead.Addr().String()
	dead.Close()
	ctx := context.Background()
	if got := e.b.resolveMasterHA(ctx, master); got != failover.DefaultHAAddr(master) {
		t.Fatalf("an unreachable master resolved to %q, want %s", got, failover.DefaultHAAddr(master))
	}
	resp := e.invoke(haInfoRequest(map[string]string{"masterHaAddress": "127.0.0.1:4242", "masterAddress": master}, remoting.SerializeJSON))
	if resp.Code != remoting.Success {
		t.Fatalf("told the master's HA address: %d %q", resp.Code, resp.Remark)
	}
	if got := e.b.resolveMasterHA(ctx, master); got != "127.0.0.1:4242" {
		t.Fatalf("the named master resolved to %q, want 127.0.0.1:4242", got)
	}
	if got := e.b.resolveMasterHA(ctx, "127.0.0.1:1"); got != "127.0.0.1:2" {
		t.Fatalf("another master resolved to %q, want its port + 1", got)
	}
}

// Two brokers in controller mode, the master's haListenPort not its
// listenPort+1: the slave asks the master for its HA address
// (EXCHANGE_BROKER_HA_INFO) and replicates what the master is sent.
func TestControllerModeSlaveFindsMasterHAPort(t *testing.T) {
	ctlAddr := startTestController(t)
	haPort := freePort(t)
	mode := func(ha int) func(*Config, *store.Config) {
		return func(c *Config, _ *store.Config) {
			c.EnableControllerMode = true
			c.Controller.ControllerAddr = ctlAddr
			c.HA.ListenPort = ha
			c.HA.SendHeartbeatInterval = 200
		}
	}
	m := startBrokerOpts(t, t.TempDir(), Options{}, mode(haPort))
	waitFor(t, "the first broker to be master", func() bool {
		st := m.b.failover.Status()
		return st.Role == failover.RoleMaster && !st.Fenced
	})
	if m.b.Addr() == failover.DefaultHAAddr(net.JoinHostPort("127.0.0.1", strconv.Itoa(haPort))) {
		t.Skip("the free HA port is listenPort+1 by chance")
	}
	if got := m.b.sw.advertisedHA(); got != net.JoinHostPort("127.0.0.1", strconv.Itoa(haPort)) {
		t.Fatalf("the master's HA listener is %s, want port %d", got, haPort)
	}
	s := startBrokerOpts(t, t.TempDir(), Options{}, mode(freePort(t)))
	waitFor(t, "the second broker to be slave", func() bool { return s.b.failover.Status().Role == failover.RoleSlave })
	m.createTopic("HAPort", 1)
	for i := 0; i < 5; i++ {
		m.mustSend("HAPort", 0, "", "m"+strconv.Itoa(i))
	}
	end := m.b.store.MaxPhyOffset()
	deadline := time.Now().Add(20 * time.Second)
	for s.b.store.MaxPhyOffset() != end {
		if time.Now().After(deadline) {
			t.Fatalf("the slave holds %d bytes of the master's %d", s.b.store.MaxPhyOffset(), end)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
