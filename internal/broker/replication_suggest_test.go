package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"

	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
)

// A pull answer's suggestWhichBrokerId, decoded from the answer's header:
// a master with slaveReadEnable sends a reader behind memory to the
// group's whichBrokerWhenConsumeSlowly and keeps an in-memory reader; a
// master without slaveReadEnable always names itself; a slave whose
// master is not connected keeps even a caught-up reader.
func TestPullAnswerSuggestsWhichBroker(t *testing.T) {
	t.Parallel()
	suggested := func(e *testEnv, group string) int64 {
		t.Helper()
		resp := e.invoke(pullReq(group, "TopicSuggest", 0, 0, pullFlagSubscription, 0, "*"))
		if resp.Code != remoting.Success && resp.Code != remoting.PullNotFound {
			t.Fatalf("pull answered %d %q", resp.Code, resp.Remark)
		}
		return extInt(t, resp, "suggestWhichBrokerId")
	}
	master := func(slaveRead bool, ratio int) *testEnv {
		e := startBroker(t, func(c *Config, s *store.Config) {
			c.HA.SlaveReadEnable = slaveRead
			s.AccessMessageInMemoryMaxRatio = ratio // 0: every record behind the end is out of memory
		})
		e.createTopic("TopicSuggest", 1)
		e.mustSend("TopicSuggest", 0, "", "a")
		e.mustSend("TopicSuggest", 0, "", "b")
		e.waitDispatched("TopicSuggest", 0, 2)
		return e
	}

	cold := master(true, 0)
	if got := suggested(cold, "g"); got != 1 {
		t.Errorf("slaveReadEnable master, read behind memory: suggest %d, want whichBrokerWhenConsumeSlowly 1", got)
	}
	g := metadata.NewSubscriptionGroupConfig("g3")
	g.WhichBrokerWhenConsumeSlowly = 3
	cold.b.groups.Put(g)
	if got := suggested(cold, "g3"); got != 3 {
		t.Errorf("group with whichBrokerWhenConsumeSlowly=3: suggest %d, want 3", got)
	}
	if got := suggested(master(true, 40), "g"); got != 0 {
		t.Errorf("slaveReadEnable master, read in memory: suggest %d, want 0", got)
	}
	if got := suggested(master(false, 0), "g"); got != 0 {
		t.Errorf("master without slaveReadEnable: suggest %d, want 0", got)
	}

	s := startBroker(t, func(c *Config, sc *store.Config) {
		sc.BrokerRole, c.BrokerID, c.HA.SlaveReadEnable = store.Slave, 2, true
	})
	s.createTopic("TopicSuggest", 1)
	if got := suggested(s, "g"); got != 2 {
		t.Errorf("slave without a connected master: suggest %d, want itself (2)", got)
	}
}

// A pull answered empty because the cold-read budget is spent suggests
// the slave too: it was found outside the in-memory window.
func TestColdRetrySuggestsTheSlave(t *testing.T) {
	e, bs := startBusyBroker(t, func(c *Config, _ *store.Config) {
		c.ColdReadBytesPerSecond = 1000
		c.HA.SlaveReadEnable = true
	}, nil)
	clk := clock.NewManual(time.Unix(1000, 0))
	e.b.cold.mu.Lock()
	e.b.cold.clock = clk
	e.b.cold.mu.Unlock()
	e.createTopic("COLD", 1)
	for range 3 {
		e.mustSend("COLD", 0, "", strings.Repeat("c", 400))
	}
	e.waitDispatched("COLD", 0, 3)
	bs.cold.Store(true)
	pull := func(off int64) *remoting.Command {
		return e.invoke(pullReq("g", "COLD", 0, off, pullFlagSubscription, 0, "*"))
	}
	pull(0)
	pull(1) // the budget is in debt now
	r := pull(2)
	if r.Code != remoting.PullRetryImmediately {
		t.Fatalf("pull over the budget: code %d %q", r.Code, r.Remark)
	}
	if got := extInt(t, r, "suggestWhichBrokerId"); got != 1 {
		t.Errorf("pull over the cold-read budget suggests %d, want whichBrokerWhenConsumeSlowly 1", got)
	}
}

// A slave whose HA stream to its master is connected sends a caught-up
// reader back to the master (0); once the master is gone it keeps the
// reader (its own id).
func TestSlaveSuggestsTheMasterWhileConnected(t *testing.T) {
	t.Parallel()
	ns, err := namesrv.New(namesrv.DefaultConfig(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	m := startHABroker(t, ns, func(c *Config, s *store.Config) {
		c.HA.SendHeartbeatInterval = 100
	})
	s := startHABroker(t, ns, func(c *Config, sc *store.Config) {
		sc.BrokerRole, c.BrokerID = store.Slave, 1
		c.HA.MasterAddress = m.b.repl.advertisedHA()
		c.HA.SendHeartbeatInterval = 100
		c.HA.SlaveReadEnable = true
	})
	m.createTopic("TopicBack", 1)
	m.mustSend("TopicBack", 0, "", "a")
	s.createTopic("TopicBack", 1)
	s.waitDispatched("TopicBack", 0, 1)
	suggested := func() int64 {
		resp := s.invoke(pullReq("g", "TopicBack", 0, 0, pullFlagSubscription, 0, "*"))
		if resp.Code != remoting.Success {
			t.Fatalf("pull from the slave answered %d %q", resp.Code, resp.Remark)
		}
		return extInt(t, resp, "suggestWhichBrokerId")
	}
	waitFor(t, "the slave's HA stream connected", s.b.masterUp)
	if got := suggested(); got != 0 {
		t.Errorf("caught-up reader on a connected slave: suggest %d, want the master (0)", got)
	}
	m.stop()
	waitFor(t, "the slave's HA stream closed", func() bool { return !s.b.masterUp() })
	if got := suggested(); got != 1 {
		t.Errorf("caught-up reader on a slave without its master: suggest %d, want the slave (1)", got)
	}
}
