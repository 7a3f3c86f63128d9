package broker

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// BenchmarkSend measures one SEND_MESSAGE round trip over loopback (1 KiB
// body, ASYNC_FLUSH), several in flight.
func BenchmarkSend(b *testing.B) {
	e := startBenchBroker(b)
	body := make([]byte, 1024)
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := e.client.Invoke(context.Background(), e.b.Addr(), sendV1("Bench", 0, map[string]string{"TAGS": "a"}, body))
			if err != nil || resp.Code != remoting.Success {
				b.Errorf("send: %v %+v", err, resp)
				return
			}
		}
	})
}

// BenchmarkPull measures pulls of 32 messages.
func BenchmarkPull(b *testing.B) {
	e := startBenchBroker(b)
	body := make([]byte, 1024)
	for i := 0; i < 64; i++ {
		e.client.Invoke(context.Background(), e.b.Addr(), sendV1("Bench", 0, nil, body))
	}
	for e.b.store.MaxOffsetInQueue("Bench", 0) < 64 {
		runtime.Gosched()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := e.client.Invoke(context.Background(), e.b.Addr(), pullReq("g", "Bench", 0, 0, pullFlagSubscription, 0, "*"))
		if err != nil || resp.Code != remoting.Success {
			b.Fatalf("pull: %v %+v", err, resp)
		}
		b.SetBytes(int64(len(resp.Body)))
	}
}

func startBenchBroker(b testing.TB) *testEnv {
	dir := b.TempDir()
	cfg := testConfig()
	scfg := testkit.StoreConfig(dir, testkit.Medium)
	scfg.MappedFileSizeCommitLog = 64 << 20
	ns := newRecordingNamesrv()
	br, err := New(cfg, Options{StoreConfig: scfg, LocalNamesrv: ns, Logger: benchLogger()})
	if err != nil {
		b.Fatal(err)
	}
	if err := br.Start(); err != nil {
		b.Fatal(err)
	}
	// The client reads answers as spool bench does: without ext maps.
	e := &testEnv{b: br, ns: ns, client: transport.NewClient(transport.ClientConfig{DialTimeout: 3 * time.Second, InlineResponses: true})}
	b.Cleanup(func() {
		e.client.Close()
		br.Shutdown(context.Background())
	})
	topic := goRequest(remoting.UpdateAndCreateTopic, map[string]string{"topic": "Bench", "readQueueNums": "1",
		"writeQueueNums": "1", "perm": "6"}, nil)
	if r, err := e.client.Invoke(context.Background(), br.Addr(), topic); err != nil || r.Code != 0 {
		b.Fatalf("create topic: %v %+v", err, r)
	}
	return e
}
