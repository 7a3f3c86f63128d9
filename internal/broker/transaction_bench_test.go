package broker

import (
	"context"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/testkit"
)

// BenchmarkTransactionCheckReads measures the check service on 10,000
// pending halves with a producer online: b.N checks, each one budgeted
// read of a half record, a oneway CHECK_TRANSACTION_STATE and a "c" op
// record. It reports the achieved read rate against the budget
// (budget=unlimited shows what the path can do).
//
//	go test -run '^$' -bench TransactionCheckReads -benchtime=2000x ./internal/broker/
func BenchmarkTransactionCheckReads(b *testing.B) {
	for _, bc := range []struct {
		name           string
		msgs, bytesSec int64
	}{
		{"budget=1000msg/s", 1000, 8 << 20},
		{"budget=64KiB/s", 100000, 64 << 10},
		{"budget=unlimited", 0, 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			cfg := testConfig()
			cfg.TransactionCheckInterval = 10
			cfg.TransactionTimeOut = 0
			cfg.TransactionCheckMax = 1 << 30
			cfg.TransactionCheckReadMsgsPerSecond = bc.msgs
			cfg.TransactionCheckReadBytesPerSecond = bc.bytesSec
			cfg.TimerWheelEnable = false
			scfg := testkit.StoreConfig(dir, testkit.Medium)
			scfg.MappedFileSizeCommitLog = 64 << 20
			// Hold the first round until the halves are stored.
			held := &heldClock{Clock: clock.Real(), release: make(chan struct{})}
			br, err := New(cfg, Options{StoreConfig: scfg, LocalNamesrv: newRecordingNamesrv(), Logger: benchLogger(), Clock: held})
			if err != nil {
				b.Fatal(err)
			}
			if err := br.Start(); err != nil {
				b.Fatal(err)
			}
			e := &testEnv{b: br, ns: newRecordingNamesrv(), client: newBenchClient()}
			b.Cleanup(func() {
				e.client.Close()
				br.Shutdown(context.Background())
			})
			p := newTxProducer(b, e, "benchpg")
			putHalves(b, e, "benchpg", 10000, time.Now().UnixMilli())
			b.ResetTimer()
			start := time.Now()
			close(held.release)
			for br.TransactionStats().ChecksSent < int64(b.N) {
				time.Sleep(time.Millisecond)
			}
			elapsed := time.Since(start).Seconds()
			b.StopTimer()
			s := br.TransactionStats()
			b.ReportMetric(float64(s.CheckReads)/elapsed, "reads/s")
			b.ReportMetric(float64(s.CheckReadBytes)/elapsed, "readB/s")
			b.ReportMetric(float64(s.CheckReadBytes)/float64(max(s.CheckReads, 1)), "B/read")
			_ = p
		})
	}
}

// heldClock is the wall clock, except that its first wait lasts until
// release is closed.
type heldClock struct {
	clock.Clock
	release chan struct{}
}

func (c *heldClock) After(d time.Duration) <-chan time.Time {
	select {
	case <-c.release:
		return time.After(d)
	default:
	}
	ch := make(chan time.Time, 1)
	go func() {
		<-c.release
		ch <- time.Now()
	}()
	return ch
}
