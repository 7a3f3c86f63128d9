package broker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/timer"
	"github.com/spoolmq/spool/remoting"
)

func TestSyncDecision(t *testing.T) {
	v1 := metadata.DataVersion{Timestamp: 100, Counter: 1}
	v2 := metadata.DataVersion{Timestamp: 200, Counter: 2}
	zero := metadata.DataVersion{}
	cases := []struct {
		name   string
		copied *metadata.DataVersion
		seen   metadata.DataVersion
		whole  bool
		since  time.Duration
		want   syncAction
	}{
		{"nothing copied yet", nil, v1, false, 0, fetchTable},
		{"nothing copied, whole answer", nil, v1, true, 0, adoptAnswer},
		{"same version", &v1, v1, false, time.Hour, keepCopy},
		{"same version, whole answer", &v1, v1, true, time.Hour, keepCopy},
		{"version moved", &v1, v2, false, time.Second, fetchTable},
		{"version moved, whole answer", &v1, v2, true, time.Second, adoptAnswer},
		{"no version, copied recently", &zero, zero, false, time.Second, keepCopy},
		{"no version, copy is old", &zero, zero, false, syncAllInterval, fetchTable},
		{"no version, whole answer, copy is old", &zero, zero, true, syncAllInterval, adoptAnswer},
	}
	for _, c := range cases {
		if got := syncDecision(c.copied, c.seen, c.whole, c.since); got != c.want {
			t.Errorf("%s: syncDecision = %d, want %d", c.name, got, c.want)
		}
	}
}

// slavePair starts a master and a slave broker (no HA stream) and points
// the slave's metadata copy at the master.
func slavePair(t *testing.T, mutate func(*Config, *store.Config)) (m, s *testEnv, r *replication) {
	t.Helper()
	m = startBroker(t, mutate)
	s = startBroker(t, func(c *Config, sc *store.Config) { sc.BrokerRole, c.BrokerID = store.Slave, 1 })
	if s.b.repl == nil {
		t.Fatal("slave without replication state")
	}
	s.b.repl.masterClient.set(m.b.Addr())
	return m, s, s.b.repl
}

// The slave fetches the topic and group tables only when their
// dataVersion moved, and picks a new topic up on the next check.
func TestSlaveFetchesTablesOnlyWhenTheVersionMoved(t *testing.T) {
	t.Parallel()
	m, s, r := slavePair(t, nil)
	st := s.b.newSlaveSync()
	round := func() (topics, groups int64) {
		s.b.slaveSyncRound(r, st)
		return s.b.syncCounts.topicFetches.Load(), s.b.syncCounts.groupFetches.Load()
	}
	if tf, gf := round(); tf != 1 || gf != 1 {
		t.Fatalf("first check fetched topics %d, groups %d times; want 1, 1", tf, gf)
	}
	if tf, gf := round(); tf != 1 || gf != 1 {
		t.Fatalf("unchanged master: topics fetched %d, groups %d times; want still 1, 1", tf, gf)
	}
	m.createTopic("TopicLater", 3)
	if tf, gf := round(); tf != 2 || gf != 1 {
		t.Fatalf("after a new topic: topics fetched %d, groups %d times; want 2, 1", tf, gf)
	}
	if tc := s.b.topics.Find("TopicLater"); tc == nil || tc.ReadQueueNums != 3 {
		t.Fatalf("slave's TopicLater = %+v, want the master's with 3 queues", tc)
	}
	m.b.groups.Put(metadata.NewSubscriptionGroupConfig("GroupLater"))
	if tf, gf := round(); tf != 2 || gf != 2 {
		t.Fatalf("after a new group: topics fetched %d, groups %d times; want 2, 2", tf, gf)
	}
	if s.b.groups.Find("GroupLater") == nil {
		t.Fatal("slave lacks GroupLater")
	}
	if n := s.b.syncCounts.versionChecks.Load(); n != 8 {
		t.Errorf("version checks %d, want 8 (two per round)", n)
	}
}

// A page of the topic table carries the table's version and size.
func TestGetAllTopicConfigPage(t *testing.T) {
	t.Parallel()
	e := startBroker(t, nil)
	e.createTopic("PageA", 1)
	e.createTopic("PageB", 1)
	full := e.invoke(remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
	page := e.invoke(remoting.NewRequest(remoting.GetAllTopicConfig, map[string]string{"topicSeq": "0", "maxTopicNum": "1"}, nil))
	var fd, pd metadata.TopicConfigFile
	if err := json.Unmarshal(full.Body, &fd); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(page.Body, &pd); err != nil {
		t.Fatal(err)
	}
	if len(pd.TopicConfigTable) != 1 || pd.DataVersion != fd.DataVersion {
		t.Fatalf("page holds %d topics, version %+v; want 1 and the table's %+v", len(pd.TopicConfigTable), pd.DataVersion, fd.DataVersion)
	}
	if got := page.ExtFields["totalTopicNum"]; got != strconv.Itoa(len(fd.TopicConfigTable)) {
		t.Fatalf("totalTopicNum %q, want %d", got, len(fd.TopicConfigTable))
	}
	if _, ok := full.ExtFields["totalTopicNum"]; !ok {
		t.Error("the whole table's answer lacks totalTopicNum")
	}
}

// Offsets a consumer committed on the slave while its master was away are
// handed to the master once it answers; an offset the master holds ahead
// is neither moved back on the master nor on the slave.
func TestSlaveHandsLocalOffsetsToTheMaster(t *testing.T) {
	t.Parallel()
	m, s, r := slavePair(t, nil)
	m.createTopic("TopicOff", 2)
	m.b.groups.Put(metadata.NewSubscriptionGroupConfig("cg"))
	m.b.offsets.Commit("cg", "TopicOff", 0, 4)
	m.b.offsets.Commit("cg", "TopicOff", 1, 40)
	st := s.b.newSlaveSync()
	s.b.slaveSyncRound(r, st)
	commit := func(q int, off int64) {
		resp := s.invoke(remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{
			"consumerGroup": "cg", "topic": "TopicOff", "queueId": strconv.Itoa(q), "commitOffset": strconv.FormatInt(off, 10)}, nil))
		if resp.Code != remoting.Success {
			t.Fatalf("commit on the slave answered %d %q", resp.Code, resp.Remark)
		}
	}
	commit(0, 9)  // ahead of the master's 4
	commit(1, 30) // behind the master's 40
	s.b.slaveSyncRound(r, st)
	if got := m.b.offsets.Query("cg", "TopicOff", 0); got != 9 {
		t.Errorf("master's queue 0 offset %d, want the slave's 9", got)
	}
	if got := m.b.offsets.Query("cg", "TopicOff", 1); got != 40 {
		t.Errorf("master's queue 1 offset %d, want its own 40 kept", got)
	}
	if got := s.b.offsets.Query("cg", "TopicOff", 1); got != 40 {
		t.Errorf("slave's queue 1 offset %d, want the master's 40 (forward only)", got)
	}
	if n := len(s.b.offsets.LocalCommits()); n != 0 {
		t.Errorf("%d local commits left unsettled", n)
	}
	if n := s.b.syncCounts.offsetsPushed.Load(); n != 1 {
		t.Errorf("offsets handed to the master: %d, want 1", n)
	}
}

// A slave restarted while its master is down still hands the master the
// offsets committed on it meanwhile: its note of them is kept in its
// config directory, and a settled note is kept empty.
func TestSlaveKeepsLocalOffsetsAcrossRestart(t *testing.T) {
	t.Parallel()
	mdir, sdir := t.TempDir(), t.TempDir()
	slave := func(c *Config, sc *store.Config) { sc.BrokerRole, c.BrokerID = store.Slave, 1 }
	m := startBrokerIn(t, mdir, nil)
	s := startBrokerIn(t, sdir, slave)
	m.createTopic("TopicNote", 1)
	m.b.groups.Put(metadata.NewSubscriptionGroupConfig("cg"))
	m.b.offsets.Commit("cg", "TopicNote", 0, 4)
	s.b.repl.masterClient.set(m.b.Addr())
	s.b.slaveSyncRound(s.b.repl, s.b.newSlaveSync())

	m.stop() // the master is down
	resp := s.invoke(remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": "cg", "topic": "TopicNote", "queueId": "0", "commitOffset": "9"}, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("commit on the slave answered %d %q", resp.Code, resp.Remark)
	}
	s.stop()
	s = startBrokerIn(t, sdir, slave)
	key := metadata.OffsetKey{Topic: "TopicNote", Group: "cg", QueueID: 0}
	if got := s.b.offsets.LocalCommits(); len(got) != 1 || got[key] != 9 {
		t.Errorf("restarted slave's note %v, want %v = 9", got, key)
	}

	m = startBrokerIn(t, mdir, nil) // the master is back
	if got := m.b.offsets.Query("cg", "TopicNote", 0); got != 4 {
		t.Fatalf("restarted master's offset %d, want its own 4", got)
	}
	s.b.repl.masterClient.set(m.b.Addr())
	s.b.slaveSyncRound(s.b.repl, s.b.newSlaveSync())
	if got := m.b.offsets.Query("cg", "TopicNote", 0); got != 9 {
		t.Errorf("master's offset %d, want the slave's 9", got)
	}
	if n := len(s.b.offsets.LocalCommits()); n != 0 {
		t.Errorf("%d local commits left unsettled", n)
	}

	// The settled note is written empty: nothing to hand back after
	// another restart.
	s.stop()
	s = startBrokerIn(t, sdir, slave)
	if got := s.b.offsets.LocalCommits(); len(got) != 0 {
		t.Errorf("slave restarted after the hand-back notes %v", got)
	}
}

// The master answers GET_TIMER_CHECK_POINT with its wheel's last
// checkpoint; the slave copies it into config/timercheck.
func TestSlaveCopiesTheTimerCheckpoint(t *testing.T) {
	t.Parallel()
	m, s, _ := slavePair(t, nil)
	if resp := s.invoke(remoting.NewRequest(remoting.GetTimerCheckPoint, nil, nil)); resp.Code != remoting.SystemError {
		t.Errorf("a slave (no wheel) answered GET_TIMER_CHECK_POINT %d, want SYSTEM_ERROR", resp.Code)
	}
	if m.b.wheel() == nil {
		t.Fatal("the master runs no timing wheel")
	}
	if err := m.b.wheel().Checkpoint(); err != nil {
		t.Fatal(err)
	}
	resp := m.invoke(remoting.NewRequest(remoting.GetTimerCheckPoint, nil, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("GET_TIMER_CHECK_POINT answered %d %q", resp.Code, resp.Remark)
	}
	want, err := timer.DecodeWireCheckpoint(resp.Body)
	if err != nil || !want.HasScanFrom || want.LastReadTimeMs == 0 {
		t.Fatalf("checkpoint body %+v, %v", want, err)
	}
	if err := s.b.syncTimerCheckpoint(m.b.Addr()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(s.dir, "config", TimerCheckFile))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := timer.DecodeWireCheckpoint(b); err != nil || got != want {
		t.Fatalf("slave's copy %+v, %v; want %+v", got, err, want)
	}
}
