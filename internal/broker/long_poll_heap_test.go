package broker

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
)

func liveHeapObjects() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapObjects
}

// TestWokenLongPollsLeaveNoLiveObjects counts the heap objects still live
// after held pulls are woken by sends long before their suspend timeout:
// an answered pull must not stay reachable (through its timeout timer)
// until that timeout.
func TestWokenLongPollsLeaveNoLiveObjects(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("LH", 1)
	round := func(offset int64) {
		done := make(chan *remoting.Command, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := e.client.InvokeAsync(ctx, e.b.Addr(), pullReq("g", "LH", 0, offset, pullFlagSubscription|pullFlagSuspend, 600000, "*"),
			func(r *remoting.Command, err error) { done <- r })
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the pull to be held", func() bool { return e.b.longPoll.Held() == 1 })
		e.mustSend("LH", 0, "", "wake")
		if r := <-done; r == nil || r.Code != remoting.Success {
			t.Fatalf("held pull answered %+v", r)
		}
	}
	const warmup, rounds = 50, 300
	for i := range warmup {
		round(int64(i))
	}
	before := liveHeapObjects()
	for i := range rounds {
		round(int64(warmup + i))
	}
	after := liveHeapObjects()
	growth := float64(int64(after)-int64(before)) / rounds
	t.Logf("live heap objects %d -> %d over %d woken long polls: %.2f per pull", before, after, rounds, growth)
	if growth > 2 {
		t.Fatalf("%.2f live heap objects left per woken long poll", growth)
	}
}
