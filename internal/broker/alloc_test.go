//go:build !race

package broker

import (
	"context"
	"runtime"
	"testing"

	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

// TestSendAndPullAllocations holds a send, a batch send of 32 and a pull of
// 32 records to the allocations the benchmarks in bench_codec_test.go
// report (broker and client together; the client's share shows with
// -memprofilerate 1), so that a change that adds one to the broker's path
// fails here rather than in a profile later. Each bound has 0.9 of an
// allocation of room for the broker's background work during the loop
// (0.1–0.4 per request measured): one more allocation per request always
// exceeds it. Not under the race detector, whose sync.Pool drops a
// quarter of what is put back.
func TestSendAndPullAllocations(t *testing.T) {
	e := startBenchBroker(t)
	members := make([]message.BatchMember, 32)
	for i := range members {
		members[i] = message.BatchMember{Body: make([]byte, 1024), PropertiesString: message.EncodeProperties(
			map[string]string{"TAGS": "a", message.PropertyUniqClientMessageIDKeyIdx: message.NewUniqID()})}
	}
	for _, s := range benchSerializations {
		cl := benchClient(s.st)
		defer cl.Close()
		send := sendV1("Bench", 0, map[string]string{"TAGS": "a", message.PropertyUniqClientMessageIDKeyIdx: message.NewUniqID()}, make([]byte, 1024))
		batch := sendV1("Bench", 0, nil, message.EncodeBatchBody(nil, members))
		batch.Code = remoting.SendBatchMessage
		batch.ExtFields["batch"] = "true"
		pull := pullReq("g", "Bench", 0, 0, pullFlagSubscription, 0, "*")
		for _, c := range []struct {
			name string
			req  *remoting.Command
			max  float64
		}{{"send", send, 6}, {"batch of 32", batch, 16}, {"pull of 32", pull, 7}} {
			invoke := func() {
				resp, err := cl.Invoke(context.Background(), e.b.Addr(), c.req)
				if err != nil || resp.Code != remoting.Success {
					t.Fatalf("%s %s: %v %+v", s.name, c.name, err, resp)
				}
			}
			for range 200 { // connection, pools and maps warmed up
				invoke()
			}
			const n = 2000
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range n {
				invoke()
			}
			runtime.ReadMemStats(&after)
			got := float64(after.Mallocs-before.Mallocs) / n
			t.Logf("%s %s: %.2f allocations", s.name, c.name, got)
			if got > c.max+0.9 {
				t.Errorf("%s %s: %.2f allocations per request and answer, want at most %.0f", s.name, c.name, got, c.max)
			}
		}
	}
}
