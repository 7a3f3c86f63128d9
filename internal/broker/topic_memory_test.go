package broker

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/remoting"
)

// rssAnonKiB reads RssAnon of this process from /proc/self/status (0 when
// the file is not there).
func rssAnonKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "RssAnon:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkTopicBurstMemory creates SPOOL_BENCH_TOPICS (default 10,000)
// topics from one admin client against a broker registering with a name
// server over loopback (both in this process) and reports, once the burst
// is over and after a GC, the heap in use, the heap memory still held from
// the OS, and the process's RssAnon.
func BenchmarkTopicBurstMemory(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("SPOOL_BENCH_TOPICS")); err == nil && v > 0 {
		n = v
	}
	for r := 0; r < b.N; r++ {
		e, _ := startBrokerWithNamesrv(b)
		for i := 0; i < n; i++ {
			resp, err := e.client.Invoke(context.Background(), e.b.Addr(), createTopicReq(fmt.Sprintf("M%d", i)))
			if err != nil || resp.Code != remoting.Success {
				b.Fatalf("create %d: %v %+v", i, err, resp)
			}
		}
		if err := e.b.topics.File.Flush(); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MiB-heap-inuse")
		b.ReportMetric(float64(ms.HeapSys-ms.HeapReleased)/(1<<20), "MiB-heap-held")
		b.ReportMetric(float64(rssAnonKiB())/1024, "MiB-rss-anon")
		if path := os.Getenv("SPOOL_BENCH_HEAPPROFILE"); path != "" {
			if f, err := os.Create(path); err == nil {
				pprof.WriteHeapProfile(f)
				f.Close()
			}
		}
	}
}

// nopNamesrv acknowledges registrations and keeps nothing.
type nopNamesrv struct{}

func (nopNamesrv) Handle(req *remoting.Command) *remoting.Command {
	return remoting.NewResponse(req, remoting.Success, "")
}

// A created topic costs the broker its config, not the request it came
// in: the table must not keep request headers alive through topic names
// sliced from them. Counted as live heap bytes per topic after a GC.
func TestTopicTableKeepsNoRequestHeaders(t *testing.T) {
	dir := t.TempDir()
	b, err := New(testConfig(), Options{StoreConfig: testkit.StoreConfig(dir, testkit.Medium), LocalNamesrv: nopNamesrv{}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, b: b, client: newBenchClient(), dir: dir}
	t.Cleanup(e.stop)
	live := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC() // the second one empties the sync.Pools' victim caches
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	const n = 1500
	// A long header (a long, unused ext field) per request makes a pinned
	// header show.
	pad := strings.Repeat("p", 2000)
	before := live()
	for i := 0; i < n; i++ {
		req := createTopicReq(fmt.Sprintf("Keep%d", i))
		req.ExtFields["pad"] = pad
		if r := e.invoke(req); r.Code != remoting.Success {
			t.Fatalf("create %d: %d %s", i, r.Code, r.Remark)
		}
	}
	// Background work (a journal write, a statistics pass) can hold a
	// buffer at the moment of one reading: the least of a few readings
	// counts.
	after := live()
	for _, wait := range []time.Duration{50 * time.Millisecond, 200 * time.Millisecond} {
		time.Sleep(wait)
		after = min(after, live())
	}
	per := (int64(after) - int64(before)) / n
	t.Logf("%d live heap bytes per created topic", per)
	if per > 1000 {
		t.Fatalf("%d live heap bytes per created topic; a topic's config takes a few hundred", per)
	}
}
