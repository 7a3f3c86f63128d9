package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// A push consumer started the moment the first send to a new topic
// (auto-created from TBW102) returns finds the topic's route: the broker
// answers that send only after the name server has the topic. Twenty
// rounds, every start succeeds and every consumer gets its message.
func TestConsumerStartedRightAfterAutoCreatingSend(t *testing.T) {
	t.Parallel()
	s := sharedSpool(t)
	p := s.newProducer(t, "pg-route-after-create")
	const rounds = 20
	logs := make([]*receiptLog, rounds)
	var failed []string
	for i := 0; i < rounds; i++ {
		topic := fmt.Sprintf("E2ERouteAfterCreate%d_%d", time.Now().UnixNano(), i)
		body := fmt.Sprintf("first-%d", i)
		res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(body)))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("round %d: send to new topic %s: %v %+v", i, topic, err, res)
		}
		logs[i] = newReceiptLog()
		c := s.newPushConsumer(t, fmt.Sprintf("cg-route-after-create-%d", i))
		if err := c.Subscribe(topic, consumer.MessageSelector{}, logs[i].handler); err != nil {
			t.Fatalf("round %d: subscribe: %v", i, err)
		}
		if err := c.Start(); err != nil {
			failed = append(failed, fmt.Sprintf("round %d: %v", i, err))
			_ = c.Shutdown()
			logs[i] = nil
			continue
		}
		t.Cleanup(func() { _ = c.Shutdown() })
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d consumer starts right after the creating send failed: %v", len(failed), rounds, failed)
	}
	for i, l := range logs {
		body := fmt.Sprintf("first-%d", i)
		waitFor(t, 60*time.Second, "the message of round "+fmt.Sprint(i), func() bool { return l.count(body) > 0 })
	}
}
