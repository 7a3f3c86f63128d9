package broker

import (
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// TestRPCResultLabel: result follows the answer's write, not its code: a
// written error answer is "success", an answer given after its
// connection closed "write_channel_failed"; is_long_polling follows the
// answer's mark.
func TestRPCResultLabel(t *testing.T) {
	var s rpcStats
	req := remoting.NewRequest(remoting.PullMessage, nil, nil)
	s.observe(req, transport.Answer{Code: remoting.SystemError})
	s.observe(req, transport.Answer{Code: remoting.PullNotFound, LongPolled: true, Unsent: true})
	got := s.figures()
	if len(got) != 2 {
		t.Fatalf("figures %+v, want 2 series", got)
	}
	for _, w := range []struct {
		resp, result string
		long         bool
	}{{"pull_not_found", "write_channel_failed", true}, {"system_error", "success", false}} {
		found := false
		for _, r := range got {
			if r.ResponseCode == w.resp {
				found = true
				if r.Result != w.result || r.IsLongPolling != w.long || r.Latency.Count != 1 {
					t.Errorf("%s: result %q long polling %v count %d, want %q %v 1", w.resp, r.Result, r.IsLongPolling, r.Latency.Count, w.result, w.long)
				}
			}
		}
		if !found {
			t.Errorf("no series of %s in %+v", w.resp, got)
		}
	}
}

// TestRPCSeriesBound: concurrent observers of new series together add at
// most maxRPCSeries of them, and every observation of a series that exists
// is counted.
func TestRPCSeriesBound(t *testing.T) {
	var s rpcStats
	const workers, codes = 4, maxRPCSeries/2 + 10
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range codes {
				req := remoting.NewRequest(int32(c), nil, nil)
				s.observe(req, transport.Answer{Code: int32(w % 2)})
			}
		}()
	}
	wg.Wait()
	got := s.figures()
	if len(got) != maxRPCSeries {
		t.Fatalf("%d series, want the bound %d", len(got), maxRPCSeries)
	}
	for _, r := range got {
		if r.Latency.Count == 0 || r.Latency.Count > workers/2 {
			t.Fatalf("series %s/%s counted %d, want 1..%d", r.RequestCode, r.ResponseCode, r.Latency.Count, workers/2)
		}
	}
}

// BenchmarkRPCObserve is the observer's cost per answer on the broker's
// hot path: one series that exists.
func BenchmarkRPCObserve(b *testing.B) {
	var s rpcStats
	req := remoting.NewRequest(remoting.SendMessageV2, nil, nil)
	a := transport.Answer{Code: remoting.Success, Elapsed: 300 * time.Microsecond}
	s.observe(req, a)
	b.ReportAllocs()
	for b.Loop() {
		s.observe(req, a)
	}
}
