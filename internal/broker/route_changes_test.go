package broker

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// tcpNamesrv is a name server over loopback that records the topics of
// every REGISTER_BROKER it acknowledged; registrations naming a topic of
// hang are never answered.
type tcpNamesrv struct {
	srv  *transport.Server
	addr string

	mu     sync.Mutex
	routed map[string]bool               // topics of acknowledged registrations
	bodies []*namesrv.RegisterBrokerBody // acknowledged, in order
	compr  []bool
	hang   map[string]bool
}

func startTCPNamesrv(t *testing.T) *tcpNamesrv {
	t.Helper()
	n := &tcpNamesrv{srv: transport.NewServer(transport.ServerConfig{}), routed: map[string]bool{}, hang: map[string]bool{}}
	n.srv.Register(remoting.RegisterBroker, n.register, nil)
	n.srv.RegisterDefault(func(_ *transport.Conn, req *remoting.Command) *remoting.Command {
		return remoting.NewResponse(req, remoting.Success, "")
	})
	a, err := n.srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n.addr = a.String()
	t.Cleanup(func() { n.srv.Close() })
	return n
}

func (n *tcpNamesrv) register(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	compressed := req.Ext("compressed") == "true"
	body, err := namesrv.DecodeRegisterBrokerBody(req.Body, compressed, req.Version)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for name := range body.TopicConfigSerializeWrapper.TopicConfigTable {
		if n.hang[name] {
			return nil // never answered
		}
	}
	for name := range body.TopicConfigSerializeWrapper.TopicConfigTable {
		n.routed[name] = true
	}
	n.bodies = append(n.bodies, body)
	n.compr = append(n.compr, compressed)
	return remoting.NewResponse(req, remoting.Success, "")
}

func (n *tcpNamesrv) hasRoute(topic string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.routed[topic]
}

func startBrokerNamesrv(t *testing.T, ns *tcpNamesrv, mutate func(*Config, *store.Config)) *testEnv {
	t.Helper()
	return startBroker(t, func(c *Config, s *store.Config) {
		c.NamesrvAddr = ns.addr
		if mutate != nil {
			mutate(c, s)
		}
	})
}

// Every request that creates a topic is answered only after the name
// server acknowledged a registration holding it: single send, batch send,
// a send to a retry topic, CONSUMER_SEND_MSG_BACK (retry topic) and
// UPDATE_AND_CREATE_TOPIC.
func TestCreatingRequestAnsweredAfterRegistration(t *testing.T) {
	ns := startTCPNamesrv(t)
	e := startBrokerNamesrv(t, ns, func(c *Config, _ *store.Config) { c.AutoCreateSubscriptionGroup = true })
	for i := 0; i < 10; i++ {
		topic := "Fresh" + strconv.Itoa(i)
		e.mustSend(topic, 0, "", "x")
		if !ns.hasRoute(topic) {
			t.Fatalf("send %d to new topic %s answered before the name server had its route", i, topic)
		}
	}
	batch := remoting.NewRequest(remoting.SendBatchMessage, map[string]string{
		"a": "pg", "b": "FreshBatch", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0", "m": "true",
	}, message.EncodeBatchBody(nil, []message.BatchMember{{Body: []byte("m1")}, {Body: []byte("m2")}}))
	if resp := e.invoke(batch); resp.Code != remoting.Success {
		t.Fatalf("batch: %d %s", resp.Code, resp.Remark)
	}
	if !ns.hasRoute("FreshBatch") {
		t.Fatal("batch send to a new topic answered before the name server had its route")
	}
	e.mustSend("%RETRY%gr", 0, "", "x")
	if !ns.hasRoute("%RETRY%gr") {
		t.Fatal("send to a new retry topic answered before the name server had its route")
	}
	e.createTopic("FreshAdmin", 2)
	if !ns.hasRoute("FreshAdmin") {
		t.Fatal("UPDATE_AND_CREATE_TOPIC answered before the name server had the route")
	}
	resp := e.mustSend("Backed", 0, "", "x")
	_, off, err := message.ParseOffsetMsgID(resp.ExtFields["msgId"])
	if err != nil {
		t.Fatal(err)
	}
	back := goRequest(remoting.ConsumerSendMsgBack, map[string]string{
		"offset": itoa64(off), "group": "gb", "delayLevel": "0", "originMsgId": resp.Ext("msgId"),
		"originTopic": "Backed", "unitMode": "false", "maxReconsumeTimes": "16",
	}, nil)
	if r := e.invoke(back); r.Code != remoting.Success {
		t.Fatalf("send back: %d %s", r.Code, r.Remark)
	}
	if !ns.hasRoute("%RETRY%gb") {
		t.Fatal("CONSUMER_SEND_MSG_BACK answered before the name server had the new retry topic")
	}
}

// A name server that never answers delays the creating send by at most
// registerBrokerTimeoutMills: the send is answered once that registration
// has failed, not before and not never.
func TestCreatingSendAnsweredWhenNamesrvTimesOut(t *testing.T) {
	ns := startTCPNamesrv(t)
	ns.hang["Stuck"] = true
	e := startBrokerNamesrv(t, ns, func(c *Config, _ *store.Config) { c.RegisterBrokerTimeoutMills = 1500 })
	e.mustSend("Stuck", 0, "", "x")
	if got := e.b.registrar.changes.failed.Load(); got != 1 {
		t.Fatalf("send answered with %d failed registrations; want it answered after the timed-out one", got)
	}
}

// A creation registers only the created topic; the periodic (whole-table)
// registration is compressed.
func TestRegistrationIncrementalAndCompressed(t *testing.T) {
	ns := startTCPNamesrv(t)
	e := startBrokerNamesrv(t, ns, nil)
	ns.mu.Lock()
	first, firstCompressed := ns.bodies[0], ns.compr[0]
	ns.mu.Unlock()
	if !firstCompressed || len(first.TopicConfigSerializeWrapper.TopicConfigTable) < 5 {
		t.Fatalf("start-up registration: compressed=%v with %d topics; want the whole table compressed",
			firstCompressed, len(first.TopicConfigSerializeWrapper.TopicConfigTable))
	}
	e.createTopic("Inc", 3)
	ns.mu.Lock()
	n := len(ns.bodies)
	last := ns.bodies[n-1]
	ns.mu.Unlock()
	tbl := last.TopicConfigSerializeWrapper.TopicConfigTable
	if len(tbl) != 1 || tbl["Inc"].WriteQueueNums != 3 {
		t.Fatalf("registration after a creation holds %d topics (%v); want only Inc with 3 queues", len(tbl), tbl)
	}
	if n != 2 {
		t.Fatalf("%d registrations after start plus one creation; want 2 (no redundant round)", n)
	}
	if v := e.b.topics.Version(); last.TopicConfigSerializeWrapper.DataVersion.Counter != v.Counter {
		t.Fatalf("incremental registration at version %d, table at %d", last.TopicConfigSerializeWrapper.DataVersion.Counter, v.Counter)
	}
}

// A creation that was answered survives a crash that happens before
// topics.json is rewritten: the topic journal holds it.
func TestCreatedTopicSurvivesCrashBeforeTopicsJSON(t *testing.T) {
	e := startBroker(t, nil)
	// Hold the topics.json writer, as if the crash came before it ran.
	// Released also when the test fails before its own release, so that
	// the broker's shutdown (a cleanup that runs after this one) can write
	// topics.json and end.
	release := sync.OnceFunc(e.b.topics.HoldWrites())
	t.Cleanup(release)
	e.createTopic("Durable", 5)
	e.mustSend("DurableAuto", 0, "", "x")
	crash := t.TempDir()
	copyDir(t, filepath.Join(e.dir, "config"), crash)
	release()

	m := metadata.NewTopicConfigManager(metadataDeps(&e.cfg, crash, testLogger(t), nil))
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	if tc := m.Find("Durable"); tc == nil || tc.WriteQueueNums != 5 {
		t.Fatalf("after the crash Durable is %+v; want it with 5 queues", tc)
	}
	if m.Find("DurableAuto") == nil {
		t.Fatal("after the crash the auto-created topic is gone")
	}
	if m.Version().Counter != e.b.topics.Version().Counter {
		t.Fatalf("recovered version %d, want %d", m.Version().Counter, e.b.topics.Version().Counter)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range ents {
		if en.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, en.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, en.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
