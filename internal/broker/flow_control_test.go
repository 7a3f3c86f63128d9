package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// busyStore wraps a real store to play a busy page cache, a stuck put,
// cold data and eviction on demand.
type busyStore struct {
	store.MessageStore
	held    atomic.Int64 // put lock hold reported, ns
	putBusy atomic.Bool  // puts answer OS_PAGE_CACHE_BUSY
	cold    atomic.Bool  // every stored message is outside the memory window
	gate    chan struct{}
	entered chan struct{}
	block   atomic.Bool // puts wait for gate
	evict   func(topic string) (store.EvictReport, error)
}

func (s *busyStore) PutLockHeldFor() time.Duration { return time.Duration(s.held.Load()) }

func (s *busyStore) PutMessage(msg *message.Inner, done func(store.PutResult)) {
	if s.block.Load() {
		s.entered <- struct{}{}
		<-s.gate
	}
	if s.putBusy.Load() {
		done(store.PutResult{Status: store.OSPageCacheBusy,
			Remark: "put lock held for 1500ms, limit osPageCacheBusyTimeOutMills=1000ms"})
		return
	}
	s.MessageStore.PutMessage(msg, done)
}

func (s *busyStore) CheckInMemByConsumeOffset(topic string, queueID int32, offset int64) bool {
	if s.cold.Load() {
		return false
	}
	return s.MessageStore.CheckInMemByConsumeOffset(topic, queueID, offset)
}

func (s *busyStore) GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums, maxBytes int32, filter store.MessageFilter) *store.GetResult {
	r := s.MessageStore.GetMessage(group, topic, queueID, offset, maxMsgNums, maxBytes, filter)
	if s.cold.Load() && r != nil {
		r.SuggestPullingFromSlave = true
	}
	return r
}

// GetMessageNoWait turns every pull of cold data back to a worker, as a
// read of data outside memory would be.
func (s *busyStore) GetMessageNoWait(group, topic string, queueID int32, offset int64, maxMsgNums, maxBytes int32, filter store.MessageFilter) (*store.GetResult, bool) {
	if s.cold.Load() {
		return nil, false
	}
	return s.MessageStore.GetMessageNoWait(group, topic, queueID, offset, maxMsgNums, maxBytes, filter)
}

func (s *busyStore) EvictPageCache(topic string) (store.EvictReport, error) {
	if s.evict != nil {
		return s.evict(topic)
	}
	return s.MessageStore.EvictPageCache(topic)
}

// poolStore adds a transient store pool with no buffer left.
type poolStore struct{ *busyStore }

func (poolStore) RemainTransientStoreBufferNumbs() int { return 0 }

// startBusyBroker starts a broker over a busyStore (wrapped further by wrap
// when set).
func startBusyBroker(t *testing.T, mutate func(*Config, *store.Config), wrap func(*busyStore) store.MessageStore) (*testEnv, *busyStore) {
	t.Helper()
	dir := t.TempDir()
	cfg := testConfig()
	scfg := testkit.StoreConfig(dir, testkit.Medium)
	if mutate != nil {
		mutate(&cfg, &scfg)
	}
	inner, err := store.Open(scfg, vfs.Default, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	bs := &busyStore{MessageStore: inner, gate: make(chan struct{}), entered: make(chan struct{}, 16)}
	var st store.MessageStore = bs
	if wrap != nil {
		st = wrap(bs)
	}
	ns := newRecordingNamesrv()
	b, err := New(cfg, Options{Store: st, StoreConfig: scfg, LocalNamesrv: ns, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	env := &testEnv{t: t, b: b, ns: ns, client: transport.NewClient(transport.ClientConfig{DialTimeout: 3 * time.Second}),
		dir: dir, cfg: cfg, scfg: scfg}
	t.Cleanup(env.stop)
	return env, bs
}

func (e *testEnv) runtimeInfo() map[string]string {
	e.t.Helper()
	r := e.invoke(goRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
	var info struct {
		Table map[string]string `json:"table"`
	}
	if err := json.Unmarshal(r.Body, &info); err != nil {
		e.t.Fatal(err)
	}
	return info.Table
}

func TestSendRejectedWhilePutLockHeld(t *testing.T) {
	e, bs := startBusyBroker(t, nil, nil)
	e.createTopic("FC", 1)
	bs.held.Store(int64(1500 * time.Millisecond))
	r := e.invoke(sendV1("FC", 0, nil, []byte("x")))
	want := "[REJECTREQUEST]system busy, start flow control for a while, put lock held: 1500ms, limit osPageCacheBusyTimeOutMills: 1000ms"
	if r.Code != remoting.SystemBusy || r.Remark != want {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	info := e.runtimeInfo()
	if info["busyRejectRequestPageCache"] != "1" || info["pageCacheLockTimeMills"] != "1500" {
		t.Fatalf("figures: reject %s, lock %s", info["busyRejectRequestPageCache"], info["pageCacheLockTimeMills"])
	}
	bs.held.Store(0)
	e.mustSend("FC", 0, "", "y")
	if n := e.b.flow.RejectPageCache.Load(); n != 1 {
		t.Fatalf("rejections %d", n)
	}
}

func TestSendRejectedWhenTransientPoolExhausted(t *testing.T) {
	e, _ := startBusyBroker(t, nil, func(bs *busyStore) store.MessageStore { return poolStore{bs} })
	e.createTopic("FC", 1)
	r := e.invoke(sendV1("FC", 0, nil, []byte("x")))
	if r.Code != remoting.SystemBusy || !strings.HasPrefix(r.Remark,
		"[REJECTREQUEST]system busy, start flow control for a while, transient store pool buffers left: 0, transientStorePoolSize: ") {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	if info := e.runtimeInfo(); info["busyRejectRequestTransientPool"] != "1" || info["remainTransientStoreBufferNumbs"] != "0" {
		t.Fatalf("figures %s %s", info["busyRejectRequestTransientPool"], info["remainTransientStoreBufferNumbs"])
	}
}

func TestSendPCSynchronizedFromStore(t *testing.T) {
	e, bs := startBusyBroker(t, nil, nil)
	e.createTopic("FC", 1)
	bs.putBusy.Store(true)
	r := e.invoke(sendV1("FC", 0, nil, []byte("x")))
	want := "[PC_SYNCHRONIZED]broker busy, start flow control for a while, put lock held for 1500ms, limit osPageCacheBusyTimeOutMills=1000ms"
	if r.Code != remoting.SystemBusy || r.Remark != want {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	if info := e.runtimeInfo(); info["busyPcSynchronized"] != "1" {
		t.Fatalf("busyPcSynchronized %s", info["busyPcSynchronized"])
	}
}

// asyncSends sends n messages, one connection each (a request running
// inline holds up only its own connection), and collects the answers.
type asyncSends struct {
	mu      sync.Mutex
	answers []*remoting.Command
	wg      sync.WaitGroup
}

func (a *asyncSends) send(t *testing.T, addr, topic string) {
	t.Helper()
	cli := transport.NewClient(transport.ClientConfig{DialTimeout: 3 * time.Second})
	t.Cleanup(func() { cli.Close() })
	a.wg.Add(1)
	err := cli.InvokeAsync(context.Background(), addr, sendV1(topic, 0, nil, []byte("x")), func(r *remoting.Command, err error) {
		defer a.wg.Done()
		if err != nil {
			r = &remoting.Command{Code: -1, Remark: err.Error()}
		}
		a.mu.Lock()
		a.answers = append(a.answers, r)
		a.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// byPrefix counts the answers whose remark starts with each prefix ("" =
// SUCCESS).
func (a *asyncSends) byPrefix(t *testing.T, prefixes ...string) map[string]int {
	t.Helper()
	a.wg.Wait()
	out := map[string]int{}
	for _, r := range a.answers {
		matched := false
		for _, p := range prefixes {
			if p == "" && r.Code == remoting.Success || p != "" && r.Code == remoting.SystemBusy && strings.HasPrefix(r.Remark, p) {
				out[p]++
				matched = true
				break
			}
		}
		if !matched {
			t.Errorf("unexpected answer: code %d remark %q", r.Code, r.Remark)
		}
	}
	return out
}

// stickWorkers makes the send executor's two workers block inside puts.
func stickWorkers(t *testing.T, e *testEnv, bs *busyStore, a *asyncSends) {
	t.Helper()
	bs.block.Store(true)
	for range 2 {
		a.send(t, e.b.Addr(), "FC")
		<-bs.entered
	}
}

func TestPCBusyCleanQueue(t *testing.T) {
	e, bs := startBusyBroker(t, nil, nil)
	e.createTopic("FC", 1)
	var a asyncSends
	stickWorkers(t, e, bs, &a)
	for range 3 {
		a.send(t, e.b.Addr(), "FC")
	}
	waitFor(t, "three queued sends", func() bool { return e.b.sendEx.QueueLen() == 3 })
	bs.held.Store(int64(1500 * time.Millisecond))
	e.b.flow.CleanBusyQueue() // the 10 ms loop may have done it already
	waitFor(t, "the queue drained", func() bool { return e.b.sendEx.Stats().Drained == 3 })
	bs.held.Store(0)
	bs.block.Store(false)
	close(bs.gate)
	got := a.byPrefix(t, "", "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: ")
	if got[""] != 2 || got["[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: "] != 3 {
		t.Fatalf("answers %v", got)
	}
	for _, r := range a.answers {
		if r.Code == remoting.SystemBusy && !strings.HasSuffix(r.Remark, "put lock held: 1500ms, limit osPageCacheBusyTimeOutMills: 1000ms") {
			t.Errorf("remark %q", r.Remark)
		}
	}
	if n := e.b.flow.PCBusyCleaned.Load(); n != 3 {
		t.Fatalf("pcBusyCleaned %d", n)
	}
	if info := e.runtimeInfo(); info["busyPcBusyCleanQueue"] != "3" {
		t.Fatalf("busyPcBusyCleanQueue %s", info["busyPcBusyCleanQueue"])
	}
}

func TestSendTimeoutCleanQueue(t *testing.T) {
	e, bs := startBusyBroker(t, func(c *Config, _ *store.Config) { c.WaitTimeMillsInSendQueue = 20 }, nil)
	e.createTopic("FC", 1)
	var a asyncSends
	stickWorkers(t, e, bs, &a)
	a.send(t, e.b.Addr(), "FC")
	waitFor(t, "the queued send answered", func() bool { return e.b.sendEx.Stats().TimedOut == 1 })
	close(bs.gate)
	bs.block.Store(false)
	got := a.byPrefix(t, "", "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: ")
	if got[""] != 2 || got["[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: "] != 1 {
		t.Fatalf("answers %v", got)
	}
	for _, r := range a.answers {
		if r.Code == remoting.SystemBusy && !strings.HasSuffix(r.Remark, "limit: 20ms") {
			t.Errorf("remark %q", r.Remark)
		}
	}
	if info := e.runtimeInfo(); info["busyTimeoutCleanQueue"] != "1" {
		t.Fatalf("busyTimeoutCleanQueue %s", info["busyTimeoutCleanQueue"])
	}
}

func TestSendOverload(t *testing.T) {
	e, bs := startBusyBroker(t, func(c *Config, _ *store.Config) { c.SendThreadPoolQueueCapacity = 1 }, nil)
	e.createTopic("FC", 1)
	var a asyncSends
	stickWorkers(t, e, bs, &a)
	a.send(t, e.b.Addr(), "FC")
	waitFor(t, "a queued send", func() bool { return e.b.sendEx.QueueLen() == 1 })
	r := e.invoke(sendV1("FC", 0, nil, []byte("x")))
	if r.Code != remoting.SystemBusy || r.Remark != "[OVERLOAD]system busy, start flow control for a while, queue size: 1, capacity: 1" {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	close(bs.gate)
	bs.block.Store(false)
	if got := a.byPrefix(t, ""); got[""] != 3 {
		t.Fatalf("answers %v", got)
	}
	if info := e.runtimeInfo(); info["busyOverload"] != "1" {
		t.Fatalf("busyOverload %s", info["busyOverload"])
	}
}

func TestInflightCapPerConnection(t *testing.T) {
	e, _ := startBusyBroker(t, func(c *Config, _ *store.Config) { c.MaxInflightRequestsPerConnection = 1 }, nil)
	e.createTopic("FC", 1)
	// A held pull keeps the connection's only slot.
	held := make(chan *remoting.Command, 1)
	err := e.client.InvokeAsync(context.Background(), e.b.Addr(),
		pullReq("g", "FC", 0, 0, pullFlagSubscription|pullFlagSuspend, 30000, "*"),
		func(r *remoting.Command, err error) { held <- r })
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the held pull", func() bool { return e.b.longPoll.Held() == 1 })
	r := e.invoke(goRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
	if r.Code != remoting.SystemBusy || r.Remark != "[REJECTREQUEST]system busy, too many requests in flight on this connection, limit: 1" {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	// A message wakes the pull and frees the slot.
	other := transport.NewClient(transport.ClientConfig{DialTimeout: 3 * time.Second})
	defer other.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s, err := other.Invoke(ctx, e.b.Addr(), sendV1("FC", 0, nil, []byte("x"))); err != nil || s.Code != remoting.Success {
		t.Fatalf("send: %v %+v", err, s)
	}
	if p := <-held; p == nil || p.Code != remoting.Success {
		t.Fatalf("held pull answer %+v", p)
	}
	if info := e.runtimeInfo(); info["busyRejectRequestInflight"] != "1" {
		t.Fatalf("busyRejectRequestInflight %s", info["busyRejectRequestInflight"])
	}
}

func TestColdReadBudget(t *testing.T) {
	e, bs := startBusyBroker(t, func(c *Config, _ *store.Config) { c.ColdReadBytesPerSecond = 1000 }, nil)
	clk := clock.NewManual(time.Unix(1000, 0))
	e.b.cold.mu.Lock()
	e.b.cold.clock = clk
	e.b.cold.mu.Unlock()
	e.createTopic("COLD", 1)
	body := strings.Repeat("c", 400)
	for range 5 {
		e.mustSend("COLD", 0, "", body)
	}
	e.waitDispatched("COLD", 0, 5)
	pull := func(off int64) *remoting.Command {
		return e.invoke(pullReq("g", "COLD", 0, off, pullFlagSubscription, 0, "*"))
	}

	// Hot data is not charged.
	if r := pull(0); r.Code != remoting.Success || len(decodeRecords(t, r.Body)) != 5 {
		t.Fatalf("hot pull: code %d", r.Code)
	}
	if n := e.b.flow.ColdBytes.Load(); n != 0 {
		t.Fatalf("hot pull charged %d bytes", n)
	}

	bs.cold.Store(true)
	// 1000 bytes of budget: one ~550-byte record fits.
	r := pull(0)
	if r.Code != remoting.Success || len(decodeRecords(t, r.Body)) != 1 || extInt(t, r, "nextBeginOffset") != 1 {
		t.Fatalf("first cold pull: code %d next %s", r.Code, r.Ext("nextBeginOffset"))
	}
	// The rest of the budget is less than a record: still one record (a
	// pull returns at least one), leaving the budget in debt.
	r = pull(1)
	if r.Code != remoting.Success || len(decodeRecords(t, r.Body)) != 1 {
		t.Fatalf("second cold pull: code %d", r.Code)
	}
	// In debt: the pull is held (no worker), re-run once, and answered
	// empty because the clock has not moved.
	r = pull(2)
	if r.Code != remoting.PullRetryImmediately || extInt(t, r, "nextBeginOffset") != 2 ||
		r.Remark != "cold-read budget spent, coldReadBytesPerSecond: 1000" {
		t.Fatalf("third cold pull: code %d remark %q next %s", r.Code, r.Remark, r.Ext("nextBeginOffset"))
	}
	f := e.b.flow
	if f.ColdLimited.Load() != 2 || f.ColdHeld.Load() != 1 || f.ColdRetried.Load() != 1 {
		t.Fatalf("limited %d held %d retried %d", f.ColdLimited.Load(), f.ColdHeld.Load(), f.ColdRetried.Load())
	}
	// A second later the budget has room again.
	clk.Advance(time.Second)
	if r := pull(2); r.Code != remoting.Success || len(decodeRecords(t, r.Body)) != 1 {
		t.Fatalf("cold pull after refill: code %d", r.Code)
	}
	info := e.runtimeInfo()
	if info["coldReadHeld"] != "1" || info["coldReadBytes"] != fmt.Sprint(f.ColdBytes.Load()) || f.ColdBytes.Load() < 3*400 {
		t.Fatalf("figures held %s bytes %s", info["coldReadHeld"], info["coldReadBytes"])
	}

	// The budget is live: 0 turns it off.
	up := e.invoke(goRequest(remoting.UpdateBrokerConfig, nil, []byte("coldReadBytesPerSecond=0\n")))
	if up.Code != remoting.Success {
		t.Fatalf("update: %d %q", up.Code, up.Remark)
	}
	before := f.ColdBytes.Load()
	if r := pull(0); r.Code != remoting.Success || len(decodeRecords(t, r.Body)) != 5 || f.ColdBytes.Load() != before {
		t.Fatalf("pull with the budget off: code %d, charged %d", r.Code, f.ColdBytes.Load()-before)
	}
	// With more budget than a cold read can return, the pull is not
	// checked first and is charged from the store's report.
	up = e.invoke(goRequest(remoting.UpdateBrokerConfig, nil, []byte("coldReadBytesPerSecond=1048576\n")))
	if up.Code != remoting.Success {
		t.Fatalf("update: %d %q", up.Code, up.Remark)
	}
	r = pull(0)
	if r.Code != remoting.Success || len(decodeRecords(t, r.Body)) != 5 || f.ColdBytes.Load() != before+int64(len(r.Body)) {
		t.Fatalf("roomy cold pull: code %d, charged %d of %d", r.Code, f.ColdBytes.Load()-before, len(r.Body))
	}
	if f.ColdLimited.Load() != 3 { // pulls 0 and 1, and 2 after the refill
		t.Fatalf("limited %d", f.ColdLimited.Load())
	}
}

func TestEvictPageCache(t *testing.T) {
	e, bs := startBusyBroker(t, nil, nil)
	e.createTopic("EV", 1)
	var gotTopic atomic.Value
	bs.evict = func(topic string) (store.EvictReport, error) {
		gotTopic.Store(topic)
		return store.EvictReport{Files: 2, Bytes: 1 << 20, ResidentBefore: 900000, ResidentAfter: 4096}, nil
	}
	r := e.invoke(goRequest(remoting.EvictPageCache, map[string]string{"topic": "EV"}, nil))
	if r.Code != remoting.Success || string(r.Body) != `{"files":2,"bytes":1048576,"residentBefore":900000,"residentAfter":4096}` {
		t.Fatalf("code %d remark %q body %s", r.Code, r.Remark, r.Body)
	}
	if gotTopic.Load() != "EV" {
		t.Fatalf("topic %v", gotTopic.Load())
	}
	if r := e.invoke(goRequest(remoting.EvictPageCache, nil, nil)); r.Code != remoting.Success || gotTopic.Load() != "" {
		t.Fatalf("whole log: code %d topic %v", r.Code, gotTopic.Load())
	}
	if r := e.invoke(goRequest(remoting.EvictPageCache, map[string]string{"topic": "NOPE"}, nil)); r.Code != remoting.TopicNotExist {
		t.Fatalf("unknown topic: code %d", r.Code)
	}
	bs.evict = func(string) (store.EvictReport, error) {
		return store.EvictReport{}, fmt.Errorf("EvictPageCache: %w", store.ErrNotBuilt)
	}
	if r := e.invoke(goRequest(remoting.EvictPageCache, nil, nil)); r.Code != remoting.SystemError ||
		!strings.HasPrefix(r.Remark, "evict page cache is not built in this store: ") {
		t.Fatalf("not built: code %d remark %q", r.Code, r.Remark)
	}
	bs.evict = func(string) (store.EvictReport, error) { return store.EvictReport{}, errors.New("madvise: boom") }
	if r := e.invoke(goRequest(remoting.EvictPageCache, nil, nil)); r.Code != remoting.SystemError || r.Remark != "evict page cache: madvise: boom" {
		t.Fatalf("failure: code %d remark %q", r.Code, r.Remark)
	}
}

func TestRuntimeInfoKeys(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("RI", 1)
	e.mustSend("RI", 0, "", "x")
	e.waitDispatched("RI", 0, 1)
	info := e.runtimeInfo()
	var (
		integer  = `^-?\d+$`
		tps      = `^(\d+\.\d+(E-?\d+)?)? (\d+\.\d+(E-?\d+)?)? (\d+\.\d+(E-?\d+)?)?$`
		bytesFmt = `^(\d+ B|\d+\.\d [KMGTPE]iB)$`
	)
	want := map[string]string{
		// RocketMQ's keys.
		"putTps":                               tps,
		"getTotalTps":                          tps,
		"putMessageDistributeTime":             `^(null|(\[[^\]]+\]:\d+ ){13})$`,
		"pageCacheLockTimeMills":               integer,
		"sendThreadPoolQueueSize":              integer,
		"sendThreadPoolQueueHeadWaitTimeMills": integer,
		"sendThreadPoolQueueCapacity":          integer,
		"pullThreadPoolQueueSize":              integer,
		"pullThreadPoolQueueHeadWaitTimeMills": integer,
		"pullThreadPoolQueueCapacity":          integer,
		"litePullThreadPoolQueueSize":          integer,
		"queryThreadPoolQueueSize":             integer,
		"EndTransactionQueueSize":              integer,
		"dispatchBehindBytes":                  integer,
		"remainTransientStoreBufferNumbs":      `^2147483647$`,
		"remainHowManyDataToFlush":             bytesFmt,
		"commitLogDirCapacity":                 `^Total : (\d+ B|\d+\.\d [KMGTPE]iB), Free : (\d+ B|\d+\.\d [KMGTPE]iB)\.$`,
		"commitLogDiskRatio":                   `^(0\.\d{1,2}|1\.0)$`,
		"earliestMessageTimeStamp":             `^1\d{12}$`,
		"msgPutTotalTodayNow":                  `^1$`,
		"msgPutTotalTodayMorning":              integer,
		"msgPutTotalYesterdayMorning":          integer,
		"msgGetTotalTodayNow":                  integer,
		"putMessageTimesTotal":                 `^1$`,
		"putMessageSizeTotal":                  integer,
		"putMessageAverageSize":                `^\d+\.\d+$`,
		"putMessageEntireTimeMax":              integer,
		"putMessageFailedTimes":                integer,
		"putLatency99":                         `^\d+\.\d{2}$`,
		"commitLogMinOffset":                   integer,
		"commitLogMaxOffset":                   `^[1-9]\d*$`,
		"bootTimestamp":                        `^1\d{12}$`,
		"runtime":                              `^\[ \d+ days, \d+ hours, \d+ minutes, \d+ seconds \]$`,
		"brokerVersionDesc":                    `^V5_3_3$`,
		"startAcceptSendRequestTimeStamp":      integer,
		// Spool's figures.
		"putLatencyP99Micros":            integer,
		"putLockHoldP99Micros":           integer,
		"putLockHoldMaxMicros":           integer,
		"fsyncP99Micros":                 integer,
		"fsyncMaxMicros":                 integer,
		"dispatchPassP99Micros":          integer,
		"indexBehindBytes":               integer,
		"putWaitedOnCreate":              integer,
		"spills":                         integer,
		"spillWrites":                    integer,
		"spillFull":                      integer,
		"syncUnderPutLock":               `^0$`,
		"busyOverload":                   `^0$`,
		"busyTimeoutCleanQueue":          `^0$`,
		"busyRejectRequest":              `^0$`,
		"busyRejectRequestPageCache":     `^0$`,
		"busyRejectRequestTransientPool": `^0$`,
		"busyRejectRequestInflight":      `^0$`,
		"busyPcSynchronized":             `^0$`,
		"busyPcBusyCleanQueue":           `^0$`,
		"coldReadBytesPerSecond":         `^134217728$`,
		"coldReadBytes":                  integer,
		"coldReadHeld":                   integer,
		"pullsHandedOff":                 integer,
		"queuedRequestBytes":             integer,
		"requestBodyBudgetPauses":        integer,
		"requestBodyBudgetPausedMills":   integer,
		"connections":                    `^[1-9]\d*$`,
		"storeReadOnly":                  `^false$`,
	}
	for k, re := range want {
		v, ok := info[k]
		if !ok {
			t.Errorf("runtime info lacks %s", k)
			continue
		}
		if !regexp.MustCompile(re).MatchString(v) {
			t.Errorf("%s = %q, want /%s/", k, v, re)
		}
	}
}

// refusingStore says its next read that must not wait would have to: a
// pull of pages the kernel brings back before the read looks again is
// served, not refused, so real eviction alone cannot force a refusal.
type refusingStore struct {
	*busyStore
	refuseNext atomic.Bool
}

func (r *refusingStore) GetMessageNoWait(group, topic string, queueID int32, offset int64, maxMsgNums int32, maxBytes int32, filter store.MessageFilter) (*store.GetResult, bool) {
	if r.refuseNext.CompareAndSwap(true, false) {
		return nil, false
	}
	return r.busyStore.GetMessageNoWait(group, topic, queueID, offset, maxMsgNums, maxBytes, filter)
}

// A pull of data the page cache no longer holds, read by an event loop,
// is handed to the pull workers: answered with the records all the same,
// counted in pullsHandedOff; a pull of data in memory stays on the loop.
// A push consumer's PULL_MESSAGE and a lite pull consumer's
// LITE_PULL_MESSAGE (with the lite pull flag, as RocketMQ's
// DefaultLitePullConsumer sends it) both run on the loop.
func TestColdPullOnLoopIsHandedOff(t *testing.T) {
	for _, c := range []struct {
		name    string
		code    int32
		sysFlag int
	}{
		{"PULL_MESSAGE", remoting.PullMessage, pullFlagSubscription},
		{"LITE_PULL_MESSAGE", remoting.LitePullMessage, pullFlagSubscription | pullFlagLitePull},
	} {
		t.Run(c.name, func(t *testing.T) {
			var refusing *refusingStore
			e, _ := startBusyBroker(t, func(_ *Config, sc *store.Config) { sc.FlushIntervalCommitLog = 10 },
				func(bs *busyStore) store.MessageStore { refusing = &refusingStore{busyStore: bs}; return refusing })
			e.createTopic("HANDOFF", 1)
			body := strings.Repeat("h", 1000)
			for range 40 {
				e.mustSend("HANDOFF", 0, "", body)
			}
			e.waitDispatched("HANDOFF", 0, 40)
			pull := func() {
				t.Helper()
				req := pullReq("g", "HANDOFF", 0, 0, c.sysFlag, 0, "*")
				req.Code = c.code
				r := e.invoke(req)
				if r.Code != remoting.Success || len(decodeRecords(t, r.Body)) != 32 || extInt(t, r, "nextBeginOffset") != 32 {
					t.Fatalf("pull: code %d %q, next %s", r.Code, r.Remark, r.Ext("nextBeginOffset"))
				}
			}
			f := e.b.flow
			pull()
			if n := f.PullsHandedOff.Load(); n != 0 {
				t.Fatalf("a pull of data in memory was handed off (%d)", n)
			}
			// The records are evicted once flushed (every 10 ms here),
			// and the pull is tried right after an eviction, a few
			// times, until one is refused and handed off.
			evict := func() bool {
				t.Helper()
				var ev store.EvictReport
				for try := 0; try < 50; try++ {
					var err error
					if ev, err = e.b.store.EvictPageCache(""); err != nil {
						t.Fatal(err)
					}
					if ev.Bytes >= 40*1000 && ev.ResidentAfter == 0 {
						return true
					}
					time.Sleep(20 * time.Millisecond)
				}
				t.Logf("the page cache kept the pages (%+v)", ev)
				return false
			}
			for try := 0; try < 5 && f.PullsHandedOff.Load() == 0 && evict(); try++ {
				pull()
			}
			if f.PullsHandedOff.Load() == 0 {
				// A read that must not wait still starts the kernel's
				// read-ahead, and on a fast device the pages may be in by
				// the time it looks again: the read is then served, not
				// refused, without waiting long (seen under load, five
				// times in a row); and a loaded machine may not let the
				// pages go at all. The store then says the read would
				// wait, as it does for pages still on their way.
				t.Logf("no read of evicted pages was refused; the store refuses the next")
				refusing.refuseNext.Store(true)
				pull()
			}
			if n := f.PullsHandedOff.Load(); n != 1 {
				t.Fatalf("%d pulls handed off, want 1", n)
			}
			if info := e.runtimeInfo(); info["pullsHandedOff"] != "1" {
				t.Fatalf("pullsHandedOff %s", info["pullsHandedOff"])
			}
		})
	}
}
