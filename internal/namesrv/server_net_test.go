package namesrv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	rmqerrors "github.com/apache/rocketmq-client-go/v2/errors"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

func init() { rlog.SetLogLevel("error") }

// listenTestServer starts a name server on 127.0.0.1:0 and returns its
// address.
func listenTestServer(t *testing.T, s *Server) string {
	t.Helper()
	a, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return a.String()
}

func invoke(t *testing.T, c *transport.Client, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, addr, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func newAdmin(t *testing.T, nsAddr string) admin.Admin {
	t.Helper()
	a, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{nsAddr})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// TestOfficialGoClientReadsRoutes registers fake brokers over TCP and reads
// the routes back through the official Go client's admin API, so the route
// JSON goes through the client's own parser.
func TestOfficialGoClientReadsRoutes(t *testing.T) {
	s := newTestServer(t, testConfig(t))
	ns := listenTestServer(t, s)
	cl := transport.NewClient(transport.ClientConfig{DialTimeout: 5 * time.Second})
	defer cl.Close()

	// broker-a: master + slave, 8 queues; broker-b: master, 2 queues, on
	// a compressed body; broker-c: a slave only (no master: producers skip it).
	mustOK(t, invoke(t, cl, ns, registerRequest(brokerSpec{cluster: "DefaultCluster", name: "broker-a", addr: "127.0.0.1:10911", topics: topics(8, "TopicA", "TBW102")})))
	mustOK(t, invoke(t, cl, ns, registerRequest(brokerSpec{cluster: "DefaultCluster", name: "broker-a", addr: "127.0.0.1:10921", id: 1, topics: topics(8, "TopicA")})))
	mustOK(t, invoke(t, cl, ns, registerRequest(brokerSpec{cluster: "OtherCluster", name: "broker-b", addr: "127.0.0.2:10911", compressed: true, topics: topics(2, "TopicA")})))
	mustOK(t, invoke(t, cl, ns, registerRequest(brokerSpec{cluster: "DefaultCluster", name: "broker-c", addr: "127.0.0.3:10911", id: 2, topics: topics(4, "TopicA")})))
	// broker-c is a slave: its registration creates no queue data, so give
	// TopicA a broker-c queue entry the way a master would, then remove
	// the master again: the route keeps broker-c's queues with no id 0.
	mustOK(t, invoke(t, cl, ns, registerRequest(brokerSpec{cluster: "DefaultCluster", name: "broker-c", addr: "127.0.0.3:10912", topics: topics(4, "TopicA")})))
	mustOK(t, invoke(t, cl, ns, remoting.NewRequest(remoting.UnregisterBroker, map[string]string{
		"clusterName": "DefaultCluster", "brokerName": "broker-c", "brokerAddr": "127.0.0.3:10912", "brokerId": "0"}, nil)))

	a := newAdmin(t, ns)
	ctx := context.Background()
	mqs, err := a.FetchPublishMessageQueues(ctx, "TopicA")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, mq := range mqs {
		if mq.Topic != "TopicA" {
			t.Fatalf("queue %v", mq)
		}
		count[mq.BrokerName]++
	}
	if want := map[string]int{"broker-a": 8, "broker-b": 2}; fmt.Sprint(count) != fmt.Sprint(want) {
		t.Fatalf("publish queues per broker %v, want %v", count, want)
	}
	clusters, err := a.FetchClusterList("TopicA")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(clusters)
	if !slices.Equal(clusters, []string{"DefaultCluster", "OtherCluster"}) {
		t.Fatalf("clusters %v", clusters)
	}

	list, err := a.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(list.TopicList, []string{"TBW102", "TopicA"}) {
		t.Fatalf("topic list %v", list.TopicList)
	}

	if _, err := a.FetchPublishMessageQueues(ctx, "NoSuchTopic"); !errors.Is(err, rmqerrors.ErrTopicNotExist) {
		t.Fatalf("unknown topic: %v", err)
	}

	// DeleteTopic sends DELETE_TOPIC_IN_BROKER to the broker address (the
	// name server stands in: it answers 3, which admin ignores) and then
	// DELETE_TOPIC_IN_NAMESRV to the name server.
	if err := a.DeleteTopic(ctx, admin.WithTopicDelete("TopicA"), admin.WithBrokerAddrDelete(ns),
		admin.WithNameSrvAddr([]string{ns})); err != nil {
		t.Fatal(err)
	}
	if r := invoke(t, cl, ns, routeReq("TopicA")); r.Code != remoting.TopicNotExist {
		t.Fatalf("route after admin delete: %d", r.Code)
	}
	list, err = a.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(list.TopicList, []string{"TBW102"}) {
		t.Fatalf("topic list after delete %v", list.TopicList)
	}
}

// TestConnCloseDropsBroker: a broker registered over a connection is
// dropped as soon as that connection closes; in-process registrations stay.
func TestConnCloseDropsBroker(t *testing.T) {
	s, err := New(testConfig(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	closed := make(chan []Dropped, 4)
	s.testHookConnClosed = func(_ uint64, d []Dropped) { closed <- d }
	ns := listenTestServer(t, s)

	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "c", name: "local", addr: "10.9.9.9:1", topics: topics(1, "T")})))
	cl := transport.NewClient(transport.ClientConfig{DialTimeout: 5 * time.Second})
	mustOK(t, invoke(t, cl, ns, registerRequest(brokerSpec{cluster: "c", name: "remote", addr: "10.9.9.8:1", topics: topics(1, "T", "R")})))
	mustOK(t, s.Handle(routeReq("R")))
	cl.Close()

	select {
	case d := <-closed:
		if len(d) != 1 || d[0].BrokerName != "remote" {
			t.Fatalf("dropped %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("connection close not noticed")
	}
	if r := s.Handle(routeReq("R")); r.Code != remoting.TopicNotExist {
		t.Fatalf("route of a disconnected broker: %d", r.Code)
	}
	body := string(mustOK(t, s.Handle(routeReq("T"))).Body)
	if want := `"queueDatas":[{"brokerName":"local"`; !strings.Contains(body, want) {
		t.Fatalf("in-process broker lost: %s", body)
	}
}

// TestExpiryClosesConnection: an expired broker's connection is closed, as
// RocketMQ closes the channel.
func TestExpiryClosesConnection(t *testing.T) {
	clk := clock.NewManual(t0)
	s := newTestServer(t, testConfig(t), WithClock(clk))
	closed := make(chan []Dropped, 4)
	s.testHookConnClosed = func(_ uint64, d []Dropped) { closed <- d }
	ns := listenTestServer(t, s)
	cl := transport.NewClient(transport.ClientConfig{DialTimeout: 5 * time.Second})
	defer cl.Close()
	mustOK(t, invoke(t, cl, ns, registerRequest(brokerSpec{cluster: "c", name: "a", addr: "10.0.0.1:1", topics: topics(1, "T")})))
	clk.Advance(121 * time.Second)
	if d := s.scanNotActiveBrokers(); len(d) != 1 {
		t.Fatalf("dropped %v", d)
	}
	select {
	case d := <-closed:
		if len(d) != 0 {
			t.Fatalf("already-dropped broker dropped again: %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("expired broker's connection not closed")
	}
}

func TestListenAfterShutdown(t *testing.T) {
	s, err := New(testConfig(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	listenTestServer(t, s)
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Listen("127.0.0.1:0"); !errors.Is(err, ErrClosed) {
		t.Fatalf("listen after shutdown: %v", err)
	}
}

// TestGoProducerNoRoute: with no route for the topic and no TBW102 (the
// autoCreateTopicEnable=false case) the Go producer fails with its own
// "route info not found" error and never reaches a broker.
func TestGoProducerNoRoute(t *testing.T) {
	s := newTestServer(t, testConfig(t))
	ns := listenTestServer(t, s)
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "c", name: "a", addr: "127.0.0.1:1", topics: topics(4, "Other")})))
	p, err := producer.NewDefaultProducer(producer.WithNameServer([]string{ns}), producer.WithGroupName("PG_namesrv_test"),
		producer.WithInstanceName(t.Name()), producer.WithRetry(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	_, err = p.SendSync(context.Background(), primitive.NewMessage("NoRouteTopic", []byte("x")))
	if err == nil || err.Error() != "the topic=NoRouteTopic route info not found" {
		t.Fatalf("send error: %v", err)
	}
}
