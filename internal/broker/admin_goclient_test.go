package broker

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/spoolmq/spool/remoting"
)

// goClientRig is a broker with a name server, an official Go producer of
// PID_LAG and an official Go push consumer of CID_LAG on topic GoLag.
type goClientRig struct {
	t *testing.T
	e *testEnv
	p interface {
		SendSync(ctx context.Context, msgs ...*primitive.Message) (*primitive.SendResult, error)
	}
	c        interface{ Shutdown() error }
	consumed atomic.Int64
}

func startGoClientRig(t *testing.T) *goClientRig {
	rlog.SetLogLevel("fatal")
	e, _ := startBrokerWithNamesrv(t)
	e.t = t
	e.createTopic("GoLag", 2)
	nsAddr := e.cfg.NamesrvAddr
	p, err := producer.NewDefaultProducer(producer.WithNameServer([]string{nsAddr}), producer.WithGroupName("PID_LAG"),
		producer.WithInstanceName("lag-producer-"+t.Name()), producer.WithRetry(2), producer.WithSendMsgTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return &goClientRig{t: t, e: e, p: p}
}

func (g *goClientRig) send(n int) {
	g.t.Helper()
	for i := 0; i < n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := g.p.SendSync(ctx, primitive.NewMessage("GoLag", []byte("m")))
		cancel()
		if err != nil || res.Status != primitive.SendOK {
			g.t.Fatalf("send: %v %v", res, err)
		}
	}
}

func (g *goClientRig) startConsumer() {
	g.t.Helper()
	c, err := consumer.NewPushConsumer(consumer.WithNameServer([]string{g.e.cfg.NamesrvAddr}), consumer.WithGroupName("CID_LAG"),
		consumer.WithInstance("lag-consumer-"+g.t.Name()), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		g.t.Fatal(err)
	}
	if err := c.Subscribe("GoLag", consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		g.consumed.Add(int64(len(msgs)))
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		g.t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		g.t.Fatal(err)
	}
	g.c = c
	g.t.Cleanup(func() { _ = c.Shutdown() })
}

// stats sums GET_CONSUME_STATS of CID_LAG over GoLag's queues.
func (g *goClientRig) stats() (produced, committed int64) {
	t := g.t
	t.Helper()
	r := g.e.invoke(goRequest(remoting.GetConsumeStats, map[string]string{"consumerGroup": "CID_LAG", "topic": "GoLag"}, nil))
	if r.Code != remoting.Success {
		t.Fatalf("consume stats: code %d remark %q", r.Code, r.Remark)
	}
	var cs javaConsumeStats
	decodeJava(t, r.Body, &cs)
	for k, w := range cs.OffsetTable {
		if mqKey(t, k).Topic != "GoLag" {
			t.Fatalf("queue of another topic: %s", k)
		}
		produced += w.BrokerOffset
		committed += w.ConsumerOffset
	}
	return produced, committed
}

// until polls cond for up to 30 s (the Go client commits its offsets
// every 5 s).
func (g *goClientRig) until(what string, cond func() bool) {
	g.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			p, c := g.stats()
			g.t.Fatalf("timed out waiting for %s (produced %d, committed %d, consumed %d)", what, p, c, g.consumed.Load())
		}
	}
}

// With the official Go client producing and consuming, GET_CONSUME_STATS
// gives produced - committed = lag, and GET_CONSUMER_CONNECTION_LIST and
// GET_PRODUCER_CONNECTION_LIST name the clients.
func TestAdminWithGoClient(t *testing.T) {
	g := startGoClientRig(t)
	e := g.e
	g.send(6)
	g.startConsumer()
	g.until("the consumer to get 6 messages", func() bool { return g.consumed.Load() >= 6 })

	r := e.invoke(goRequest(remoting.GetConsumerConnectionList, map[string]string{"consumerGroup": "CID_LAG"}, nil))
	if r.Code != remoting.Success {
		t.Fatalf("consumer connections: code %d remark %q", r.Code, r.Remark)
	}
	var cc javaConsumerConnection
	decodeJava(t, r.Body, &cc)
	if len(cc.ConnectionSet) != 1 || cc.ConnectionSet[0].Language != "GO" || !strings.Contains(cc.ConnectionSet[0].ClientID, "lag-consumer") ||
		cc.ConsumeType != "CONSUME_PASSIVELY" || cc.MessageModel != "CLUSTERING" || cc.ConsumeFromWhere != "CONSUME_FROM_FIRST_OFFSET" {
		t.Errorf("consumer connection %+v", cc)
	}
	if sd, ok := cc.SubscriptionTable["GoLag"]; !ok || sd.SubString != "*" {
		t.Errorf("subscription table %+v", cc.SubscriptionTable)
	}
	// The Go producer's first heartbeat comes a moment after its start.
	waitFor(t, "the producer's heartbeat", func() bool {
		r = e.invoke(goRequest(remoting.GetProducerConnectionList, map[string]string{"producerGroup": "PID_LAG"}, nil))
		return r.Code == remoting.Success
	})
	var pc javaProducerConnection
	decodeJava(t, r.Body, &pc)
	if len(pc.ConnectionSet) != 1 || !strings.Contains(pc.ConnectionSet[0].ClientID, "lag-producer") {
		t.Errorf("producer connection %+v", pc)
	}

	g.until("the consumer to commit 6", func() bool { p, c := g.stats(); return p == 6 && c == 6 })
	if err := g.c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	g.send(4)
	var produced, committed int64
	g.until("the consume stats to show 10 produced", func() bool {
		produced, committed = g.stats()
		return produced == 10
	})
	if committed != 6 {
		t.Errorf("committed %d, want 6", committed)
	}
	if lag := produced - committed; lag != 4 {
		t.Errorf("lag %d, want 4", lag)
	}
}
