package incidents

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/broker"
	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/internal/testkit/brokerkit"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// rigOptions shape one broker under test.
type rigOptions struct {
	fs     vfs.FS // nil = the OS
	dir    string // store directory to reuse ("" = a fresh temporary one)
	store  func(*store.Config)
	broker func(*broker.Config)
}

// rig is a name server and a broker on loopback over a store the test
// opened itself, so the test can read store.Stats and inject faults.
type rig struct {
	t      testing.TB
	dir    string
	opts   rigOptions
	ns     *namesrv.Server
	nsAddr string
	kb     *brokerkit.Broker
	st     *store.DefaultMessageStore
	b      *broker.Broker
	admin  *transport.Client
	once   sync.Once
}

func quietLogger() *slog.Logger {
	if os.Getenv("SPOOL_INCIDENTS_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startRig starts a name server and a broker; Cleanup stops them.
func startRig(t testing.TB, o rigOptions) *rig {
	t.Helper()
	r := &rig{t: t, opts: o, dir: o.dir}
	if r.dir == "" {
		r.dir = t.TempDir()
	}
	logger := quietLogger()
	ns, err := namesrv.New(namesrv.DefaultConfig(), logger)
	if err != nil {
		t.Fatalf("namesrv: %v", err)
	}
	r.ns = ns
	a, err := ns.Listen("127.0.0.1:0")
	if err != nil {
		ns.Shutdown()
		t.Fatalf("namesrv listen: %v", err)
	}
	r.nsAddr = a.String()
	r.admin = transport.NewClient(transport.ClientConfig{DialTimeout: 10 * time.Second})
	r.startBroker()
	t.Cleanup(r.stop)
	return r
}

func (r *rig) startBroker() {
	r.t.Helper()
	kb := brokerkit.Start(r.t, brokerkit.Config{Dir: r.dir, Size: testkit.Large, FS: r.opts.fs, Store: r.opts.store,
		Broker: func(bc *broker.Config) {
			bc.BrokerName = "incident-broker"
			bc.BrokerClusterName = "IncidentCluster"
			bc.VipChannelEnable = false
			if r.opts.broker != nil {
				r.opts.broker(bc)
			}
		},
		Options: broker.Options{LocalNamesrv: r.ns, Logger: quietLogger()}})
	r.kb, r.st, r.b = kb, kb.Store, kb.Broker
}

// stopBroker shuts the broker (and its store) down, keeping the name
// server and the store directory.
func (r *rig) stopBroker() {
	if r.b == nil {
		return
	}
	r.kb.Stop(r.t)
	r.admin.CloseConn(r.b.Addr())
	r.kb, r.b, r.st = nil, nil, nil
}

// restartBroker stops the broker and starts it again on the same store.
func (r *rig) restartBroker() {
	r.stopBroker()
	r.startBroker()
}

func (r *rig) stop() {
	r.once.Do(func() {
		r.stopBroker()
		r.admin.Close()
		r.ns.Shutdown()
	})
}

// addr is the broker's client address.
func (r *rig) addr() string { return r.b.Addr() }

func (r *rig) call(addr string, req *remoting.Command) *remoting.Command {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := r.admin.Invoke(ctx, addr, req)
	if err != nil {
		r.t.Fatalf("%s: %v", remoting.RequestName(req.Code), err)
	}
	return resp
}

// createTopic creates topic with queues read/write queues and waits until
// the name server routes it.
func (r *rig) createTopic(topic string, queues int) {
	r.t.Helper()
	resp := r.call(r.addr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "defaultTopic": "TBW102", "readQueueNums": strconv.Itoa(queues),
		"writeQueueNums": strconv.Itoa(queues), "perm": "6", "topicFilterType": "SINGLE_TAG",
		"topicSysFlag": "0", "order": "false",
	}, nil))
	if resp.Code != remoting.Success {
		r.t.Fatalf("create topic %s: code %d: %s", topic, resp.Code, resp.Remark)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if n := r.routedQueues(topic); n == queues {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("topic %s: no route with %d queues after 10s", topic, queues)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// routedQueues asks the name server over the network how many write queues
// topic has on the broker.
func (r *rig) routedQueues(topic string) int {
	resp := r.call(r.nsAddr, remoting.NewRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": topic}, nil))
	if resp.Code != remoting.Success {
		return 0
	}
	var route struct {
		QueueDatas []struct {
			BrokerName     string `json:"brokerName"`
			WriteQueueNums int    `json:"writeQueueNums"`
		} `json:"queueDatas"`
	}
	if err := json.Unmarshal(resp.Body, &route); err != nil {
		r.t.Fatalf("route of %s: %v", topic, err)
	}
	for _, q := range route.QueueDatas {
		if q.BrokerName == "incident-broker" {
			return q.WriteQueueNums
		}
	}
	return 0
}

// stored is the number of messages the consume queues of topic hold, once
// dispatch has caught up with the CommitLog.
func (r *rig) stored(topic string, queues int) int64 {
	r.t.Helper()
	r.waitDispatched()
	var n int64
	for q := 0; q < queues; q++ {
		n += r.st.MaxOffsetInQueue(topic, int32(q)) - r.st.MinOffsetInQueue(topic, int32(q))
	}
	return n
}

// waitDispatched waits until the consume queues cover the whole CommitLog.
func (r *rig) waitDispatched() {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for r.st.DispatchBehindBytes() > 0 {
		if time.Now().After(deadline) {
			// Every goroutine's stack says where dispatch is held.
			buf := make([]byte, 1<<22)
			buf = buf[:runtime.Stack(buf, true)]
			r.t.Logf("store stats: %+v", r.st.Stats())
			r.t.Logf("goroutines:\n%s", buf)
			r.t.Fatalf("dispatch still %d bytes behind after 30s", r.st.DispatchBehindBytes())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// maxOffsets returns each queue's max logical offset once dispatch has
// caught up.
func (r *rig) maxOffsets(topic string, queues int) []int64 {
	r.waitDispatched()
	out := make([]int64, queues)
	for q := range out {
		out[q] = r.st.MaxOffsetInQueue(topic, int32(q))
	}
	return out
}

// fill appends about total bytes of size-byte messages to topic straight
// through the store (old data for a consumer to catch up on), round robin
// over queues, with puts in flight from a few goroutines.
func (r *rig) fill(topic string, queues, size int, total int64) int64 {
	r.t.Helper()
	body := make([]byte, size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	host, err := message.ParseAddr(r.addr())
	if err != nil {
		r.t.Fatal(err)
	}
	n := total / int64(size)
	var next, failed, busy atomic.Int64
	var firstErr atomic.Value
	deadline := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= n {
					return
				}
				m := &message.Inner{Topic: topic, QueueID: int32(i % int64(queues)), Body: body,
					Properties:    map[string]string{message.PropertyUniqClientMessageIDKeyIdx: message.NewUniqID()},
					BornTimestamp: time.Now().UnixMilli(), BornHost: host, StoreHost: host}
				for {
					ch := make(chan store.PutResult, 1)
					r.st.PutMessage(m, func(res store.PutResult) { ch <- res })
					res := <-ch
					if res.Status == store.OSPageCacheBusy && time.Now().Before(deadline) {
						// Setup writes faster than any producer; when it
						// outruns the allocator, wait for it.
						busy.Add(1)
						time.Sleep(time.Millisecond)
						continue
					}
					if res.Status != store.PutOK {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, res.Remark)
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		s := r.st.Stats()
		r.t.Fatalf("filling %s: %d puts failed (%d busy answers retried for 30s), first: %v; store: spills %d, spill full %d, ready files %d, files created %d, alloc failures %d",
			topic, f, busy.Load(), firstErr.Load(), s.Spills, s.SpillFull, s.ReadyFiles, s.FilesCreated, s.AllocFailures)
	}
	if b := busy.Load(); b > 0 {
		r.t.Logf("filling %s: %d puts answered busy and were retried (the fill outran the allocator)", topic, b)
	}
	return n
}

// commitLogFiles lists the CommitLog files (sorted by name = offset).
func (r *rig) commitLogFiles() []string {
	dir := filepath.Join(r.dir, "commitlog")
	ents, err := os.ReadDir(dir)
	if err != nil {
		r.t.Fatalf("read %s: %v", dir, err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && !strings.Contains(e.Name(), ".") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// storeInvariants checks the counters every scenario must keep: nothing
// synced under the put lock, no put waited on a file creation, no put
// refused for a full write spill or an exhausted transient pool (the
// store's page-cache-busy causes it counts).
func storeInvariants(t testing.TB, s store.Stats) {
	t.Helper()
	if s.SpillFull != 0 || s.PoolExhausted != 0 {
		t.Errorf("store refused puts as page-cache busy: %d with a full write spill (SpillFull), %d with the transient pool exhausted (PoolExhausted); want 0",
			s.SpillFull, s.PoolExhausted)
	}
	if s.SyncUnderPutLock != 0 {
		t.Errorf("store counted %d fsync/msync calls under the put lock (SyncUnderPutLock), want 0", s.SyncUnderPutLock)
	}
	if s.PutWaitedOnCreate != 0 {
		t.Errorf("store counted %d puts that waited on a CommitLog file creation (PutWaitedOnCreate), want 0", s.PutWaitedOnCreate)
	}
}

// answerInvariants checks that every answer of a load was well formed and
// that the client never timed out.
func answerInvariants(t testing.TB, name string, r loadResult) {
	t.Helper()
	if r.Malformed != 0 {
		t.Errorf("%s: %d answers were neither OK, FLUSH_DISK_TIMEOUT nor a well-formed busy answer; first: %s", name, r.Malformed, r.FirstBad)
	}
	if r.ClientTO != 0 || r.OtherErrors != 0 {
		t.Errorf("%s: %d client timeouts and %d transport errors; first: %s", name, r.ClientTO, r.OtherErrors, r.FirstBad)
	}
	if r.PageCache != 0 {
		t.Errorf("%s: %d page-cache-busy rejections (%v), want 0", name, r.PageCache, r.BusyByTag)
	}
	if r.SlaveNA != 0 || r.SlaveTO != 0 {
		t.Errorf("%s: %d SLAVE_NOT_AVAILABLE and %d FLUSH_SLAVE_TIMEOUT answers, want 0; first: %s", name, r.SlaveNA, r.SlaveTO, r.FirstBad)
	}
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
