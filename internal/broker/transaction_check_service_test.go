package broker

import (
	"context"
	"github.com/spoolmq/spool/internal/datapath"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// settle waits until the check service is blocked on the clock again
// (it is the clock's only user), so its counters are stable.
func settle(t *testing.T, c *clock.Manual) {
	t.Helper()
	waitFor(t, "the check service to wait on its clk", func() bool { return c.Waiters() > 0 })
}

// settleRebuilt lets the clock run, a second at a time, until the index
// is rebuilt, and then until the service waits for its next round.
func settleRebuilt(t *testing.T, e *testEnv, clk *clock.Manual) {
	t.Helper()
	for {
		settle(t, clk)
		if !e.b.TransactionStats().Rebuilding {
			return
		}
		clk.Advance(time.Second)
	}
}

// txProducer is a producer connection that counts the checks it gets.
type txProducer struct {
	cl      *transport.Client
	checks  atomic.Int64
	onCheck func(*remoting.Command)
	mu      sync.Mutex
	last    map[string]*remoting.Command // msgId -> latest check
}

func newTxProducer(t testing.TB, e *testEnv, group string) *txProducer {
	t.Helper()
	p := &txProducer{last: make(map[string]*remoting.Command)}
	p.cl = transport.NewClient(transport.ClientConfig{Handler: func(c *transport.Conn, req *remoting.Command) *remoting.Command {
		if req.Code == remoting.CheckTransactionState {
			p.mu.Lock()
			p.last[req.Ext("msgId")] = req
			p.mu.Unlock()
			p.checks.Add(1)
			if p.onCheck != nil {
				p.onCheck(req)
			}
		}
		return nil
	}})
	t.Cleanup(func() { p.cl.Close() })
	hb := []byte(`{"clientID":"` + group + `@1","producerDataSet":[{"groupName":"` + group + `"}],"consumerDataSet":[]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := p.cl.Invoke(ctx, e.b.Addr(), goRequest(remoting.HeartBeat, nil, hb)); err != nil || r.Code != remoting.Success {
		t.Fatalf("producer heartbeat: %v %+v", err, r)
	}
	return p
}

// putHalves stores n half messages of group through the send path's put
// and waits for all of them; it returns their send results.
func putHalves(t testing.TB, e *testEnv, group string, n int, born int64) []store.PutResult {
	t.Helper()
	out := make([]store.PutResult, n)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := range n {
		props := map[string]string{
			message.PropertyTransactionPrepared:       "true",
			message.PropertyProducerGroup:             group,
			message.PropertyUniqClientMessageIDKeyIdx: group + "-" + strconv.Itoa(i),
			message.PropertyTags:                      "tx",
		}
		m := &message.Inner{Topic: "TXS", QueueID: int32(i % 4), Body: []byte("half body " + strconv.Itoa(i)),
			Properties: props, SysFlag: message.TransactionPreparedType, BornTimestamp: born,
			BornHost: e.b.storeHost, StoreHost: e.b.storeHost}
		datapath.ToHalfMessage(m)
		m.PropertiesString = message.EncodeProperties(props)
		wg.Add(1)
		e.b.data.PutMessage(m, func(r store.PutResult) {
			if r.Status != store.PutOK {
				failed.Add(1)
			}
			out[i] = r
			wg.Done()
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d half puts failed", failed.Load())
	}
	return out
}

func updateBrokerConfig(t *testing.T, e *testEnv, kv string) {
	t.Helper()
	if r := e.invoke(goRequest(remoting.UpdateBrokerConfig, nil, []byte(kv))); r.Code != remoting.Success {
		t.Fatalf("update broker config %q: code %d remark %q", kv, r.Code, r.Remark)
	}
}

// TestTransactionCheckBudgetHolds: 10,000 pending halves, a producer
// online, and a low read budget. Each clock second the service reads no
// more than the budget allows (counted, not timed), first bound by the
// message rate, then, after a live change, by the byte rate.
func TestTransactionCheckBudgetHolds(t *testing.T) {
	const halves = 10000
	const msgRate = 100
	clk := testkit.ClockAhead(time.Hour)
	e := startBrokerOpts(t, t.TempDir(), Options{Clock: clk}, func(c *Config, _ *store.Config) {
		c.TransactionCheckInterval = 1000
		c.TransactionTimeOut = 6000
		c.TransactionCheckReadMsgsPerSecond = msgRate
		c.TransactionCheckReadBytesPerSecond = 1 << 30
	})
	p := newTxProducer(t, e, "bpg")
	// The start-up rebuild of the (empty) index is done before the halves
	// arrive, so that it cannot read them on a slow run.
	settleRebuilt(t, e, clk)
	res := putHalves(t, e, "bpg", halves, time.Now().UnixMilli())
	recSize := int64(res[0].WroteBytes)
	settle(t, clk)
	if s := e.b.TransactionStats(); s.PendingHalves != halves || s.CheckReads != 0 || s.Rebuilding {
		t.Fatalf("before the first round: %+v", s)
	}
	prev := int64(0)
	for step := 1; step <= 5; step++ {
		clk.Advance(time.Second)
		settle(t, clk)
		s := e.b.TransactionStats()
		if got := s.CheckReads - prev; got > msgRate || got < msgRate*9/10 {
			t.Fatalf("second %d: %d reads, budget %d/s", step, got, msgRate)
		}
		if s.CheckReads != s.ChecksSent {
			t.Fatalf("second %d: %d reads for %d checks: a read that did not serve a check", step, s.CheckReads, s.ChecksSent)
		}
		prev = s.CheckReads
	}
	// The byte budget now binds: 20 records a second.
	byteRate := 20 * recSize
	updateBrokerConfig(t, e, "transactionCheckReadBytesPerSecond="+itoa64(byteRate)+"\n")
	prevBytes := e.b.TransactionStats().CheckReadBytes
	for step := 1; step <= 3; step++ {
		clk.Advance(time.Second)
		settle(t, clk)
		s := e.b.TransactionStats()
		// The first second may still spend what was left of the larger
		// byte bucket, capped to one second of the new rate.
		if got := s.CheckReadBytes - prevBytes; got > 2*byteRate {
			t.Fatalf("byte-bound second %d: %d bytes read, budget %d B/s", step, got, byteRate)
		}
		prevBytes = s.CheckReadBytes
	}
	s := e.b.TransactionStats()
	if s.CheckReads >= halves/10 || s.ChecksSent != s.CheckReads {
		t.Fatalf("after 8 budgeted seconds: %+v", s)
	}
	waitFor(t, "checks to reach the producer", func() bool { return p.checks.Load() == s.ChecksSent })
	t.Logf("10000 pending halves: %d checks, %d reads, %d bytes read in 8 budgeted seconds (%d msg/s, then %d B/s); record %d B",
		s.ChecksSent, s.CheckReads, s.CheckReadBytes, msgRate, byteRate, recSize)
}

// TestTransactionCheckNoProducerNoRead: halves of a group without a live
// producer connection are never read.
func TestTransactionCheckNoProducerNoRead(t *testing.T) {
	dir := t.TempDir()
	mutate := func(c *Config, _ *store.Config) { c.TransactionCheckInterval = 1000 }
	clk := testkit.ClockAhead(time.Hour)
	e := startBrokerOpts(t, dir, Options{Clock: clk}, mutate)
	putHalves(t, e, "gone", 1000, time.Now().UnixMilli())
	settle(t, clk)
	for range 3 {
		clk.Advance(time.Second)
		settle(t, clk)
	}
	s := e.b.TransactionStats()
	if s.CheckReads != 0 || s.CheckReadBytes != 0 || s.ChecksSent != 0 || s.SkippedNoProducer != 3000 || s.PendingHalves != 1000 {
		t.Fatalf("no producer: %+v", s)
	}
	// Each round counted as an attempt, as RocketMQ counts them; at
	// transactionCheckMax attempts a half is given up, which reads it once.
	if h, _ := e.b.txCheck.Index().Get(0); h.Checks != 3 {
		t.Fatalf("attempts counted: %d", h.Checks)
	}
	// 256 attempts to an op record: 4 records a round.
	e.waitDispatched(topicTransOpHalf, 0, 12)
	if n := e.b.store.MaxOffsetInQueue(topicTransOpHalf, 0); n != 12 {
		t.Fatalf("%d op records for 3 rounds of 1000 attempts", n)
	}
	// The batched counts come back from the op records alone.
	e.stop()
	for _, f := range []string{"transactionIndex.json", "consumerOffset.json"} {
		if err := os.Remove(filepath.Join(dir, "config", f)); err != nil {
			t.Fatal(err)
		}
	}
	clk = testkit.ClockAhead(time.Hour)
	e = startBrokerOpts(t, dir, Options{Clock: clk}, mutate)
	// The rebuild reads 1012 records at 1000 a second.
	settleRebuilt(t, e, clk)
	if s := e.b.TransactionStats(); s.RebuildReads != 1012 {
		t.Fatalf("rebuild: %+v", s)
	}
	for _, q := range []int64{0, 500, 999} {
		if h, ok := e.b.txCheck.Index().Get(q); !ok || h.Checks != 3 {
			t.Fatalf("half %d after restart: %+v %v", q, h, ok)
		}
	}
	updateBrokerConfig(t, e, "transactionCheckMax=3\n")
	clk.Advance(time.Second)
	settle(t, clk)
	s = e.b.TransactionStats()
	if s.GivenUp != 1000 || s.CheckReads != 1000 || s.PendingHalves != 0 || s.ChecksSent != 0 {
		t.Fatalf("giving up without a producer: %+v", s)
	}
	e.waitDispatched(topicTransCheckMax, 0, 1000)
}

// TestTransactionCheckCountsSurviveRestart: check counts and pending
// halves are rebuilt from the half and op queues after a restart (with
// the persisted floors, and without them), a live transactionCheckMax
// then moves the halves to TRANS_CHECK_MAX_TIME_TOPIC, and they stay
// resolved after another restart.
func TestTransactionCheckCountsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	mutate := func(c *Config, _ *store.Config) {
		c.TransactionCheckInterval = 1000
		c.TransactionCheckReadMsgsPerSecond = 1000
	}
	clk := testkit.ClockAhead(time.Hour)
	e := startBrokerOpts(t, dir, Options{Clock: clk}, mutate)
	p := newTxProducer(t, e, "rpg")
	res := putHalves(t, e, "rpg", 4, time.Now().UnixMilli())
	// Roll back the last one (answered from the index, without a read).
	end := goRequest(remoting.EndTransaction, map[string]string{
		"producerGroup": "rpg", "tranStateTableOffset": itoa64(res[3].QueueOffset),
		"commitLogOffset": itoa64(res[3].WroteOffset), "commitOrRollback": "12", "fromTransactionCheck": "false", "msgId": "rpg-3",
	}, nil)
	if r := e.invoke(end); r.Code != remoting.Success {
		t.Fatalf("rollback: code %d remark %q", r.Code, r.Remark)
	}
	settle(t, clk)
	for range 2 {
		clk.Advance(time.Second)
		settle(t, clk)
	}
	s := e.b.TransactionStats()
	if s.ChecksSent != 6 || s.PendingHalves != 3 {
		t.Fatalf("before restart: %+v", s)
	}
	waitFor(t, "checks to arrive", func() bool { return p.checks.Load() == 6 })
	p.mu.Lock()
	chk := p.last["rpg-1"]
	p.mu.Unlock()
	recs := decodeRecords(t, chk.Body)
	if len(recs) != 1 || recs[0].Topic != "TXS" || recs[0].QueueID != 1 || recs[0].Properties["PGROUP"] != "rpg" ||
		chk.Ext("commitLogOffset") != itoa64(res[1].WroteOffset) || !chk.IsOneway() {
		t.Fatalf("check: ext %v body %+v", chk.ExtFields, recs)
	}
	e.waitDispatched(topicTransOpHalf, 0, 7)
	e.stop()

	checkRebuilt := func(e *testEnv, clk *clock.Manual, fromSnapshot bool) {
		t.Helper()
		settle(t, clk)
		s := e.b.TransactionStats()
		if s.Rebuilding || s.PendingHalves != 3 || (s.RebuildReads == 0) != fromSnapshot {
			t.Fatalf("after restart (snapshot %v): %+v", fromSnapshot, s)
		}
		for i := range 3 {
			h, ok := e.b.txCheck.Index().Get(res[i].QueueOffset)
			if !ok || h.Checks != 2 || h.Group != "rpg" || h.Phy != res[i].WroteOffset {
				t.Fatalf("half %d after restart: %+v %v", i, h, ok)
			}
		}
		if _, ok := e.b.txCheck.Index().Get(res[3].QueueOffset); ok {
			t.Fatal("the rolled-back half is pending again")
		}
	}
	// The index snapshot written at shutdown covers everything: no reads.
	clk = testkit.ClockAhead(time.Hour)
	e = startBrokerOpts(t, dir, Options{Clock: clk}, mutate)
	checkRebuilt(e, clk, true)
	e.stop()
	// Without the snapshot the rebuild reads from the persisted floors,
	// and without those too it reads both queues whole.
	for i, files := range [][]string{{"transactionIndex.json"}, {"transactionIndex.json", "consumerOffset.json"}} {
		for _, f := range files {
			if err := os.Remove(filepath.Join(dir, "config", f)); err != nil {
				t.Fatal(err)
			}
		}
		clk = testkit.ClockAhead(time.Hour)
		e = startBrokerOpts(t, dir, Options{Clock: clk}, mutate)
		checkRebuilt(e, clk, false)
		if i == 0 {
			e.stop()
		}
	}

	// A longer interval applies live: a second passes without a round.
	updateBrokerConfig(t, e, "transactionCheckInterval=5000\ntransactionCheckMax=2\n")
	newTxProducer(t, e, "rpg")
	clk.Advance(time.Second)
	settle(t, clk)
	if s := e.b.TransactionStats(); s.CheckReads != 0 {
		t.Fatalf("a round ran 1 s into a 5 s interval: %+v", s)
	}
	clk.Advance(4 * time.Second)
	settle(t, clk)
	if s := e.b.TransactionStats(); s.GivenUp != 3 || s.PendingHalves != 0 || s.ChecksSent != 0 {
		t.Fatalf("after transactionCheckMax: %+v", s)
	}
	e.waitDispatched(topicTransCheckMax, 0, 3)
	moved := e.readQueue(topicTransCheckMax, 0)
	if len(moved) != 3 || moved[0].Properties[message.PropertyRealTopic] != "TXS" || string(moved[0].Body) != "half body 0" ||
		moved[0].Properties[message.PropertyTransactionCheckTimes] != "2" {
		t.Fatalf("moved: %+v", moved)
	}
	e.waitDispatched(topicTransOpHalf, 0, 10)
	e.stop()
	clk = testkit.ClockAhead(time.Hour)
	e = startBrokerOpts(t, dir, Options{Clock: clk}, mutate)
	settle(t, clk)
	if s := e.b.TransactionStats(); s.PendingHalves != 0 || s.Rebuilding {
		t.Fatalf("given-up halves pending again after restart: %+v", s)
	}
}

// TestEndTransactionImmunity: a half with CHECK_IMMUNITY_TIME_IN_SECONDS
// older than that may only be ended by an answer to a check.
func TestEndTransactionImmunity(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("IM", 1)
	req := sendV1("IM", 0, map[string]string{"TRAN_MSG": "true", "PGROUP": "ipg", "UNIQ_KEY": "IMK",
		"CHECK_IMMUNITY_TIME_IN_SECONDS": "1"}, []byte("im"))
	req.ExtFields["sysFlag"] = "4"
	req.ExtFields["bornTimestamp"] = itoa64(time.Now().Add(-time.Minute).UnixMilli())
	resp := e.invoke(req)
	if resp.Code != remoting.Success {
		t.Fatalf("half: %d %q", resp.Code, resp.Remark)
	}
	_, phy, _ := message.ParseOffsetMsgID(resp.ExtFields["msgId"])
	end := func(fromCheck string) *remoting.Command {
		return e.invoke(goRequest(remoting.EndTransaction, map[string]string{
			"producerGroup": "ipg", "tranStateTableOffset": resp.ExtFields["queueOffset"], "commitLogOffset": itoa64(phy),
			"commitOrRollback": "8", "fromTransactionCheck": fromCheck, "msgId": "IMK",
		}, nil))
	}
	if r := end("false"); r.Code != remoting.IllegalOperation {
		t.Fatalf("late commit outside a check: code %d remark %q", r.Code, r.Remark)
	}
	if r := end("true"); r.Code != remoting.Success {
		t.Fatalf("commit from a check: code %d remark %q", r.Code, r.Remark)
	}
	e.waitDispatched("IM", 0, 1)
	if n := e.b.TransactionStats().PendingHalves; n != 0 {
		t.Fatalf("%d pending after commit", n)
	}
}
