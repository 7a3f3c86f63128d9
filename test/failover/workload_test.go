package failover

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
	"github.com/spoolmq/spool/test/failover/check"
)

const queuesPerSet = 4

var instanceSeq atomic.Int64

func instance(prefix string) string { return fmt.Sprintf("%s-%d", prefix, instanceSeq.Add(1)) }

// workload is the producers and the live consumer of one topic, and the
// history they record.
type workload struct {
	t     testing.TB
	c     *cluster
	topic string
	rec   check.Recorder

	stop  chan struct{}
	wg    sync.WaitGroup
	acked atomic.Int64
	live  consumerShutdown
}

type consumerShutdown interface{ Shutdown() error }

// startWorkload creates the topic on every broker, starts the live
// consumer and n producers sending one message at a time each.
func startWorkload(t testing.TB, c *cluster, topic string, n int) *workload {
	t.Helper()
	w := &workload{t: t, c: c, topic: topic, stop: make(chan struct{})}
	c.createTopic(topic)
	c.w = w
	w.live = w.consume("live", "fo-live")
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("p%d", i)
		p := w.newProducer(name, nil)
		w.wg.Add(1)
		go w.produce(name, p)
	}
	t.Cleanup(w.stopSends)
	return w
}

func (w *workload) newProducer(group string, sel producer.QueueSelector) producerAPI {
	opts := []producer.Option{
		producer.WithNameServer([]string{w.c.ns.addr}),
		producer.WithGroupName("fo-" + group),
		producer.WithInstanceName(instance(group)),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(3 * time.Second),
	}
	if sel != nil {
		opts = append(opts, producer.WithQueueSelector(sel))
	}
	p, err := producer.NewDefaultProducer(opts...)
	if err != nil {
		w.t.Fatalf("new producer: %v", err)
	}
	if err := p.Start(); err != nil {
		w.t.Fatalf("start producer: %v", err)
	}
	return p
}

type producerAPI interface {
	SendSync(ctx context.Context, mq ...*primitive.Message) (*primitive.SendResult, error)
	Shutdown() error
}

// send sends one message keyed key and records it when acknowledged.
func (w *workload) send(p producerAPI, name string, seq int64) (check.Send, bool) {
	key := fmt.Sprintf("%s-%07d", name, seq)
	msg := primitive.NewMessage(w.topic, []byte(key))
	msg.WithKeys([]string{key})
	sent := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	res, err := p.SendSync(ctx, msg)
	cancel()
	if err != nil || res == nil || res.Status != primitive.SendOK || res.MessageQueue == nil {
		return check.Send{}, false
	}
	s := check.Send{Key: key, Producer: name, Seq: seq, Broker: res.MessageQueue.BrokerName, Queue: res.MessageQueue.QueueId,
		Offset: res.QueueOffset, Addr: storeAddr(res.OffsetMsgID), SentAt: sent, AckedAt: time.Now()}
	w.rec.Sent(s)
	w.acked.Add(1)
	return s, true
}

// awaitAckBy sends to setA with a fresh producer until addr acknowledges
// one (each send recorded, under a key of its own).
func (w *workload) awaitAckBy(addr string, limit time.Duration) error {
	if w.awaitAck(limit, func(by string) bool { return by == addr }) {
		return nil
	}
	return fmt.Errorf("%s acknowledged no send within %v", addr, limit)
}

// awaitAck sends to setA under a fresh producer until a send is
// acknowledged by a broker ok accepts, for at most limit.
func (w *workload) awaitAck(limit time.Duration, ok func(by string) bool) bool {
	name := fmt.Sprintf("ready%d", readySeq.Add(1))
	p := w.newProducer(name, &setASelector{})
	defer p.Shutdown()
	deadline := time.Now().Add(limit)
	for seq := int64(1); time.Now().Before(deadline); seq++ {
		if s, acked := w.send(p, name, seq); acked && ok(s.Addr) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

var readySeq atomic.Int64

// awaitServingMaster waits until the master the controllers name for
// setA acknowledges a send: a master restarted in its own epoch checks
// its set's logs first and may hand the role to a member holding more,
// and a fault meant for the master must not act on one about to step
// down.
func (w *workload) awaitServingMaster(limit time.Duration) error {
	if w.awaitAck(limit, func(by string) bool { return by == w.c.view.current().MasterAddr }) {
		return nil
	}
	return fmt.Errorf("no master of %s acknowledged a send within %v (view %v)", setA, limit, w.c.view.current())
}

// storeAddr is the broker address an offset message id names.
func storeAddr(offsetMsgID string) string {
	id, err := primitive.UnmarshalMsgID([]byte(offsetMsgID))
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s:%d", id.Addr, id.Port)
}

func (w *workload) produce(name string, p producerAPI) {
	defer w.wg.Done()
	defer p.Shutdown()
	for seq := int64(1); ; seq++ {
		select {
		case <-w.stop:
			return
		default:
		}
		if _, ok := w.send(p, name, seq); !ok {
			time.Sleep(100 * time.Millisecond)
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// stopSends stops the producers and waits for their last send.
func (w *workload) stopSends() {
	select {
	case <-w.stop:
		return
	default:
	}
	close(w.stop)
	w.wg.Wait()
}

// setASelector sends to setA's queues only, in turn.
type setASelector struct{ n atomic.Int64 }

func (s *setASelector) Select(_ *primitive.Message, mqs []*primitive.MessageQueue, _ string) *primitive.MessageQueue {
	var mine []*primitive.MessageQueue
	for _, q := range mqs {
		if q.BrokerName == setA {
			mine = append(mine, q)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	return mine[int(s.n.Add(1))%len(mine)]
}

// probe measures a failover: from the fault on, it sends to setA with a
// fresh producer (fresh routes: a long-lived client reads the name server
// every 30 s) until a broker other than old acknowledges, and returns
// when it did (recorded like every other send).
func (w *workload) probe(old string, limit time.Duration) (check.Send, error) {
	deadline := time.Now().Add(limit)
	sel := &setASelector{}
	var seq int64
	// A name per probe: the checker tells messages apart by key.
	name := fmt.Sprintf("probe%d", readySeq.Add(1))
	for time.Now().Before(deadline) {
		p := w.newProducer(name, sel)
		for time.Now().Before(deadline) {
			seq++
			s, ok := w.send(p, name, seq)
			if !ok {
				break
			}
			if s.Addr != old {
				p.Shutdown()
				return s, nil
			}
			time.Sleep(50 * time.Millisecond)
		}
		p.Shutdown()
		time.Sleep(200 * time.Millisecond)
	}
	return check.Send{}, fmt.Errorf("no broker of %s but %s acknowledged a send within %v", setA, old, limit)
}

// consume starts an orderly push consumer that records every delivery
// as consumer name.
func (w *workload) consume(name, group string) consumerShutdown {
	c, err := consumer.NewPushConsumer(
		consumer.WithNameServer([]string{w.c.ns.addr}),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance(group)),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerOrder(true),
	)
	if err != nil {
		w.t.Fatalf("new consumer: %v", err)
	}
	err = c.Subscribe(w.topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			d := check.Delivery{Key: string(m.Body), Consumer: name, Offset: m.QueueOffset}
			if m.Queue != nil {
				d.Broker, d.Queue = m.Queue.BrokerName, m.Queue.QueueId
			}
			w.rec.Delivered(d)
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		w.t.Fatalf("subscribe: %v", err)
	}
	if err := c.Start(); err != nil {
		w.t.Fatalf("start consumer: %v", err)
	}
	return c
}

// finalRead stops the sends, then reads the topic from its start with a
// new group until every acknowledged key was handed out or nothing new
// arrived for quiet, and returns the verdict.
func (w *workload) finalRead(quiet time.Duration) check.Report {
	w.t.Helper()
	w.stopSends()
	w.rec.SetFinal("final")
	fc := w.consume("final", "fo-final")
	defer fc.Shutdown()
	last, lastN := time.Now(), -1
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		h := w.rec.History()
		seen := map[string]bool{}
		n := 0
		for _, d := range h.Deliveries {
			if d.Consumer == "final" {
				seen[d.Key] = true
				n++
			}
		}
		missing := 0
		for _, s := range h.Sends {
			if !seen[s.Key] {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if n != lastN {
			last, lastN = time.Now(), n
		} else if time.Since(last) > quiet {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	w.live.Shutdown()
	return w.verdict()
}

// verdict attributes setA's acknowledgements to master epochs, keeps the
// history when SPOOL_FAILOVER_HISTORY names a directory, and checks it.
func (w *workload) verdict() check.Report {
	h := w.rec.History()
	for i := range h.Sends {
		if s := &h.Sends[i]; s.Broker == setA {
			s.Epoch = w.c.view.epochOf(s.Addr, s.AckedAt)
		}
	}
	if dir := os.Getenv("SPOOL_FAILOVER_HISTORY"); dir != "" {
		name := strings.NewReplacer("/", "_", " ", "_").Replace(w.t.Name()) + time.Now().Format("-150405") + ".json"
		path := filepath.Join(dir, name)
		if err := check.WriteFile(path, check.File{History: h, Faults: w.rec.Faults()}); err != nil {
			w.t.Errorf("keeping the history: %v", err)
		} else {
			w.t.Logf("history kept in %s", path)
		}
		w.c.keepLogs(strings.TrimSuffix(path, ".json"))
	}
	return check.Check(h)
}

// createTopic creates topic with queuesPerSet queues on every broker
// (each replica of setA, so that whichever is elected has it) and waits
// for the name server's route to list both broker sets.
func (c *cluster) createTopic(topic string) {
	c.t.Helper()
	a, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{c.ns.addr})))
	if err != nil {
		c.t.Fatal(err)
	}
	defer a.Close()
	addrs := []string{c.b.addr}
	for _, r := range c.a {
		addrs = append(addrs, r.addr)
	}
	for _, addr := range addrs {
		err := a.CreateTopic(context.Background(), admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(addr),
			admin.WithReadQueueNums(queuesPerSet), admin.WithWriteQueueNums(queuesPerSet))
		if err != nil {
			c.t.Logf("create topic %s on %s: %v", topic, addr, err)
		}
	}
	cl := transport.NewClient(transport.ClientConfig{})
	defer cl.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := routeQueues(cl, c.ns.addr, topic)
		if got[setB] == queuesPerSet && (len(c.a) == 0 || got[setA] == queuesPerSet) {
			return
		}
		if time.Now().After(deadline) {
			c.fail(fmt.Errorf("the route of %s lists %v write queues, want %d on %s and %s", topic, got, queuesPerSet, setA, setB))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// routeQueues is the write queues per broker name of the name server's
// route of topic.
func routeQueues(cl *transport.Client, ns, topic string) map[string]int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out := map[string]int{}
	resp, err := cl.Invoke(ctx, ns, remoting.NewRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": topic}, nil))
	if err != nil || resp.Code != remoting.Success {
		return out
	}
	var route struct {
		QueueDatas []struct {
			BrokerName     string `json:"brokerName"`
			WriteQueueNums int    `json:"writeQueueNums"`
		} `json:"queueDatas"`
		BrokerDatas []struct {
			BrokerName  string            `json:"brokerName"`
			BrokerAddrs map[string]string `json:"brokerAddrs"`
		} `json:"brokerDatas"`
	}
	if json.Unmarshal(resp.Body, &route) != nil {
		return out
	}
	masters := map[string]bool{}
	for _, b := range route.BrokerDatas {
		if b.BrokerAddrs["0"] != "" {
			masters[b.BrokerName] = true
		}
	}
	for _, q := range route.QueueDatas {
		if masters[q.BrokerName] {
			out[q.BrokerName] = q.WriteQueueNums
		}
	}
	return out
}
