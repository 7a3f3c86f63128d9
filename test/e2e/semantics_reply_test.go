package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

type requester interface {
	Request(ctx context.Context, timeout time.Duration, msg *primitive.Message) (*primitive.Message, error)
}

// producer.Request gets the reply a consumer sends with the client's
// reply helper (consumer.CreateReplyMessage, sent to <cluster>_REPLY_TOPIC
// with SEND_REPLY_MESSAGE and pushed back to the requester).
func TestSemanticsRequestReply(t *testing.T) {
	t.Parallel()
	s := startSpool(t)
	topic := "E2ESemRequest"
	s.createTopic(t, s.newAdmin(t), topic, 1)

	// The broker pushes a reply to the connection of the requester's
	// client id, known from its heartbeats. A Go producer heartbeats 1 s
	// after start (when it knows no broker yet) and then every 30 s;
	// Request heartbeats only when the name server has no route for the
	// topic. So, as in an application whose clients share one instance,
	// the requester shares its client with the responding consumer, whose
	// start heartbeats at once and carries the producer group too.
	shared := instance("reqrep")
	req, ok := s.newProducer(t, "pg-sem-requester", producer.WithInstanceName(shared)).(requester)
	if !ok {
		t.Fatal("the producer has no Request method")
	}
	responder := s.newProducer(t, "pg-sem-responder")
	replyErrs := make(chan error, 16)
	var mu sync.Mutex
	sent := map[string]string{} // CORRELATION_ID -> the body the responder sent
	s.startConsumer(t, "cg-sem-responder", topic, consumer.MessageSelector{},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				body := []byte("reply to " + string(m.Body))
				reply, err := consumer.CreateReplyMessage(m, body)
				if err != nil {
					replyErrs <- fmt.Errorf("CreateReplyMessage for %s: %w", m.Body, err)
					continue
				}
				// The Go client's CreateReplyMessage parses the body as
				// properties and leaves the reply's body empty (Java's
				// MessageUtil.createReplyMessage sets it; the Go client's
				// issues #890 and #1046): without this line the requester
				// gets an empty body from any broker. Set it.
				reply.Body = body
				mu.Lock()
				sent[reply.GetProperty(primitive.PropertyCorrelationID)] = string(reply.Body)
				mu.Unlock()
				if _, err := responder.SendSync(context.Background(), reply); err != nil {
					replyErrs <- fmt.Errorf("send reply to %s: %w", m.Body, err)
				}
			}
			return consumer.ConsumeSuccess, nil
		}, consumer.WithInstance(shared))

	for i := 0; i < 10; i++ {
		q := fmt.Sprintf("question-%d", i)
		reply, err := req.Request(context.Background(), 20*time.Second, primitive.NewMessage(topic, []byte(q)))
		select {
		case e := <-replyErrs:
			t.Fatalf("responder: %v", e)
		default:
		}
		if err != nil {
			t.Fatalf("request %s: %v", q, err)
		}
		corr := reply.GetProperty(primitive.PropertyCorrelationID)
		mu.Lock()
		want, ok := sent[corr]
		mu.Unlock()
		if corr == "" || !ok {
			t.Fatalf("request %s: reply with CORRELATION_ID %q, which the responder never sent (properties %v)", q, corr, reply.GetProperties())
		}
		if string(reply.Body) != want || want != "reply to "+q {
			t.Fatalf("request %s: reply body %q, the responder sent %q (properties %v)", q, reply.Body, want, reply.GetProperties())
		}
		if reply.GetProperty(primitive.PropertyMsgType) != "reply" {
			t.Errorf("reply properties %v lack MSG_TYPE=reply", reply.GetProperties())
		}
		// The broker's region and trace switch reach the requester too.
		if reply.GetProperty(primitive.PropertyMsgRegion) != "DefaultRegion" || reply.GetProperty(primitive.PropertyTraceSwitch) != "true" {
			t.Errorf("reply properties %v: want MSG_REGION=DefaultRegion TRACE_ON=true", reply.GetProperties())
		}
	}
}
