package broker

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// recordingNamesrv is an in-process name server that records what the
// broker sends it.
type recordingNamesrv struct {
	mu   sync.Mutex
	reqs []*remoting.Command
	got  chan *remoting.Command
}

func newRecordingNamesrv() *recordingNamesrv {
	return &recordingNamesrv{got: make(chan *remoting.Command, 1024)}
}

func (n *recordingNamesrv) Handle(req *remoting.Command) *remoting.Command {
	n.mu.Lock()
	n.reqs = append(n.reqs, req)
	n.mu.Unlock()
	select {
	case n.got <- req:
	default:
	}
	return remoting.NewResponse(req, remoting.Success, "")
}

// lastRegistration returns the body of the newest REGISTER_BROKER.
func (n *recordingNamesrv) lastRegistration() *remoting.Command {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := len(n.reqs) - 1; i >= 0; i-- {
		if n.reqs[i].Code == remoting.RegisterBroker {
			return n.reqs[i]
		}
	}
	return nil
}

type testEnv struct {
	t      *testing.T
	b      *Broker
	ns     *recordingNamesrv
	client *transport.Client
	dir    string
	cfg    Config
	scfg   store.Config
}

func testConfig() Config {
	c := DefaultConfig()
	c.BrokerName = "broker-a"
	c.BrokerClusterName = "DefaultCluster"
	c.ListenPort = 0
	c.BindAddress = "127.0.0.1"
	c.NamesrvAddr = ""
	c.SendMessageThreadPoolNums = 2
	c.PullMessageThreadPoolNums = 4
	c.AdminBrokerThreadPoolNums = 2
	c.ClientManageThreadPoolNums = 2
	c.ConsumerManageThreadPoolNums = 2
	c.HeartbeatThreadPoolNums = 2
	c.QueryMessageThreadPoolNums = 2
	c.LitePullMessageThreadPoolNums = 2
	c.EndTransactionThreadPoolNums = 2
	return c
}

// startBroker starts a broker on 127.0.0.1:0 over a temp store.
func startBroker(t *testing.T, mutate func(*Config, *store.Config)) *testEnv {
	t.Helper()
	dir := t.TempDir()
	return startBrokerIn(t, dir, mutate)
}

func startBrokerIn(t *testing.T, dir string, mutate func(*Config, *store.Config)) *testEnv {
	t.Helper()
	return startBrokerOpts(t, dir, Options{}, mutate)
}

// startBrokerOpts is startBrokerIn with options (a clock); the store
// configuration, name server and logger are the test's own.
func startBrokerOpts(t *testing.T, dir string, opts Options, mutate func(*Config, *store.Config)) *testEnv {
	t.Helper()
	cfg := testConfig()
	scfg := testkit.StoreConfig(dir, testkit.Medium)
	if mutate != nil {
		mutate(&cfg, &scfg)
	}
	ns := newRecordingNamesrv()
	opts.StoreConfig, opts.LocalNamesrv, opts.Logger = scfg, ns, testLogger(t)
	b, err := New(cfg, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := b.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	env := &testEnv{t: t, b: b, ns: ns, client: transport.NewClient(transport.ClientConfig{DialTimeout: 3 * time.Second}),
		dir: dir, cfg: cfg, scfg: scfg}
	t.Cleanup(env.stop)
	return env
}

func (e *testEnv) stop() {
	if e.b == nil {
		return
	}
	e.client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.b.Shutdown(ctx); err != nil && err != ErrShutdown {
		e.t.Errorf("Shutdown: %v", err)
	}
	e.b = nil
}

func (e *testEnv) invoke(req *remoting.Command) *remoting.Command {
	e.t.Helper()
	return e.invokeAt(e.b.Addr(), req)
}

func (e *testEnv) invokeAt(addr string, req *remoting.Command) *remoting.Command {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := e.client.Invoke(ctx, addr, req)
	if err != nil {
		e.t.Fatalf("invoke %s: %v", remoting.RequestName(req.Code), err)
	}
	return resp
}

func goRequest(code int32, ext map[string]string, body []byte) *remoting.Command {
	req := remoting.NewRequest(code, ext, body)
	req.Language = "GO"
	req.Version = 317
	return req
}

// sendV1 sends one message the way the Go client does (SEND_MESSAGE with
// long names).
func sendV1(topic string, queueID int, props map[string]string, body []byte) *remoting.Command {
	return goRequest(remoting.SendMessage, map[string]string{
		"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": strconv.Itoa(queueID), "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
		"flag": "0", "properties": message.EncodeProperties(props), "reconsumeTimes": "0", "unitMode": "false",
		"maxReconsumeTimes": "0", "batch": "false",
	}, body)
}

func (e *testEnv) mustSend(topic string, queueID int, tags string, body string) *remoting.Command {
	e.t.Helper()
	props := map[string]string{}
	if tags != "" {
		props[message.PropertyTags] = tags
	}
	resp := e.invoke(sendV1(topic, queueID, props, []byte(body)))
	if resp.Code != remoting.Success {
		e.t.Fatalf("send to %s: code %d remark %q", topic, resp.Code, resp.Remark)
	}
	return resp
}

func (e *testEnv) createTopic(topic string, queues int) {
	e.t.Helper()
	resp := e.invoke(goRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "defaultTopic": "defaultTopic", "readQueueNums": strconv.Itoa(queues),
		"writeQueueNums": strconv.Itoa(queues), "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0",
		"order": "false",
	}, nil))
	if resp.Code != remoting.Success {
		e.t.Fatalf("create topic %s: code %d remark %q", topic, resp.Code, resp.Remark)
	}
}

// pullReq builds a PULL_MESSAGE request.
func pullReq(group, topic string, queueID int, offset int64, sysFlag int, suspendMs int64, sub string) *remoting.Command {
	return goRequest(remoting.PullMessage, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(queueID),
		"queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": "32", "sysFlag": strconv.Itoa(sysFlag),
		"commitOffset": "0", "suspendTimeoutMillis": strconv.FormatInt(suspendMs, 10), "subscription": sub,
		"subVersion": "0", "expressionType": "TAG",
	}, nil)
}

// decodeRecords splits a pull body into records.
func decodeRecords(t *testing.T, body []byte) []*message.Ext {
	t.Helper()
	var out []*message.Ext
	for len(body) > 0 {
		e, err := message.DecodeRecord(body)
		if err != nil {
			t.Fatalf("decode record: %v", err)
		}
		out = append(out, e)
		body = body[e.TotalSize:]
	}
	return out
}

func extInt(t *testing.T, c *remoting.Command, k string) int64 {
	t.Helper()
	v, ok := c.ExtFields[k]
	if !ok {
		t.Fatalf("answer (code %d, remark %q) lacks ext %s: %v", c.Code, c.Remark, k, c.ExtFields)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("ext %s=%q: %v", k, v, err)
	}
	return n
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// waitDispatched waits until topic/queueID holds n messages in its consume
// queue (dispatch is asynchronous).
func (e *testEnv) waitDispatched(topic string, queueID int32, n int64) {
	e.t.Helper()
	waitFor(e.t, "dispatch of "+topic, func() bool { return e.b.store.MaxOffsetInQueue(topic, queueID) >= n })
}

func benchLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newBenchClient() *transport.Client {
	return transport.NewClient(transport.ClientConfig{DialTimeout: 3 * time.Second})
}
