package broker

import (
	"strings"
	"testing"

	"github.com/spoolmq/spool/internal/failover"
	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
)

// A SYNC_MASTER without an in-sync slave answers SLAVE_NOT_AVAILABLE at
// once; an ASYNC_MASTER answers SEND_OK.
func TestSyncMasterWithoutSlaveAnswersSlaveNotAvailable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		role string
		want int32
	}{
		{store.SyncMaster, remoting.SlaveNotAvailable},
		{store.AsyncMaster, remoting.Success},
	} {
		e := startBroker(t, func(_ *Config, s *store.Config) { s.BrokerRole = c.role })
		e.createTopic("TopicHA", 1)
		resp := e.invoke(sendV1("TopicHA", 0, map[string]string{}, []byte("m")))
		if resp.Code != c.want {
			t.Errorf("%s: send answered %d %q, want %d", c.role, resp.Code, resp.Remark, c.want)
		}
	}
}

// A slave refuses sends, and pulls unless slaveReadEnable.
func TestSlaveRefusesSendsAndPullsWithoutSlaveRead(t *testing.T) {
	t.Parallel()
	slave := func(read bool) *testEnv {
		return startBroker(t, func(c *Config, s *store.Config) {
			s.BrokerRole, c.BrokerID, c.HA.SlaveReadEnable = store.Slave, 1, read
		})
	}
	s := slave(false)
	if s.b.wheel() != nil {
		t.Error("a slave runs the timing wheel")
	}
	s.createTopic("TopicHA", 1)
	if resp := s.invoke(sendV1("TopicHA", 0, map[string]string{}, []byte("m"))); resp.Code != remoting.SystemBusy || !strings.Contains(resp.Remark, "slave") {
		t.Errorf("send to a slave answered %d %q, want SYSTEM_BUSY naming the slave", resp.Code, resp.Remark)
	}
	if resp := s.invoke(pullReq("g", "TopicHA", 0, 0, 0, 0, "*")); resp.Code != remoting.PullRetryImmediately || !strings.Contains(resp.Remark, "slaveReadEnable") ||
		resp.Ext("suggestWhichBrokerId") != "0" || resp.Ext("nextBeginOffset") != "0" {
		t.Errorf("pull from a slave answered %d %q %v, want PULL_RETRY_IMMEDIATELY naming slaveReadEnable, suggestWhichBrokerId 0, nextBeginOffset 0",
			resp.Code, resp.Remark, resp.ExtFields)
	}
	r := slave(true)
	r.createTopic("TopicHA", 1)
	if resp := r.invoke(pullReq("g", "TopicHA", 0, 0, 0, 0, "*")); resp.Code == remoting.PullRetryImmediately || resp.Code == remoting.SystemBusy {
		t.Errorf("pull with slaveReadEnable=true answered %d %q", resp.Code, resp.Remark)
	}
}

// A slave copies its master's topics, groups and offsets; an offset the
// slave holds ahead of its master's is kept.
func TestSlaveCopiesMasterMetadata(t *testing.T) {
	t.Parallel()
	m := startBroker(t, nil)
	m.createTopic("TopicCopied", 2)
	m.b.offsets.Commit("cg", "TopicCopied", 0, 10)
	m.b.offsets.Commit("cg", "TopicCopied", 1, 7)
	s := startBroker(t, func(c *Config, sc *store.Config) { sc.BrokerRole, c.BrokerID = store.Slave, 1 })
	s.b.offsets.Commit("cg", "TopicCopied", 0, 5)
	s.b.offsets.Commit("cg", "TopicCopied", 1, 50)
	if err := s.b.syncFromMaster(m.b.Addr()); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if tc := s.b.topics.Find("TopicCopied"); tc == nil || tc.ReadQueueNums != 2 {
		t.Fatalf("slave topic = %+v, want the master's with 2 queues", tc)
	}
	if got := s.b.offsets.Query("cg", "TopicCopied", 0); got != 10 {
		t.Errorf("queue 0 offset = %d, want the master's 10", got)
	}
	if got := s.b.offsets.Query("cg", "TopicCopied", 1); got != 50 {
		t.Errorf("queue 1 offset = %d, want the slave's 50 kept", got)
	}
}

// A controller-mode role change stamps the master epoch as the topic data
// version's state version, and the registration body carries it, so a
// name server can refuse a deposed master's late registration.
func TestControllerRoleChangeStampsStateVersion(t *testing.T) {
	t.Parallel()
	env := startBroker(t, nil)
	b := env.b
	before := b.topics.Version()
	b.controllerRoleChanged(failover.Status{Role: failover.RoleMaster, BrokerID: 1, MasterID: 1, MasterEpoch: 7})
	v := b.topics.Version()
	if v.StateVersion != 7 || v.Counter == before.Counter {
		t.Fatalf("data version after becoming master of epoch 7: %+v (before %+v)", v, before)
	}
	table, version := b.topics.Snapshot()
	got, err := namesrv.DecodeRegisterBrokerBody(b.registrar.registerBody(table, version, false), false, remoting.CurrentVersion)
	if err != nil {
		t.Fatal(err)
	}
	if sv := got.TopicConfigSerializeWrapper.DataVersion.StateVersion; sv != 7 {
		t.Fatalf("registration body's stateVersion %d, want 7", sv)
	}
	b.controllerRoleChanged(failover.Status{Role: failover.RoleSlave, BrokerID: 1, MasterID: 2, MasterEpoch: 8})
	if v := b.topics.Version(); v.StateVersion != 8 {
		t.Fatalf("data version after becoming slave in epoch 8: %+v", v)
	}
}
