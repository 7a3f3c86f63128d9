package e2e

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/spoolmq/spool/remoting"
)

// Helpers of the messaging-semantics scenarios (semantics_*_test.go).

// scheduleTopic is the system topic delayed messages wait in.
const scheduleTopic = "SCHEDULE_TOPIC_XXXX"

// received is one delivery seen by a consumer, with the client's clock at
// the moment the handler ran.
type received struct {
	msg *primitive.MessageExt
	at  int64 // ms, client clock (the same machine clock the broker uses)
}

// receiptLog records every delivery in order, with its receipt time.
type receiptLog struct {
	mu   sync.Mutex
	all  []received
	seen map[string]int
}

func newReceiptLog() *receiptLog { return &receiptLog{seen: map[string]int{}} }

func (l *receiptLog) handler(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	now := time.Now().UnixMilli()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range msgs {
		l.all = append(l.all, received{msg: m, at: now})
		l.seen[string(m.Body)]++
	}
	return consumer.ConsumeSuccess, nil
}

func (l *receiptLog) count(body string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[body]
}

func (l *receiptLog) hasAll(bodies []string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range bodies {
		if l.seen[b] == 0 {
			return false
		}
	}
	return true
}

func (l *receiptLog) snapshot() []received {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]received(nil), l.all...)
}

func (l *receiptLog) counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.seen))
	for k, v := range l.seen {
		out[k] = v
	}
	return out
}

// startConsumer subscribes handler to topic with selector and starts the
// push consumer; it is shut down when the test ends.
func (s *spool) startConsumer(t testing.TB, group, topic string, selector consumer.MessageSelector,
	handler func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error), opts ...consumer.Option) pushConsumer {
	t.Helper()
	c := s.newPushConsumer(t, group, opts...)
	if err := c.Subscribe(topic, selector, handler); err != nil {
		t.Fatalf("subscribe %s: %v", topic, err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("start consumer %s: %v", group, err)
	}
	t.Cleanup(func() { _ = c.Shutdown() })
	return c
}

// rawPull pulls up to max messages of one queue from offset with an
// explicit "*" subscription (no heartbeat needed). It returns the answer
// code, the decoded messages and nextBeginOffset.
func (s *spool) rawPull(t testing.TB, group, topic string, queue int, offset int64, max int) (int32, []*primitive.MessageExt, int64) {
	t.Helper()
	rc := dialRaw(t, s.brokerAddr)
	defer rc.c.Close()
	resp := rc.call(t, rawRequest(remoting.PullMessage, map[string]string{
		"consumerGroup":        group,
		"topic":                topic,
		"queueId":              strconv.Itoa(queue),
		"queueOffset":          strconv.FormatInt(offset, 10),
		"maxMsgNums":           strconv.Itoa(max),
		"sysFlag":              "4", // subscription carried in the request
		"commitOffset":         "0",
		"suspendTimeoutMillis": "0",
		"subscription":         "*",
		"subVersion":           "0",
		"expressionType":       "TAG",
	}, nil))
	next, _ := strconv.ParseInt(resp.Ext("nextBeginOffset"), 10, 64)
	if resp.Code != remoting.Success {
		return resp.Code, nil, next
	}
	return resp.Code, primitive.DecodeMessage(resp.Body), next
}

// pullAll reads every message of a queue from offset 0 with rawPull.
func (s *spool) pullAll(t testing.TB, group, topic string, queue int) []*primitive.MessageExt {
	t.Helper()
	var out []*primitive.MessageExt
	offset := int64(0)
	for i := 0; i < 1000; i++ {
		code, msgs, next := s.rawPull(t, group, topic, queue, offset, 32)
		if code != remoting.Success || len(msgs) == 0 {
			return out
		}
		out = append(out, msgs...)
		if next <= offset {
			t.Fatalf("pull of %s/%d at %d answered nextBeginOffset %d", topic, queue, offset, next)
		}
		offset = next
	}
	return out
}

// maxOffset answers GET_MAX_OFFSET of one queue (-1 when the broker does
// not answer one).
func (s *spool) maxOffset(t testing.TB, topic string, queue int) int64 {
	t.Helper()
	rc := dialRaw(t, s.brokerAddr)
	defer rc.c.Close()
	resp := rc.call(t, rawRequest(remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": strconv.Itoa(queue)}, nil))
	v, err := strconv.ParseInt(resp.Ext("offset"), 10, 64)
	if err != nil {
		return -1
	}
	return v
}

// viewByOffsetMsgID decodes an offsetMsgId and reads the record it names
// with VIEW_MESSAGE_BY_ID.
func (s *spool) viewByOffsetMsgID(t testing.TB, offsetMsgID string) *primitive.MessageExt {
	t.Helper()
	id, err := primitive.UnmarshalMsgID([]byte(offsetMsgID))
	if err != nil {
		t.Fatalf("offsetMsgId %q: %v", offsetMsgID, err)
	}
	rc := dialRaw(t, s.brokerAddr)
	defer rc.c.Close()
	resp := rc.call(t, rawRequest(remoting.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(id.Offset, 10)}, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("VIEW_MESSAGE_BY_ID offset %d: code %d %q", id.Offset, resp.Code, resp.Remark)
	}
	msgs := primitive.DecodeMessage(resp.Body)
	if len(msgs) != 1 {
		t.Fatalf("VIEW_MESSAGE_BY_ID offset %d answered %d records", id.Offset, len(msgs))
	}
	return msgs[0]
}

// sendDelayed sends one message with a delay level and returns the store
// timestamp of the record the broker wrote for it in SCHEDULE_TOPIC_XXXX.
func (s *spool) sendDelayed(t testing.TB, p interface {
	SendSync(ctx context.Context, mq ...*primitive.Message) (*primitive.SendResult, error)
}, topic, body string, level int) int64 {
	t.Helper()
	res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(body)).WithDelayTimeLevel(level))
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("send %s with delay level %d: %v %+v", body, level, err, res)
	}
	rec := s.viewByOffsetMsgID(t, res.OffsetMsgID)
	if rec.Topic != scheduleTopic || rec.Queue.QueueId != level-1 {
		t.Fatalf("delayed %s stored in %s/%d, want %s/%d", body, rec.Topic, rec.Queue.QueueId, scheduleTopic, level-1)
	}
	if rec.GetProperty(primitive.PropertyDelayTimeLevel) != strconv.Itoa(level) || rec.GetProperty("REAL_TOPIC") != topic {
		t.Fatalf("delayed %s schedule record properties: %v", body, rec.GetProperties())
	}
	return rec.StoreTimestamp
}

// isNotBuilt reports whether an error is the broker saying a feature is
// not built or not enabled.
func isNotBuilt(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "not built") || strings.Contains(s, "not enabled")
}

// txListener is a transaction listener driven by per-test functions.
type txListener struct {
	exec  func(*primitive.Message) primitive.LocalTransactionState
	check func(*primitive.MessageExt) primitive.LocalTransactionState
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	return l.exec(m)
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	return l.check(m)
}

type txProducer interface {
	Start() error
	Shutdown() error
	SendMessageInTransaction(ctx context.Context, msg *primitive.Message) (*primitive.TransactionSendResult, error)
}

func (s *spool) newTxProducer(t testing.TB, group string, l primitive.TransactionListener, opts ...producer.Option) txProducer {
	t.Helper()
	all := append([]producer.Option{
		producer.WithNameServer([]string{s.namesrvAddr}),
		producer.WithGroupName(group),
		producer.WithInstanceName(instance(group)),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(5 * time.Second),
	}, opts...)
	p, err := producer.NewTransactionProducer(l, all...)
	if err != nil {
		t.Fatalf("new transaction producer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("start transaction producer: %v", err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// levels returns a messageDelayLevel value of 18 levels, the first ones
// given and the rest 1s.
func levels(first ...string) string {
	out := append([]string(nil), first...)
	for len(out) < 18 {
		out = append(out, "1s")
	}
	return "messageDelayLevel=" + strings.Join(out, " ")
}

// logOnFailure prints the tail of the broker's output when the test fails.
func (s *spool) logOnFailure(t testing.TB) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		s.mu.Lock()
		out := s.output
		s.mu.Unlock()
		if out != nil {
			t.Logf("broker output (tail):\n%s", tail(out.String()))
		}
	})
}
