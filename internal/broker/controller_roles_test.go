package broker

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/failover"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/timer"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

// notifyRole pushes NOTIFY_BROKER_ROLE_CHANGED to the broker and waits
// until its controller client has applied the role.
func notifyRole(t *testing.T, e *testEnv, master int64, epoch int32, want failover.Role) {
	t.Helper()
	resp := e.invoke(remoting.NewRequest(remoting.NotifyBrokerRoleChanged, map[string]string{
		"masterAddress": "127.0.0.1:30911", "masterBrokerId": strconv.FormatInt(master, 10),
		"masterEpoch": strconv.Itoa(int(epoch)), "syncStateSetEpoch": strconv.Itoa(int(epoch)),
	}, []byte(`{"syncStateSet":[`+strconv.FormatInt(master, 10)+`],"syncStateSetEpoch":`+strconv.Itoa(int(epoch))+`}`)))
	if resp.Code != remoting.Success {
		t.Fatalf("NOTIFY_BROKER_ROLE_CHANGED answered %d %s", resp.Code, resp.Remark)
	}
	waitFor(t, "role "+want.String()+" of epoch "+strconv.Itoa(int(epoch)), func() bool {
		s := e.b.failover.Status()
		return s.Role == want && s.MasterEpoch == epoch
	})
}

// A controller-mode broker that goes master -> slave -> master runs
// delayed delivery, the timing wheel and transaction check-back in both
// master terms and none of them while slave: what came due while it was
// slave, and what is sent in its second term, is delivered (and checked
// back) once it is master again.
func TestControllerModeMasterAgain(t *testing.T) {
	ctlAddr := startTestController(t)
	rep := &recReplica{events: make(chan string, 100)}
	e := startBrokerOpts(t, t.TempDir(), Options{replica: rep}, func(c *Config, s *store.Config) {
		c.EnableControllerMode = true
		c.Controller.ControllerAddr = ctlAddr
		c.TransactionTimeOut = 3000
		c.TransactionCheckInterval = 100
		s.FlushCommitLogLeastPages = 0
		s.MessageDelayLevel = "1s 3s"
	})
	waitFor(t, "master of epoch 1", func() bool { return e.b.failover.Status().Role == failover.RoleMaster })
	if !e.b.config().TimerWheelEnable {
		t.Fatal("timerWheelEnable is off by default")
	}
	e.createTopic("RD", 1)
	e.createTopic("RT", 1)
	prod := newTxProducer(t, e, "txg")
	send := func(topic string, props map[string]string, body string) {
		t.Helper()
		props[message.PropertyKeys] = body
		if r := e.invoke(sendV1(topic, 0, props, []byte(body))); r.Code != remoting.Success {
			t.Fatalf("send %s to %s: code %d remark %q", body, topic, r.Code, r.Remark)
		}
	}
	checked := func(msgID string) bool {
		prod.mu.Lock()
		defer prod.mu.Unlock()
		return prod.last[msgID] != nil
	}

	// First master term: a delayed message (3 s), a timer message (3 s)
	// and a half transaction (checked back after 3 s), then slave at once.
	send("RD", map[string]string{message.PropertyDelayTimeLevel: "2"}, "d1")
	send("RT", map[string]string{message.PropertyTimerDeliverMS: strconv.FormatInt(time.Now().Add(3*time.Second).UnixMilli(), 10)}, "t1")
	putHalves(t, e, "txg", 1, time.Now().UnixMilli())
	notifyRole(t, e, 2, 2, failover.RoleSlave)
	if !e.b.isSlave() {
		t.Fatal("brokerRole is not SLAVE")
	}

	// While slave, nothing comes due: no delivery, no check.
	time.Sleep(4 * time.Second)
	if n, m := e.b.store.MaxOffsetInQueue("RD", 0), e.b.store.MaxOffsetInQueue("RT", 0); n != 0 || m != 0 {
		t.Fatalf("a slave delivered %d delayed and %d timer messages", n, m)
	}
	if n := prod.checks.Load(); n != 0 {
		t.Fatalf("a slave sent %d transaction checks", n)
	}

	// Master again, of epoch 3: what came due is delivered, and what is
	// sent in this term, too.
	notifyRole(t, e, 1, 3, failover.RoleMaster)
	send("RD", map[string]string{message.PropertyDelayTimeLevel: "1"}, "d2")
	send("RT", map[string]string{message.PropertyTimerDeliverMS: strconv.FormatInt(time.Now().Add(time.Second).UnixMilli(), 10)}, "t2")
	old := time.Now().Add(-time.Minute).UnixMilli()
	putHalves(t, e, "txg2", 1, old) // a new group: its msgId is txg2-0
	prod2 := newTxProducer(t, e, "txg2")
	waitFor(t, "both delayed messages", func() bool {
		return e.b.store.MaxOffsetInQueue("RD", 0) == 2
	})
	waitFor(t, "both timer messages", func() bool { return e.b.store.MaxOffsetInQueue("RT", 0) == 2 })
	waitFor(t, "the first term's half checked back", func() bool { return checked("txg-0") })
	waitFor(t, "the second term's half checked back", func() bool {
		prod2.mu.Lock()
		defer prod2.mu.Unlock()
		return prod2.last["txg2-0"] != nil
	})
	keys := map[string]bool{}
	for _, q := range []struct {
		topic string
		qid   int32
	}{{"RD", 0}, {"RT", 0}} {
		for _, x := range e.readQueue(q.topic, q.qid) {
			keys[x.Properties[message.PropertyKeys]] = true
		}
	}
	for _, k := range []string{"d1", "d2", "t1", "t2"} {
		if !keys[k] {
			t.Fatalf("delivered %v, no %s", keys, k)
		}
	}

	// Slave again: the services stop again (idempotently), and a repeated
	// slave push changes nothing.
	notifyRole(t, e, 2, 4, failover.RoleSlave)
	notifyRole(t, e, 2, 5, failover.RoleSlave)
	if _, err := e.b.wheel().Prepare(&message.Inner{Topic: "RT", Properties: map[string]string{
		message.PropertyTimerDeliverMS: strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10)}}); err == nil {
		t.Fatal("the timing wheel of a slave accepts timer messages")
	}
}

// orderReplica is a recReplica that runs hooks inside the role changes.
type orderReplica struct {
	*recReplica
	toSlave, toMaster func()
}

func (r *orderReplica) ChangeToSlave(master int64, haAddr string, epoch int32) error {
	if r.toSlave != nil {
		r.toSlave()
	}
	return r.recReplica.ChangeToSlave(master, haAddr, epoch)
}

func (r *orderReplica) ChangeToMaster(epoch int32, set []int64, setEpoch int32) error {
	if r.toMaster != nil {
		r.toMaster()
	}
	return r.recReplica.ChangeToMaster(epoch, set, setEpoch)
}

// The master-only services are stopped before the replication engine
// follows another master (which cuts the CommitLog) and started only
// after it has begun the new epoch. A timer message past the cut, its
// record replaced by the new master's timer record, is never delivered,
// while that record and one sent in the next master term are, once each.
func TestControllerModeRoleChangeOrder(t *testing.T) {
	ctlAddr := startTestController(t)
	rep := &orderReplica{recReplica: &recReplica{events: make(chan string, 100)}}
	e := startBrokerOpts(t, t.TempDir(), Options{replica: rep}, func(c *Config, s *store.Config) {
		c.EnableControllerMode = true
		c.Controller.ControllerAddr = ctlAddr
		s.FlushCommitLogLeastPages = 0
	})
	waitFor(t, "master of epoch 1", func() bool { return e.b.failover.Status().Role == failover.RoleMaster })
	e.createTopic("RT", 1)
	st := e.b.store.(*store.DefaultMessageStore)
	send := func(key string, due time.Duration) {
		t.Helper()
		props := map[string]string{message.PropertyKeys: key,
			message.PropertyTimerDeliverMS: strconv.FormatInt(time.Now().Add(due).UnixMilli(), 10)}
		if r := e.invoke(sendV1("RT", 0, props, []byte(key))); r.Code != remoting.Success {
			t.Fatalf("send %s: code %d remark %q", key, r.Code, r.Remark)
		}
	}
	running := func() bool {
		e.b.roleMu.Lock()
		defer e.b.roleMu.Unlock()
		return e.b.wheelOn
	}
	waitFor(t, "the wheel", running)
	cut := st.MaxPhyOffset()
	send("cut", 2*time.Second)
	waitFor(t, "the timer linked", func() bool { return e.b.wheel().Stats().EnqueueOffset >= 1 })

	var slaveSaw, masterSaw []bool
	rep.toSlave = func() {
		slaveSaw = append(slaveSaw, running())
		if _, err := st.TruncateTo(cut); err != nil {
			t.Errorf("truncate: %v", err)
		}
		// The new master's log arrives: a timer record it accepted, due
		// in 3 s, where the cut one was.
		due := strconv.FormatInt(time.Now().Add(3*time.Second).UnixMilli(), 10)
		m := &message.Inner{Topic: timer.Topic, Body: []byte("other"), BornHost: e.b.storeHost, StoreHost: e.b.storeHost,
			Properties: map[string]string{message.PropertyKeys: "other", message.PropertyTimerDeliverMS: due,
				message.PropertyTimerOutMS: due, message.PropertyRealTopic: "RT", message.PropertyRealQueueID: "0"}}
		m.TagsCode, _ = strconv.ParseInt(due, 10, 64)
		m.PropertiesString = message.EncodeProperties(m.Properties)
		done := make(chan store.PutResult, 1)
		st.PutMessage(m, func(r store.PutResult) { done <- r })
		if r := <-done; r.Status != store.PutOK || r.WroteOffset != cut {
			t.Errorf("the new master's timer record: %+v, want it at %d", r, cut)
		}
	}
	rep.toMaster = func() {
		masterSaw = append(masterSaw, running())
	}
	notifyRole(t, e, 2, 2, failover.RoleSlave)
	notifyRole(t, e, 1, 3, failover.RoleMaster)
	if len(slaveSaw) != 1 || slaveSaw[0] || len(masterSaw) != 1 || masterSaw[0] {
		t.Fatalf("the wheel ran when the engine changed role: to slave %v, to master %v", slaveSaw, masterSaw)
	}
	waitFor(t, "the wheel again", running)
	send("new", time.Second)
	waitFor(t, "the new timer and the new master's", func() bool { return st.MaxOffsetInQueue("RT", 0) >= 2 })
	time.Sleep(time.Second) // a cut timer or a duplicate would be delivered by now
	keys := map[string]int{}
	for _, x := range e.readQueue("RT", 0) {
		keys[x.Properties[message.PropertyKeys]]++
	}
	if len(keys) != 2 || keys["new"] != 1 || keys["other"] != 1 {
		t.Fatalf("delivered %v, want new and other once each", keys)
	}
}

// A controller-mode slave copies its master's timer checkpoint into
// config/timercheck, from which it starts its wheel when elected without
// wheel files of its own.
func TestControllerModeSlaveCopiesTheTimerCheckpoint(t *testing.T) {
	m := startBroker(t, nil)
	if err := m.b.wheel().Checkpoint(); err != nil {
		t.Fatal(err)
	}
	ctlAddr := startTestController(t)
	rep := &recReplica{events: make(chan string, 100)}
	e := startBrokerOpts(t, t.TempDir(), Options{replica: rep}, func(c *Config, _ *store.Config) {
		c.EnableControllerMode = true
		c.Controller.ControllerAddr = ctlAddr
	})
	waitFor(t, "master of epoch 1", func() bool { return e.b.failover.Status().Role == failover.RoleMaster })
	resp := e.invoke(remoting.NewRequest(remoting.NotifyBrokerRoleChanged, map[string]string{
		"masterAddress": m.b.Addr(), "masterBrokerId": "2", "masterEpoch": "2", "syncStateSetEpoch": "2",
	}, []byte(`{"syncStateSet":[2],"syncStateSetEpoch":2}`)))
	if resp.Code != remoting.Success {
		t.Fatalf("NOTIFY_BROKER_ROLE_CHANGED answered %d %s", resp.Code, resp.Remark)
	}
	path := filepath.Join(e.dir, "config", TimerCheckFile)
	waitFor(t, "the copied checkpoint", func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		got, err := timer.DecodeWireCheckpoint(b)
		return err == nil && got.HasScanFrom && got.LastReadTimeMs > 0
	})
}

// A broker whose wheel does not run in this process (started again as a
// slave) still cuts the wheel's files with the CommitLog, so that the
// wheel it starts when elected drops the timers of cut records even after
// the log has grown past the cut again (internal/timer tests that).
func TestTruncationCutsTheFilesOfAWheelNotRunning(t *testing.T) {
	dir := t.TempDir()
	e := startBrokerIn(t, dir, fastFlush)
	e.createTopic("RT", 1)
	st := e.b.store.(*store.DefaultMessageStore)
	cut := st.MaxPhyOffset()
	props := map[string]string{message.PropertyTimerDeliverMS: strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)}
	if r := e.invoke(sendV1("RT", 0, props, []byte("cut"))); r.Code != remoting.Success {
		t.Fatalf("send: %d %s", r.Code, r.Remark)
	}
	waitFor(t, "the timer linked", func() bool { return e.b.wheel().Stats().EnqueueOffset >= 1 })
	e.stop()

	e = startBrokerIn(t, dir, func(c *Config, s *store.Config) {
		fastFlush(c, s)
		s.BrokerRole, c.BrokerID, c.HA.MasterAddress = store.Slave, 1, "127.0.0.1:1"
	})
	if e.b.wheel() != nil {
		t.Fatal("a slave opened the timing wheel")
	}
	st = e.b.store.(*store.DefaultMessageStore)
	if _, err := st.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "timercut"))
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(b)), " "+strconv.FormatInt(cut, 10)) {
		t.Fatalf("timercut %q (%v), want the cut at %d", b, err, cut)
	}
	e.stop()

	// Elected: the timer topic's queue is linked again from its new end.
	e = startBrokerIn(t, dir, fastFlush)
	waitFor(t, "the wheel recovered", func() bool { return !e.b.wheel().Stats().Recovering })
	if s := e.b.wheel().Stats(); s.EnqueueOffset != 0 {
		t.Fatalf("after the cut: linked to %d, want 0", s.EnqueueOffset)
	}
}
