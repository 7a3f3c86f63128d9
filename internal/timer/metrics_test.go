package timer

import (
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
)

// TestMetricsFigures: per-topic counts and the pending timers by delay
// bound, as the broker's metrics read them.
func TestMetricsFigures(t *testing.T) {
	h := newHarness(t, vfs.OS())
	svc := h.start(nil)
	defer svc.Close()
	h.scheduleAt("soon", t0+3000, true)
	h.scheduleAt("later", t0+100_000, false)
	h.scheduleAt("gone", t0+3000, false)
	h.cancel("gone", t0+3000)
	waitFor(t, "linked", func() bool { return svc.Stats().EnqueueOffset == 4 })
	got := svc.PendingByDelay([]int64{5, 60, 300})
	if got[0] != 3 || got[1] != 0 || got[2] != 1 { // soon, gone and its marker; later
		t.Fatalf("PendingByDelay = %v, want [3 0 1]", got)
	}
	h.advance(5 * time.Second)
	waitFor(t, "soon delivered and gone cancelled", func() bool {
		s := svc.Stats()
		return s.Delivered == 1 && s.Cancelled == 1
	})
	tt := svc.TopicTimers()
	if len(tt) != 1 || tt[0].Topic != "T" || tt[0].Enqueued != 3 || tt[0].Dequeued != 1 || tt[0].Pending != 1 {
		t.Fatalf("TopicTimers = %+v, want T enqueued 3, dequeued 1, pending 1", tt)
	}
	if n := svc.DueNotDelivered(); n != 0 {
		t.Fatalf("DueNotDelivered = %d after every due timer was handled", n)
	}
}
