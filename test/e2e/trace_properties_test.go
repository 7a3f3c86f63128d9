package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// A consumed message carries the broker's MSG_REGION (regionId) and
// TRACE_ON (traceOn), whether it was sent alone or in a batch, and whether
// or not its producer set them itself: the broker's values replace a
// client's, as RocketMQ's send processor does. Consumers' trace hooks read
// both from the consumed message.
func TestConsumedMessagesCarryRegionAndTraceSwitch(t *testing.T) {
	t.Parallel()
	// Values other than the defaults (DefaultRegion, true), so what the
	// consumer sees can only come from the broker's configuration.
	s := startSpool(t, "regionId=e2e-region", "traceOn=false")
	topic := "E2ETraceProps"
	s.createTopic(t, s.newAdmin(t), topic, 2)
	p := s.newProducer(t, "pg-trace-props")
	ctx := context.Background()

	clientSet := func(body string) *primitive.Message {
		m := primitive.NewMessage(topic, []byte(body))
		m.WithProperty(primitive.PropertyMsgRegion, "client-region")
		m.WithProperty(primitive.PropertyTraceSwitch, "true")
		m.WithProperty("app", "kept")
		return m
	}
	if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("single"))); err != nil {
		t.Fatalf("send: %v", err)
	}
	if _, err := p.SendSync(ctx, clientSet("single-client-set")); err != nil {
		t.Fatalf("send: %v", err)
	}
	batch := []*primitive.Message{
		primitive.NewMessage(topic, []byte("batch-0")),
		clientSet("batch-client-set"),
		primitive.NewMessage(topic, []byte("batch-2")),
	}
	if _, err := p.SendSync(ctx, batch...); err != nil {
		t.Fatalf("batch send: %v", err)
	}
	want := []string{"single", "single-client-set", "batch-0", "batch-client-set", "batch-2"}

	c := newCollector()
	s.startConsumer(t, "cg-trace-props", topic, consumer.MessageSelector{}, c.handler)
	waitFor(t, 60*time.Second, "all five messages", func() bool { return c.hasAll(want) })

	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.msgs {
		if r := m.GetProperty(primitive.PropertyMsgRegion); r != "e2e-region" {
			t.Errorf("%s: MSG_REGION %q, want the broker's e2e-region (properties %v)", m.Body, r, m.GetProperties())
		}
		if v := m.GetProperty(primitive.PropertyTraceSwitch); v != "false" {
			t.Errorf("%s: TRACE_ON %q, want the broker's false (properties %v)", m.Body, v, m.GetProperties())
		}
		if b := string(m.Body); (b == "single-client-set" || b == "batch-client-set") && m.GetProperty("app") != "kept" {
			t.Errorf("%s: the producer's own property was lost (properties %v)", b, m.GetProperties())
		}
	}
}
