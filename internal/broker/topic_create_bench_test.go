package broker

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/remoting"
)

// startBrokerWithNamesrv starts a broker that registers over loopback with
// a Spool name server (not in-process), as a deployment does.
func startBrokerWithNamesrv(tb testing.TB) (*testEnv, *namesrv.Server) {
	tb.Helper()
	nsCfg := namesrv.DefaultConfig()
	nsCfg.KVConfigPath = ""
	ns, err := namesrv.New(nsCfg, benchLogger())
	if err != nil {
		tb.Fatal(err)
	}
	a, err := ns.Listen("127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	cfg := testConfig()
	cfg.NamesrvAddr = a.String()
	scfg := testkit.StoreConfig(dir, testkit.Medium)
	br, err := New(cfg, Options{StoreConfig: scfg, Logger: benchLogger()})
	if err != nil {
		tb.Fatal(err)
	}
	if err := br.Start(); err != nil {
		tb.Fatal(err)
	}
	e := &testEnv{b: br, client: newBenchClient(), dir: dir, cfg: cfg, scfg: scfg}
	tb.Cleanup(func() {
		e.client.Close()
		br.Shutdown(context.Background())
		ns.Shutdown()
	})
	return e, ns
}

func createTopicReq(topic string) *remoting.Command {
	return goRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6",
		"topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
	}, nil)
}

// preloadTopics puts n topics into the table directly (no admin round
// trips) and waits until the name server routes the last one.
func preloadTopics(tb testing.TB, e *testEnv, ns *namesrv.Server, n int) {
	tb.Helper()
	for i := 0; i < n; i++ {
		e.b.topics.Put(metadata.NewTopicConfig("Pre"+strconv.Itoa(i), 4, 4, metadata.PermRead|metadata.PermWrite))
	}
	// One admin creation after the preload: its answer comes after a
	// registration that carries the whole table (old) or the topic
	// itself (incremental), so the name server is settled afterwards.
	resp, err := e.client.Invoke(context.Background(), e.b.Addr(), createTopicReq("PreDone"))
	if err != nil || resp.Code != remoting.Success {
		tb.Fatalf("create: %v %+v", err, resp)
	}
}

// BenchmarkCreateTopicAt measures UPDATE_AND_CREATE_TOPIC from one admin
// client against a broker that already has N topics and registers with a
// name server over loopback. ms-median is the median creation time.
func BenchmarkCreateTopicAt(b *testing.B) {
	for _, n := range []int{250, 10000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			e, ns := startBrokerWithNamesrv(b)
			preloadTopics(b, e, ns, n)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				resp, err := e.client.Invoke(context.Background(), e.b.Addr(), createTopicReq(fmt.Sprintf("New%d", i)))
				if err != nil || resp.Code != remoting.Success {
					b.Fatalf("create: %v %+v", err, resp)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-median")
		})
	}
}

// BenchmarkCreate10000Topics creates 10,000 topics one after another from
// one admin client (set SPOOL_BENCH_TOPICS to change the count); s-total is
// the wall time of one run.
func BenchmarkCreate10000Topics(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("SPOOL_BENCH_TOPICS")); err == nil && v > 0 {
		n = v
	}
	for r := 0; r < b.N; r++ {
		b.StopTimer()
		e, _ := startBrokerWithNamesrv(b)
		b.StartTimer()
		t0 := time.Now()
		for i := 0; i < n; i++ {
			resp, err := e.client.Invoke(context.Background(), e.b.Addr(), createTopicReq(fmt.Sprintf("T%d", i)))
			if err != nil || resp.Code != remoting.Success {
				b.Fatalf("create %d: %v %+v", i, err, resp)
			}
		}
		b.ReportMetric(time.Since(t0).Seconds(), "s-total")
	}
}

// newUnstartedBroker builds a broker (not listening) whose topic table
// holds n extra topics.
func newUnstartedBroker(tb testing.TB, n int, local LocalNamesrv) *Broker {
	tb.Helper()
	dir := tb.TempDir()
	br, err := New(testConfig(), Options{StoreConfig: testkit.StoreConfig(dir, testkit.Medium), Logger: benchLogger(), LocalNamesrv: local})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { br.Shutdown(context.Background()) })
	br.addr = "127.0.0.1:10911"
	tcs := make([]*metadata.TopicConfig, 0, n)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("Topic%06d", i)
		tcs = append(tcs, metadata.NewTopicConfig(name, 8, 8, metadata.PermRead|metadata.PermWrite))
	}
	br.topics.Preload(tcs)
	return br
}

// The whole-table registration of 100,000 topics fits the name server's
// frame limit, and the name server reads every topic back.
func TestFullRegistrationOf100000TopicsFitsFrame(t *testing.T) {
	br := newUnstartedBroker(t, 100000, nil)
	table, version := br.topics.Snapshot()
	body := br.registrar.registerBody(table, version, br.config().CompressedRegister)
	frame, err := remoting.Encode(br.registrar.registerRequest(body, true))
	if err != nil {
		t.Fatal(err)
	}
	if len(frame) >= remoting.MaxFrameSize {
		t.Fatalf("registration of %d topics is a %d-byte frame; the limit is %d", len(table), len(frame), remoting.MaxFrameSize)
	}
	got, err := namesrv.DecodeRegisterBrokerBody(body, true, remoting.CurrentVersion)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.TopicConfigSerializeWrapper.TopicConfigTable); n != len(table) {
		t.Fatalf("the name server read %d topics of %d", n, len(table))
	}
	plain := br.registrar.registerBody(table, version, false)
	t.Logf("%d topics: compressed frame %d bytes, plain JSON body %d bytes", len(table), len(frame), len(plain))
}

// BenchmarkPeriodicRegistration measures one whole-table registration
// (encode, and the in-process name server's decode and apply) at 10,000
// and 100,000 topics; body-bytes is what each name server receives.
func BenchmarkPeriodicRegistration(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			nsCfg := namesrv.DefaultConfig()
			nsCfg.KVConfigPath = ""
			ns, err := namesrv.New(nsCfg, benchLogger())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { ns.Shutdown() })
			br := newUnstartedBroker(b, n, ns)
			table, version := br.topics.Snapshot()
			size := len(br.registrar.registerBody(table, version, true))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				br.topics.StepVersion() // a changed version makes the name server apply every topic
				if err := br.registrar.registerAll(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(size), "body-bytes")
		})
	}
}
