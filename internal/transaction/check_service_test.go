package transaction

import (
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

const (
	testHalfTopic  = "RMQ_SYS_TRANS_HALF_TOPIC"
	testOpTopic    = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	testCheckMaxTo = "TRANS_CHECK_MAX_TIME_TOPIC"
)

// memOffsets is a consumer offset table in memory.
type memOffsets struct {
	mu sync.Mutex
	m  map[string]int64
}

func (o *memOffsets) key(group, topic string, q int32) string {
	return group + "@" + topic + "@" + strconv.Itoa(int(q))
}

func (o *memOffsets) Query(group, topic string, q int32) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if v, ok := o.m[o.key(group, topic, q)]; ok {
		return v
	}
	return -1
}

func (o *memOffsets) Commit(group, topic string, q int32, off int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m[o.key(group, topic, q)] = off
}

// recConn is a producer connection that keeps the checks sent to it.
type recConn struct {
	mu     sync.Mutex
	checks []*remoting.Command
}

func (c *recConn) InvokeOneway(req *remoting.Command) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checks = append(c.checks, req)
	return nil
}

func (c *recConn) taken() []*remoting.Command {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.checks
	c.checks = nil
	return out
}

type serviceEnv struct {
	st      *store.DefaultMessageStore
	offsets *memOffsets
	clk     *clock.Manual
	conn    *recConn
	ensured []string
	root    string
}

func newServiceEnv(t *testing.T) *serviceEnv {
	t.Helper()
	root := t.TempDir()
	st, err := store.Open(testkit.StoreConfig(root, testkit.Small), vfs.OS(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Shutdown() })
	return &serviceEnv{st: st, offsets: &memOffsets{m: map[string]int64{}}, clk: testkit.Clock(), conn: &recConn{}, root: root}
}

// service builds a check service over the env: transactionTimeOut 6 s,
// transactionCheckMax 2, a round every second, reads not limited.
func (e *serviceEnv) service(t *testing.T) *CheckService {
	t.Helper()
	host := message.Addr{IP: []byte{127, 0, 0, 1}, Port: 10911}
	return NewCheckService(Deps{
		Store:   e.st,
		Offsets: e.offsets,
		Producer: func(group string) Conn {
			if group == "pg" {
				return e.conn
			}
			return nil
		},
		EnsureTopic:  func(topic string) { e.ensured = append(e.ensured, topic) },
		WaitDispatch: func(<-chan struct{}) bool { return true },
		PutCode: func(r store.PutResult) (int32, string) {
			if r.Status == store.PutOK {
				return remoting.Success, ""
			}
			return remoting.SystemError, r.Remark
		},
		StoreHost: func() message.Addr { return host },
		Config: func() Config {
			return Config{TimeoutMs: 6000, CheckMax: 2, IntervalMs: 1000, BrokerName: "b0"}
		},
		Clock: e.clk,
		Budget: Budget{
			Wait:   func(int64, func() (int64, int64), <-chan struct{}) bool { return true },
			Charge: func(int64, int64, int64) {},
		},
		HalfTopic: testHalfTopic, OpTopic: testOpTopic, CheckMaxTopic: testCheckMaxTo,
		IndexPath: filepath.Join(e.root, "config", "transactionIndex.json"),
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
}

// putHalf stores a half message of group, born at born, and waits until
// the half queue holds it.
func (e *serviceEnv) putHalf(t *testing.T, group string, i int, born int64) store.PutResult {
	t.Helper()
	props := map[string]string{
		message.PropertyTransactionPrepared:       "true",
		message.PropertyProducerGroup:             group,
		message.PropertyUniqClientMessageIDKeyIdx: "U" + strconv.Itoa(i),
		message.PropertyRealTopic:                 "TXS",
		message.PropertyRealQueueID:               "3",
	}
	m := &message.Inner{Topic: testHalfTopic, Body: []byte("half " + strconv.Itoa(i)), Properties: props,
		PropertiesString: message.EncodeProperties(props), BornTimestamp: born,
		BornHost: message.Addr{IP: []byte{127, 0, 0, 1}, Port: 1}, StoreHost: message.Addr{IP: []byte{127, 0, 0, 1}, Port: 10911}}
	ch := make(chan store.PutResult, 1)
	e.st.PutMessage(m, func(r store.PutResult) { ch <- r })
	r := <-ch
	if r.Status != store.PutOK {
		t.Fatalf("put half %d: %+v", i, r)
	}
	waitUntil(t, "the half queue to hold the half", func() bool { return e.st.MaxOffsetInQueue(testHalfTopic, 0) > r.QueueOffset })
	return r
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// round lets the service's clock reach the next round and waits until the
// service waits on the clock again.
func (e *serviceEnv) round(t *testing.T) {
	t.Helper()
	e.clk.Advance(time.Second)
	e.settle(t)
}

func (e *serviceEnv) settle(t *testing.T) {
	t.Helper()
	waitUntil(t, "the service to wait on its clock", func() bool { return e.clk.Waiters() > 0 })
}

// TestCheckServiceRounds drives the service built from its Deps alone: the
// rebuild indexes the stored halves, a round sends CHECK_TRANSACTION_STATE
// to the group's producer with the half's offsets and the real topic in
// the body, a resolved half is no longer checked, a half of a group
// without a producer is counted but not read, and halves reaching
// transactionCheckMax are moved to TRANS_CHECK_MAX_TIME_TOPIC.
func TestCheckServiceRounds(t *testing.T) {
	e := newServiceEnv(t)
	born := e.clk.Now().UnixMilli() - 10_000
	var halves []store.PutResult
	for i := range 3 {
		halves = append(halves, e.putHalf(t, "pg", i, born))
	}
	halves = append(halves, e.putHalf(t, "gone", 3, born))
	s := e.service(t)
	s.Start()
	e.settle(t)
	if st := s.Stats(); st.Rebuilding || st.PendingHalves != 4 || st.RebuildReads == 0 {
		t.Fatalf("after the rebuild: %+v", st)
	}

	e.round(t)
	checks := e.conn.taken()
	if len(checks) != 3 {
		t.Fatalf("first round: %d checks, want 3", len(checks))
	}
	for i, c := range checks {
		if c.Code != remoting.CheckTransactionState || c.Flag&remoting.FlagOneway == 0 {
			t.Fatalf("check %d: code %d flag %d", i, c.Code, c.Flag)
		}
		if c.Ext("tranStateTableOffset") != strconv.FormatInt(halves[i].QueueOffset, 10) ||
			c.Ext("commitLogOffset") != strconv.FormatInt(halves[i].WroteOffset, 10) ||
			c.Ext("msgId") != "U"+strconv.Itoa(i) || c.Ext("topic") != testHalfTopic || c.Ext("bname") != "b0" {
			t.Fatalf("check %d headers: %v", i, c.ExtFields)
		}
		x, err := message.DecodeRecord(c.Body)
		if err != nil || x.Topic != "TXS" || x.QueueID != 3 || x.Properties[message.PropertyTransactionCheckTimes] != "1" {
			t.Fatalf("check %d body: %+v %v", i, x, err)
		}
	}
	st := s.Stats()
	if st.ChecksSent != 3 || st.CheckReads != 3 || st.SkippedNoProducer != 1 {
		t.Fatalf("after the first round: %+v", st)
	}
	// The commit answering the check finds the record the check read.
	if _, ok := s.TakeChecked(halves[0].WroteOffset); !ok {
		t.Fatal("the checked record is not cached")
	}
	done := make(chan int32, 1)
	s.PutOp(halves[0].QueueOffset, func(code int32, _ string) { done <- code })
	if code := <-done; code != remoting.Success {
		t.Fatalf("op record: code %d", code)
	}

	e.round(t)
	if n := len(e.conn.taken()); n != 2 {
		t.Fatalf("second round: %d checks, want 2 (half 0 is resolved)", n)
	}
	e.round(t)
	if n := len(e.conn.taken()); n != 0 {
		t.Fatalf("third round: %d checks, want none", n)
	}
	waitUntil(t, "the give-ups", func() bool { return s.Stats().PendingHalves == 0 })
	st = s.Stats()
	if st.GivenUp != 3 || st.EndReadsSaved != 1 || st.ChecksSent != 5 {
		t.Fatalf("after transactionCheckMax: %+v", st)
	}
	if len(e.ensured) == 0 || e.ensured[0] != testCheckMaxTo {
		t.Fatalf("topics ensured: %v", e.ensured)
	}
	waitUntil(t, "the moved halves", func() bool { return e.st.MaxOffsetInQueue(testCheckMaxTo, 0) == 3 })
	s.Stop()

	// A new service over the same store and offsets finds nothing pending.
	e.clk = testkit.Clock() // the first service's last wait stays on the old one
	s2 := e.service(t)
	s2.Start()
	e.settle(t)
	if st := s2.Stats(); st.Rebuilding || st.PendingHalves != 0 {
		t.Fatalf("after a restart: %+v", st)
	}
	s2.Stop()
}

// TestCheckServiceStartsAgain: a stopped service starts again (a broker
// that is master again) with its index rebuilt, so it checks the halves
// stored while it was stopped (by another master) and not those resolved
// meanwhile; Start and Stop repeated change nothing.
func TestCheckServiceStartsAgain(t *testing.T) {
	e := newServiceEnv(t)
	born := e.clk.Now().UnixMilli() - 10_000
	h0 := e.putHalf(t, "pg", 0, born)
	s := e.service(t)
	s.Start()
	s.Start()
	e.settle(t)
	if st := s.Stats(); st.Rebuilding || st.PendingHalves != 1 {
		t.Fatalf("after the rebuild: %+v", st)
	}
	s.Stop()
	s.Stop()
	// While stopped: half 0 is resolved and half 1 stored, as another
	// master would have (its op record and half record in the log).
	op := map[string]string{message.PropertyTags: opDone}
	m := &message.Inner{Topic: testOpTopic, Body: []byte(strconv.FormatInt(h0.QueueOffset, 10)), Properties: op,
		PropertiesString: message.EncodeProperties(op),
		BornHost:         message.Addr{IP: []byte{127, 0, 0, 1}, Port: 1}, StoreHost: message.Addr{IP: []byte{127, 0, 0, 1}, Port: 10911}}
	ch := make(chan store.PutResult, 1)
	e.st.PutMessage(m, func(r store.PutResult) { ch <- r })
	if r := <-ch; r.Status != store.PutOK {
		t.Fatalf("op record: %+v", r)
	}
	e.putHalf(t, "pg", 1, born)
	waitUntil(t, "the op queue", func() bool { return e.st.MaxOffsetInQueue(testOpTopic, 0) > 0 })

	stale := e.clk.Waiters() // the first run's last wait stays on the clock
	e.conn.taken()
	s.Start()
	waitUntil(t, "the rebuild", func() bool { return !s.Stats().Rebuilding })
	waitUntil(t, "the service to wait on its clock", func() bool { return e.clk.Waiters() > stale })
	if st := s.Stats(); st.PendingHalves != 1 {
		t.Fatalf("after starting again: %+v", st)
	}
	e.clk.Advance(time.Second)
	waitUntil(t, "a check", func() bool { return s.Stats().ChecksSent > 0 })
	s.Stop()
	checks := e.conn.taken()
	if len(checks) != 1 || checks[0].Ext("msgId") != "U1" {
		t.Fatalf("checks after starting again: %d", len(checks))
	}
}
