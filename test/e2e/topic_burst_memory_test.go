package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
)

// rssAnonMiB reads RssAnon of process pid.
func rssAnonMiB(t testing.TB, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "RssAnon:" {
			n, _ := strconv.ParseFloat(f[1], 64)
			return n / 1024
		}
	}
	t.Skip("no RssAnon in /proc status")
	return 0
}

// BenchmarkTopicBurstRSS creates SPOOL_BURST_TOPICS (default 10,000)
// topics from one admin client against a standalone spool and reports the
// broker process's RssAnon before, right after the burst, and the lowest
// seen in the 5 s after it (Spool returns the burst's memory once
// topics.json holds the last change).
func BenchmarkTopicBurstRSS(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("SPOOL_BURST_TOPICS")); err == nil && v > 0 {
		n = v
	}
	for r := 0; r < b.N; r++ {
		s := startSpool(b)
		a := s.newAdmin(b)
		pid := s.cmd.Process.Pid
		before := rssAnonMiB(b, pid)
		t0 := time.Now()
		for i := 0; i < n; i++ {
			err := a.CreateTopic(context.Background(), admin.WithTopicCreate(fmt.Sprintf("Burst%d", i)),
				admin.WithBrokerAddrCreate(s.brokerAddr), admin.WithReadQueueNums(4), admin.WithWriteQueueNums(4))
			if err != nil {
				b.Fatalf("create %d: %v", i, err)
			}
		}
		took := time.Since(t0)
		after := rssAnonMiB(b, pid)
		low := after
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond) // sampling, not synchronisation
			low = min(low, rssAnonMiB(b, pid))
		}
		b.ReportMetric(before, "MiB-rss-start")
		b.ReportMetric(after, "MiB-rss-burst-end")
		b.ReportMetric(low, "MiB-rss-5s-later")
		b.ReportMetric(took.Seconds(), "s-burst")
		s.stop()
	}
}
