package broker

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

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
		if err := e.b.topics.file.flush(); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MiB-heap-inuse")
		b.ReportMetric(float64(ms.HeapSys-ms.HeapReleased)/(1<<20), "MiB-heap-held")
		b.ReportMetric(float64(rssAnonKiB())/1024, "MiB-rss-anon")
	}
}
