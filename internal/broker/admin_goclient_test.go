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

// With the official Go client producing and consuming, GET_CONSUME_STATS
// gives produced - committed = lag, GET_CONSUMER_CONNECTION_LIST and
// GET_PRODUCER_CONNECTION_LIST name the clients, and the client follows
// the RESET_CONSUMER_CLIENT_OFFSET that INVOKE_BROKER_TO_RESET_OFFSET
// pushes to it.
func TestAdminWithGoClient(t *testing.T) {
	rlog.SetLogLevel("fatal")
	e, ns := startBrokerWithNamesrv(t)
	_ = ns
	e.t = t
	e.createTopic("GoLag", 2)
	nsAddr := e.cfg.NamesrvAddr

	p, err := producer.NewDefaultProducer(producer.WithNameServer([]string{nsAddr}), producer.WithGroupName("PID_LAG"),
		producer.WithInstanceName("lag-producer"), producer.WithRetry(2), producer.WithSendMsgTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	send := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := p.SendSync(ctx, primitive.NewMessage("GoLag", []byte("m")))
			cancel()
			if err != nil || res.Status != primitive.SendOK {
				t.Fatalf("send: %v %v", res, err)
			}
		}
	}
	send(6)

	var got atomic.Int64
	c, err := consumer.NewPushConsumer(consumer.WithNameServer([]string{nsAddr}), consumer.WithGroupName("CID_LAG"),
		consumer.WithInstance("lag-consumer"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe("GoLag", consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		got.Add(int64(len(msgs)))
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the consumer to get 6 messages", func() bool { return got.Load() >= 6 })

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
	if r.Code != remoting.Success || len(pc.ConnectionSet) != 1 || !strings.Contains(pc.ConnectionSet[0].ClientID, "lag-producer") {
		t.Errorf("producer connection: code %d %+v", r.Code, pc)
	}

	// stats sums GET_CONSUME_STATS over the topic's queues.
	stats := func() (produced, committed int64) {
		r := e.invoke(goRequest(remoting.GetConsumeStats, map[string]string{"consumerGroup": "CID_LAG", "topic": "GoLag"}, nil))
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
	// The client commits its offsets every 5 s.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if p, c := stats(); p == 6 && c == 6 {
			break
		}
		if time.Now().After(deadline) {
			p, c := stats()
			t.Fatalf("the consumer did not commit its 6 messages: produced %d, committed %d", p, c)
		}
	}
	// A reset to before the first message, pushed to the running client,
	// makes it consume the 6 again.
	r = e.invoke(goRequest(remoting.InvokeBrokerToResetOffset, map[string]string{"topic": "GoLag", "group": "CID_LAG",
		"timestamp": "0", "isForce": "true"}, nil))
	if r.Code != remoting.Success {
		t.Fatalf("reset: code %d remark %q", r.Code, r.Remark)
	}
	for deadline := time.Now().Add(30 * time.Second); got.Load() < 12; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after the reset the client consumed %d messages, want 12", got.Load())
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, c := stats(); c == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the client did not commit its 6 messages again after the reset")
		}
	}
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	send(4)
	var produced, committed int64
	waitFor(t, "the consume stats to show 10 produced", func() bool {
		produced, committed = stats()
		return produced == 10
	})
	if committed != 6 {
		t.Errorf("committed %d, want 6", committed)
	}
	if lag := produced - committed; lag != 4 {
		t.Errorf("lag %d, want 4", lag)
	}
}
