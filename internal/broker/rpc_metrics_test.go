package broker

import (
	"testing"

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
