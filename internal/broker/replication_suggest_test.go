package broker

import (
	"testing"

	"github.com/spoolmq/spool/internal/metadata"
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
