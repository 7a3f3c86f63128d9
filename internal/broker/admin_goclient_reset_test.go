//go:build !race

// rocketmq-client-go's pushConsumer.ResetOffset clears its process queues
// while its pull loop reads them, unsynchronized (a data race inside the
// client library), so this test runs only without the race detector.

package broker

import (
	"testing"

	"github.com/spoolmq/spool/remoting"
)

// The official Go client consumes again from the first offset after
// INVOKE_BROKER_TO_RESET_OFFSET pushes it RESET_CONSUMER_CLIENT_OFFSET.
func TestGoClientFollowsResetOffset(t *testing.T) {
	g := startGoClientRig(t)
	g.send(6)
	g.startConsumer()
	g.until("the consumer to commit 6", func() bool { p, c := g.stats(); return p == 6 && c == 6 })
	r := g.e.invoke(goRequest(remoting.InvokeBrokerToResetOffset, map[string]string{"topic": "GoLag", "group": "CID_LAG",
		"timestamp": "0", "isForce": "true"}, nil))
	if r.Code != remoting.Success {
		t.Fatalf("reset: code %d remark %q", r.Code, r.Remark)
	}
	g.until("the client to consume the 6 again", func() bool { return g.consumed.Load() >= 12 })
}
