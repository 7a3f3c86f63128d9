package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// shared is the broker most scenarios run against in parallel.
var (
	sharedOnce sync.Once
	sharedSp   *spool
)

func sharedSpool(t *testing.T) *spool {
	sharedOnce.Do(func() {
		sharedSp = startSpool(&sharedT{t})
	})
	if sharedSp == nil {
		t.Fatal("shared broker failed to start")
	}
	return sharedSp
}

// sharedT lets the shared broker outlive the test that started it; TestMain
// stops it (SIGTERM, clean exit, no race report) after all tests ran.
type sharedT struct{ *testing.T }

func (s *sharedT) Cleanup(func()) {}
func (s *sharedT) TempDir() string {
	d, err := os.MkdirTemp("", "spool-e2e-shared-")
	if err != nil {
		s.T.Fatal(err)
	}
	return d
}

func adminDelete(topic string, s *spool) []admin.OptionDelete {
	return []admin.OptionDelete{
		admin.WithTopicDelete(topic),
		admin.WithBrokerAddrDelete(s.brokerAddr),
		admin.WithNameSrvAddr([]string{s.namesrvAddr}),
	}
}

func bodies(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

func TestSendModesAndClusteringConsume(t *testing.T) {
	t.Parallel()
	s := sharedSpool(t)
	topic := "E2ESendModes"
	s.createTopic(t, s.newAdmin(t), topic, 4)
	p := s.newProducer(t, "pg-send-modes")
	ctx := context.Background()

	syncB, asyncB, onewayB, batchB := bodies("sync", 20), bodies("async", 20), bodies("oneway", 20), bodies("batch", 10)
	for _, b := range syncB {
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(b)))
		if err != nil {
			t.Fatalf("sync send: %v", err)
		}
		if res.Status != primitive.SendOK || len(res.OffsetMsgID) != 32 || res.MsgID == "" {
			t.Fatalf("sync send result: %+v", res)
		}
	}
	var wg sync.WaitGroup
	var asyncErr error
	var mu sync.Mutex
	for _, b := range asyncB {
		wg.Add(1)
		err := p.SendAsync(ctx, func(_ context.Context, res *primitive.SendResult, err error) {
			defer wg.Done()
			if err == nil && res.Status != primitive.SendOK {
				err = fmt.Errorf("status %v", res.Status)
			}
			if err != nil {
				mu.Lock()
				asyncErr = err
				mu.Unlock()
			}
		}, primitive.NewMessage(topic, []byte(b)))
		if err != nil {
			t.Fatalf("async send: %v", err)
		}
	}
	wg.Wait()
	if asyncErr != nil {
		t.Fatalf("async send: %v", asyncErr)
	}
	for _, b := range onewayB {
		if err := p.SendOneWay(ctx, primitive.NewMessage(topic, []byte(b))); err != nil {
			t.Fatalf("oneway send: %v", err)
		}
	}
	var batch []*primitive.Message
	for _, b := range batchB {
		batch = append(batch, primitive.NewMessage(topic, []byte(b)))
	}
	res, err := p.SendSync(ctx, batch...)
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("batch send: %v %+v", err, res)
	}
	if got := strings.Count(res.OffsetMsgID, ",") + 1; got != len(batchB) {
		t.Fatalf("batch response carries %d offset message ids, want %d (%q)", got, len(batchB), res.OffsetMsgID)
	}

	col := newCollector()
	c := s.newPushConsumer(t, "cg-send-modes")
	if err := c.Subscribe(topic, consumer.MessageSelector{}, col.handler); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("consumer start: %v", err)
	}
	defer c.Shutdown()
	all := append(append(append(append([]string{}, syncB...), asyncB...), onewayB...), batchB...)
	waitFor(t, 60*time.Second, "all 70 messages consumed", func() bool { return col.hasAll(all) })
	if col.distinct() != len(all) {
		t.Fatalf("consumed %d distinct bodies, want %d", col.distinct(), len(all))
	}
	col.mu.Lock()
	for _, m := range col.msgs {
		if m.Topic != topic || m.StoreTimestamp == 0 || m.QueueOffset < 0 {
			t.Errorf("bad message metadata: %+v", m)
		}
	}
	col.mu.Unlock()
}

func TestBroadcastingConsumersEachSeeEverything(t *testing.T) {
	t.Parallel()
	s := sharedSpool(t)
	topic := "E2EBroadcast"
	s.createTopic(t, s.newAdmin(t), topic, 2)
	var cols []*collector
	for i := 0; i < 2; i++ {
		col := newCollector()
		c := s.newPushConsumer(t, "cg-broadcast", consumer.WithConsumerModel(consumer.BroadCasting))
		if err := c.Subscribe(topic, consumer.MessageSelector{}, col.handler); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatalf("consumer start: %v", err)
		}
		defer c.Shutdown()
		cols = append(cols, col)
	}
	p := s.newProducer(t, "pg-broadcast")
	want := bodies("bc", 20)
	for _, b := range want {
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(b))); err != nil {
			t.Fatal(err)
		}
	}
	for i, col := range cols {
		waitFor(t, 60*time.Second, fmt.Sprintf("broadcast consumer %d sees all", i), func() bool { return col.hasAll(want) })
	}
}

func TestTagFilterNeverDeliversOtherTags(t *testing.T) {
	t.Parallel()
	s := sharedSpool(t)
	topic := "E2ETags"
	s.createTopic(t, s.newAdmin(t), topic, 2)
	col := newCollector()
	c := s.newPushConsumer(t, "cg-tags")
	if err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "TagA || TagC"}, col.handler); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("consumer start: %v", err)
	}
	defer c.Shutdown()
	p := s.newProducer(t, "pg-tags")
	var want []string
	for i := 0; i < 30; i++ {
		tag := []string{"TagA", "TagB", "TagC"}[i%3]
		body := fmt.Sprintf("%s-%d", tag, i)
		m := primitive.NewMessage(topic, []byte(body))
		m.WithTag(tag)
		if _, err := p.SendSync(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		if tag != "TagB" {
			want = append(want, body)
		}
	}
	waitFor(t, 60*time.Second, "TagA and TagC messages", func() bool { return col.hasAll(want) })
	col.mu.Lock()
	defer col.mu.Unlock()
	for _, m := range col.msgs {
		if m.GetTags() == "TagB" {
			t.Fatalf("a TagB message reached a TagA || TagC subscriber: %s", m.Body)
		}
	}
}

func TestGroupResumesFromCommittedOffset(t *testing.T) {
	t.Parallel()
	s := sharedSpool(t)
	topic := "E2EResume"
	s.createTopic(t, s.newAdmin(t), topic, 2)
	p := s.newProducer(t, "pg-resume")
	first, second := bodies("first", 10), bodies("second", 10)
	for _, b := range first {
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(b))); err != nil {
			t.Fatal(err)
		}
	}
	col1 := newCollector()
	c1 := s.newPushConsumer(t, "cg-resume")
	if err := c1.Subscribe(topic, consumer.MessageSelector{}, col1.handler); err != nil {
		t.Fatal(err)
	}
	if err := c1.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "first batch consumed", func() bool { return col1.hasAll(first) })
	s.waitCommitted(t, "cg-resume", topic, 2)
	if err := c1.Shutdown(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	for _, b := range second {
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(b))); err != nil {
			t.Fatal(err)
		}
	}
	col2 := newCollector()
	c2 := s.newPushConsumer(t, "cg-resume")
	if err := c2.Subscribe(topic, consumer.MessageSelector{}, col2.handler); err != nil {
		t.Fatal(err)
	}
	if err := c2.Start(); err != nil {
		t.Fatal(err)
	}
	defer c2.Shutdown()
	waitFor(t, 60*time.Second, "second batch consumed", func() bool { return col2.hasAll(second) })
	for _, b := range first {
		if col2.count(b) != 0 {
			t.Fatalf("message %s was delivered again after the group committed past it", b)
		}
	}
}

func TestAdminCreateListDeleteTopic(t *testing.T) {
	t.Parallel()
	s := sharedSpool(t)
	a := s.newAdmin(t)
	topic := "E2EAdminTopic"
	s.createTopic(t, a, topic, 8)
	list, err := a.FetchAllTopicList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !contains(list.TopicList, topic) {
		t.Fatalf("topic list %v lacks %s", list.TopicList, topic)
	}
	if err := a.DeleteTopic(context.Background(), adminDelete(topic, s)...); err != nil {
		t.Fatalf("delete: %v", err)
	}
	list, err = a.FetchAllTopicList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if contains(list.TopicList, topic) {
		t.Fatalf("topic list %v still has %s after delete", list.TopicList, topic)
	}
	if q := s.routeQueues(t, topic); len(q) != 0 {
		t.Fatalf("deleted topic still has a route: %v", q)
	}
}

func TestLargeAndCompressedMessagesIntact(t *testing.T) {
	t.Parallel()
	s := sharedSpool(t)
	topic := "E2ELarge"
	s.createTopic(t, s.newAdmin(t), topic, 1)
	p := s.newProducer(t, "pg-large")
	random := make([]byte, 1<<20)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	compressible := bytes.Repeat([]byte("spool compresses well "), (1<<20)/22)
	small := bytes.Repeat([]byte("x"), 5000) // over the client's 4 KiB compression threshold
	for _, b := range [][]byte{random, compressible, small} {
		if res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, b)); err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d bytes: %v %+v", len(b), err, res)
		}
	}
	col := newCollector()
	c := s.newPushConsumer(t, "cg-large")
	if err := c.Subscribe(topic, consumer.MessageSelector{}, col.handler); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	want := []string{string(random), string(compressible), string(small)}
	waitFor(t, 60*time.Second, "large messages", func() bool { return col.hasAll(want) })
}

func TestBodyOverLimitAfterCompressionRefused(t *testing.T) {
	t.Parallel()
	s := sharedSpool(t)
	topic := "E2EOversize"
	s.createTopic(t, s.newAdmin(t), topic, 1)
	p := s.newProducer(t, "pg-oversize")
	big := make([]byte, 5<<20) // random: zlib cannot shrink it below 4 MiB
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	_, err := p.SendSync(context.Background(), primitive.NewMessage(topic, big))
	// The client wraps broker errors with a pkg/errors version that has no
	// Unwrap, so the text is what an application sees.
	if err == nil || !strings.Contains(err.Error(), "CODE: 13") || !strings.Contains(err.Error(), "4194304") {
		t.Fatalf("want MESSAGE_ILLEGAL (13) naming the 4194304-byte limit for a 5 MiB body, got %v", err)
	}
	// The broker keeps serving after refusing it.
	if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("after"))); err != nil {
		t.Fatalf("send after refusal: %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
