package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/spoolmq/spool/remoting"
)

// sendLedger records what producers sent: every body answered SEND_OK,
// and the other outcomes by kind.
type sendLedger struct {
	mu      sync.Mutex
	acked   map[string]int // body -> SEND_OK answers
	sent    int
	errs    int
	notOK   map[primitive.SendStatus]int
	perKill []int // acked bodies held when each kill happened
}

func newSendLedger() *sendLedger {
	return &sendLedger{acked: map[string]int{}, notOK: map[primitive.SendStatus]int{}}
}

func (l *sendLedger) record(body string, res *primitive.SendResult, err error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent++
	switch {
	case err != nil:
		l.errs++
	case res.Status != primitive.SendOK:
		l.notOK[res.Status]++
	default:
		l.acked[body]++
		return true
	}
	return false
}

func (l *sendLedger) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

func (l *sendLedger) ackedBodies() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.acked))
	for b := range l.acked {
		out = append(out, b)
	}
	sort.Strings(out)
	return out
}

// producerGen is one generation of producers: workers goroutines sharing
// one official-client producer, each sending its own numbered bodies and
// resending a body until it is answered SEND_OK (an application's
// at-least-once loop).
type producerGen struct {
	stop chan struct{}
	wg   sync.WaitGroup
}

func startProducerGen(t *testing.T, s *spool, gen, workers int, topic string, l *sendLedger) *producerGen {
	t.Helper()
	p := s.newProducer(t, fmt.Sprintf("pg-replication-kill-%d", gen))
	g := &producerGen{stop: make(chan struct{})}
	for w := 0; w < workers; w++ {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			for seq := 0; ; seq++ {
				body := fmt.Sprintf("kill-g%d-w%d-%06d", gen, w, seq)
				for {
					select {
					case <-g.stop:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
					cancel()
					if l.record(body, res, err) {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	t.Cleanup(g.halt)
	return g
}

func (g *producerGen) halt() {
	select {
	case <-g.stop:
	default:
		close(g.stop)
	}
	g.wg.Wait()
}

// routeBrokerIDs returns the broker ids the name server routes for
// brokerName under topic.
func routeBrokerIDs(t testing.TB, namesrv, topic, brokerName string) map[string]string {
	t.Helper()
	rc := dialRaw(t, namesrv)
	defer rc.c.Close()
	resp := rc.call(t, rawRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": topic}, nil))
	out := map[string]string{}
	if resp.Code != remoting.Success {
		return out
	}
	var route struct {
		BrokerDatas []struct {
			BrokerName  string            `json:"brokerName"`
			BrokerAddrs map[string]string `json:"brokerAddrs"`
		} `json:"brokerDatas"`
	}
	if err := json.Unmarshal(resp.Body, &route); err != nil {
		t.Fatalf("route body %q: %v", resp.Body, err)
	}
	for _, b := range route.BrokerDatas {
		if b.BrokerName == brokerName {
			for id, addr := range b.BrokerAddrs {
				out[id] = addr
			}
		}
	}
	return out
}

// consumeWithClient reads every queue of topic from offset 0 to its end
// with the official client's pull consumer, through the name server's
// route (with the master gone the client finds the slave), and counts
// each body.
func consumeWithClient(t *testing.T, s *spool, group, topic string, ends map[int]int64) map[string]int {
	t.Helper()
	pc, err := consumer.NewPullConsumer(
		consumer.WithNameServer([]string{s.namesrvAddr}),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance(group)),
	)
	if err != nil {
		t.Fatalf("new pull consumer: %v", err)
	}
	if err := pc.Subscribe(topic, consumer.MessageSelector{}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := pc.Start(); err != nil {
		t.Fatalf("start pull consumer: %v", err)
	}
	defer func() { _ = pc.Shutdown() }()
	mqs, err := pc.GetTopicRouteInfo(topic)
	if err != nil {
		t.Fatalf("route of %s: %v", topic, err)
	}
	got := map[string]int{}
	seen := map[int]bool{}
	for _, mq := range mqs {
		if seen[mq.QueueId] {
			continue
		}
		seen[mq.QueueId] = true
		end := ends[mq.QueueId]
		offset, failures := int64(0), 0
		for offset < end {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := pc.PullFrom(ctx, mq, offset, 32)
			cancel()
			if err != nil || res.Status != primitive.PullFound {
				if failures++; failures > 50 {
					t.Fatalf("pull of %s/%d at %d (end %d) keeps failing: %v %+v", topic, mq.QueueId, offset, end, err, res)
				}
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for _, m := range res.GetMessageExts() {
				got[string(m.Body)]++
			}
			if res.NextBeginOffset <= offset {
				t.Fatalf("pull of %s/%d at %d answered nextBeginOffset %d", topic, mq.QueueId, offset, res.NextBeginOffset)
			}
			offset = res.NextBeginOffset
		}
	}
	if len(seen) != len(ends) {
		t.Fatalf("the client's route of %s lists %d queues, want %d", topic, len(seen), len(ends))
	}
	return got
}

// runReplicationKillLoop: a SYNC_MASTER and a SLAVE (slaveReadEnable)
// with producers sending through the official client; the master is
// killed with SIGKILL while they send and restarted, cycles times, and
// killed once more at the end. After every kill, with the master down,
// the official client consumes the whole topic from the slave: every
// body answered SEND_OK so far must be there. Bodies stored more than
// once (a resend of a body whose answer was lost or not SEND_OK) are
// counted and logged, as at-least-once delivery allows.
func runReplicationKillLoop(t *testing.T, cycles int) {
	ns := fmt.Sprintf("127.0.0.1:%d", freePort(t, false))
	mPort, sPort := freePort(t, true), freePort(t, true)
	haPort := freePort(t, false)
	master := fmt.Sprintf("127.0.0.1:%d", mPort)
	slave := fmt.Sprintf("127.0.0.1:%d", sPort)
	nsp := startProcess(t, ns, "", "namesrv", "--listen", ns)
	common := []string{"--namesrv", ns, "--set", "brokerName=broker-hakill", "--set", "brokerClusterName=HAKillCluster",
		"--set", "haSendHeartbeatInterval=200", "--set", "slaveTimeout=5000", "--set", "flushDiskType=ASYNC_FLUSH"}
	m := startProcess(t, ns, master, append([]string{"broker", "--listen", master, "--store", t.TempDir(),
		"--set", "brokerRole=SYNC_MASTER", "--set", "brokerId=0", "--set", "haListenPort=" + strconv.Itoa(haPort)}, common...)...)
	sl := startProcess(t, ns, slave, append([]string{"broker", "--listen", slave, "--store", t.TempDir(),
		"--set", "brokerRole=SLAVE", "--set", "brokerId=1", "--set", "slaveReadEnable=true",
		"--set", "haListenPort=" + strconv.Itoa(freePort(t, false))}, common...)...)
	defer m.logOnFailure(t)
	defer sl.logOnFailure(t)
	defer nsp.logOnFailure(t)

	const topic, queues, workers, perCycle = "E2EReplicationKill", 4, 4, 150
	m.createTopic(t, m.newAdmin(t), topic, queues)
	// Created on the slave too, so that the slave registers the topic's
	// queues with the name server before its first metadata copy.
	if err := sl.newAdmin(t).CreateTopic(context.Background(), admin.WithTopicCreate(topic),
		admin.WithBrokerAddrCreate(slave), admin.WithReadQueueNums(queues), admin.WithWriteQueueNums(queues)); err != nil {
		t.Fatalf("create topic on the slave: %v", err)
	}

	l := newSendLedger()
	var dupsAtEnd, unackedStored int
	for c := 1; c <= cycles+1; c++ {
		// A new producer per master incarnation: the official client
		// refreshes its route only every 30 s, so a producer that saw the
		// route without the master would not send to it again sooner.
		g := startProducerGen(t, m, c, workers, topic, l)
		from := l.ackedCount()
		waitFor(t, 90*time.Second, fmt.Sprintf("cycle %d: %d more SEND_OK from the master", c, perCycle), func() bool {
			return l.ackedCount() >= from+perCycle
		})
		m.kill() // SIGKILL while the producers send
		waitFor(t, 30*time.Second, "the name server to drop the killed master", func() bool {
			_, ok := routeBrokerIDs(t, ns, topic, "broker-hakill")["0"]
			return !ok
		})
		g.halt()
		acked := l.ackedBodies()
		l.mu.Lock()
		l.perKill = append(l.perKill, len(acked))
		l.mu.Unlock()

		ends := map[int]int64{}
		for q := 0; q < queues; q++ {
			ends[q] = sl.maxOffset(t, topic, q)
		}
		got := consumeWithClient(t, sl, fmt.Sprintf("cg-replication-kill-%d", c), topic, ends)
		var lost []string
		for _, b := range acked {
			if got[b] == 0 {
				lost = append(lost, b)
			}
		}
		if len(lost) > 0 {
			if len(lost) > 20 {
				lost = lost[:20]
			}
			t.Fatalf("kill %d: %d acknowledged messages are not on the slave (first: %v)", c, len(lost), lost)
		}
		ackedSet := map[string]bool{}
		for _, b := range acked {
			ackedSet[b] = true
		}
		dups, extra, total := 0, 0, 0
		for b, n := range got {
			total += n
			if n > 1 {
				dups += n - 1
			}
			if !ackedSet[b] {
				extra++
			}
		}
		dupsAtEnd, unackedStored = dups, extra
		t.Logf("kill %d: %d acknowledged bodies all consumed from the slave (%d messages, %d distinct; %d duplicate copies, %d bodies stored without a SEND_OK)",
			c, len(acked), total, len(got), dups, extra)
		if c <= cycles {
			m.start()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	resent := 0
	for _, n := range l.acked {
		resent += n - 1
	}
	t.Logf("%d kills: %d sends, %d SEND_OK bodies (%d answered SEND_OK twice), %d errors, not SEND_OK by status %v; on the slave %d duplicate copies and %d bodies without a SEND_OK",
		cycles+1, l.sent, len(l.acked), resent, l.errs, l.notOK, dupsAtEnd, unackedStored)
}

// TestReplicationSyncMasterKillLoop runs the kill-and-restart loop
// replicationKillCycles times (2 in the default suite, 5 with the soak
// build tag).
func TestReplicationSyncMasterKillLoop(t *testing.T) {
	t.Parallel()
	runReplicationKillLoop(t, replicationKillCycles)
}
