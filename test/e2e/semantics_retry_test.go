package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// A message the application answers RECONSUME_LATER comes back through
// %RETRY%<group> with its reconsume count raised; one that keeps failing
// lands in %DLQ%<group> once the count reaches WithMaxReconsumeTimes.
func TestSemanticsRetryThenDeadLetter(t *testing.T) {
	t.Parallel()
	// Retries use level 3 + reconsume times: make every level 1 s.
	s := startSpool(t, levels())
	topic, group := "E2ESemRetry", "cg-sem-retry"
	a := s.newAdmin(t)
	s.createTopic(t, a, topic, 1)
	// The Go consumer learns the retry route only at its 30 s refresh
	// unless the name server already answers for it.
	s.createTopic(t, a, "%RETRY%"+group, 1)

	type delivery struct {
		body           string
		topic          string
		reconsumeTimes int32
	}
	var mu sync.Mutex
	var got []delivery
	handler := func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		result := consumer.ConsumeSuccess
		for _, m := range msgs {
			got = append(got, delivery{string(m.Body), m.Topic, m.ReconsumeTimes})
			switch string(m.Body) {
			case "fail-once":
				if m.ReconsumeTimes == 0 {
					result = consumer.ConsumeRetryLater
				}
			case "fail-always":
				result = consumer.ConsumeRetryLater
			}
		}
		return result, nil
	}
	deliveries := func(body string) []delivery {
		mu.Lock()
		defer mu.Unlock()
		var out []delivery
		for _, d := range got {
			if d.body == body {
				out = append(out, d)
			}
		}
		return out
	}

	s.startConsumer(t, group, topic, consumer.MessageSelector{}, handler,
		consumer.WithMaxReconsumeTimes(2), consumer.WithConsumeMessageBatchMaxSize(1))
	p := s.newProducer(t, "pg-sem-retry")
	for _, b := range []string{"ok", "fail-once", "fail-always"} {
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(b))); err != nil {
			t.Fatalf("send %s: %v", b, err)
		}
	}

	waitFor(t, 60*time.Second, "fail-once to come back after RECONSUME_LATER", func() bool {
		return len(deliveries("fail-once")) >= 2
	})
	d := deliveries("fail-once")
	if d[0].reconsumeTimes != 0 || d[1].reconsumeTimes < 1 {
		t.Fatalf("fail-once deliveries: %+v, want reconsume times 0 then >= 1", d)
	}
	if d[1].topic != topic {
		t.Errorf("the retried message reached the application with topic %q, want %q", d[1].topic, topic)
	}

	dlq := "%DLQ%" + group
	var dead []*primitive.MessageExt
	waitFor(t, 60*time.Second, "fail-always in "+dlq, func() bool {
		dead = s.pullAll(t, "cg-sem-dlq-reader", dlq, 0)
		return len(dead) > 0
	})
	if len(dead) != 1 || string(dead[0].Body) != "fail-always" {
		var bs []string
		for _, m := range dead {
			bs = append(bs, string(m.Body))
		}
		t.Fatalf("%s holds %q, want exactly [fail-always]", dlq, bs)
	}
	if rt := dead[0].GetProperty("RETRY_TOPIC"); rt != topic {
		t.Errorf("dead letter RETRY_TOPIC = %q, want %q (properties %v)", rt, topic, dead[0].GetProperties())
	}
	if dead[0].GetProperty("ORIGIN_MESSAGE_ID") == "" {
		t.Errorf("dead letter has no ORIGIN_MESSAGE_ID (properties %v)", dead[0].GetProperties())
	}
	if dead[0].ReconsumeTimes < 2 {
		t.Errorf("dead letter reconsume times %d, want >= 2", dead[0].ReconsumeTimes)
	}
	// With max 2 the application saw the message with reconsume times 0,
	// 1 and 2 and then never again.
	fa := deliveries("fail-always")
	times := map[int32]int{}
	for _, x := range fa {
		times[x.reconsumeTimes]++
		if x.topic != topic {
			t.Errorf("fail-always delivered with topic %q, want %q", x.topic, topic)
		}
	}
	if len(fa) != 3 || times[0] != 1 || times[1] != 1 || times[2] != 1 {
		t.Errorf("fail-always deliveries %+v, want one each with reconsume times 0, 1, 2", fa)
	}
	if n := len(deliveries("ok")); n != 1 {
		t.Errorf("ok delivered %d times, want 1", n)
	}
}
