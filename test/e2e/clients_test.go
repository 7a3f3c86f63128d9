package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

var instanceSeq atomic.Int64

// instance returns a client instance name unique in this test process, so
// that no two clients share the official client's per-instance state.
func instance(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, instanceSeq.Add(1))
}

func (s *spool) newProducer(t testing.TB, group string, opts ...producer.Option) interface {
	SendSync(ctx context.Context, mq ...*primitive.Message) (*primitive.SendResult, error)
	SendAsync(ctx context.Context, h func(ctx context.Context, result *primitive.SendResult, err error), mq ...*primitive.Message) error
	SendOneWay(ctx context.Context, mq ...*primitive.Message) error
	Shutdown() error
} {
	t.Helper()
	all := append([]producer.Option{
		producer.WithNameServer([]string{s.namesrvAddr}),
		producer.WithGroupName(group),
		producer.WithInstanceName(instance(group)),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(5 * time.Second),
	}, opts...)
	p, err := producer.NewDefaultProducer(all...)
	if err != nil {
		t.Fatalf("new producer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("start producer: %v", err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

type pushConsumer interface {
	Subscribe(topic string, selector consumer.MessageSelector, f func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error)) error
	Start() error
	Shutdown() error
}

func (s *spool) newPushConsumer(t testing.TB, group string, opts ...consumer.Option) pushConsumer {
	t.Helper()
	all := append([]consumer.Option{
		consumer.WithNameServer([]string{s.namesrvAddr}),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance(group)),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, opts...)
	c, err := consumer.NewPushConsumer(all...)
	if err != nil {
		t.Fatalf("new push consumer: %v", err)
	}
	return c
}

func (s *spool) newAdmin(t testing.TB) admin.Admin {
	t.Helper()
	a, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{s.namesrvAddr})))
	if err != nil {
		t.Fatalf("new admin: %v", err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// createTopic creates a topic with admin and waits until the name server
// answers a route with that many queues.
func (s *spool) createTopic(t testing.TB, a admin.Admin, topic string, queues int) {
	t.Helper()
	err := a.CreateTopic(context.Background(),
		admin.WithTopicCreate(topic),
		admin.WithBrokerAddrCreate(s.brokerAddr),
		admin.WithReadQueueNums(queues),
		admin.WithWriteQueueNums(queues))
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	waitFor(t, 20*time.Second, "route of "+topic, func() bool {
		return len(s.routeQueues(t, topic)) == queues
	})
}

// collector gathers consumed messages by body.
type collector struct {
	mu   sync.Mutex
	seen map[string]int
	msgs []*primitive.MessageExt
}

func newCollector() *collector { return &collector{seen: map[string]int{}} }

func (c *collector) handler(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		c.seen[string(m.Body)]++
		c.msgs = append(c.msgs, m)
	}
	return consumer.ConsumeSuccess, nil
}

func (c *collector) count(body string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[body]
}

func (c *collector) distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

func (c *collector) hasAll(bodies []string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range bodies {
		if c.seen[b] == 0 {
			return false
		}
	}
	return true
}

// waitFor polls cond until it holds or the limit passes. The limit bounds
// the test, it is not a performance assertion.
func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
