package transaction

import (
	"testing"

	"github.com/spoolmq/spool/internal/testkit"
)

// TestCheckServiceTruncateTo: after a CommitLog truncation the halves of
// cut records leave the index, and a restart neither brings them back
// from the snapshot nor skips the new halves written at their queue
// offsets.
func TestCheckServiceTruncateTo(t *testing.T) {
	e := newServiceEnv(t)
	born := e.clk.Now().UnixMilli() - 10_000
	for i := range 2 {
		e.putHalf(t, "pg", i, born)
	}
	cut := e.st.MaxPhyOffset()
	for i := 2; i < 5; i++ {
		e.putHalf(t, "pg", i, born)
	}
	s := e.service(t)
	s.Start()
	e.settle(t)
	if n := s.Stats().PendingHalves; n != 5 {
		t.Fatalf("pending %d, want 5", n)
	}
	if _, err := e.st.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	if n := s.TruncateTo(cut); n != 3 {
		t.Fatalf("dropped %d, want 3", n)
	}
	if n := s.Stats().PendingHalves; n != 2 {
		t.Fatalf("pending %d after the cut, want 2", n)
	}
	if _, ok := s.Index().Get(2); ok {
		t.Fatal("half 2 of a cut record still pending")
	}
	s.Stop()

	// New halves at the queue offsets of the cut ones, born later.
	newBorn := born + 1000
	r5 := e.putHalf(t, "pg", 5, newBorn)
	r6 := e.putHalf(t, "pg", 6, newBorn)
	if r5.QueueOffset != 2 || r6.QueueOffset != 3 {
		t.Fatalf("new halves at %d, %d", r5.QueueOffset, r6.QueueOffset)
	}
	e.clk = testkit.Clock()
	s2 := e.service(t)
	s2.Start()
	e.settle(t)
	defer s2.Stop()
	if n := s2.Stats().PendingHalves; n != 4 {
		t.Fatalf("pending %d after a restart, want 4", n)
	}
	for _, r := range []struct{ q, phy, born int64 }{{2, r5.WroteOffset, newBorn}, {3, r6.WroteOffset, newBorn}} {
		h, ok := s2.Index().Get(r.q)
		if !ok || h.Phy != r.phy || h.Born != r.born {
			t.Fatalf("half %d after a restart: %+v %v, want the new half at %d", r.q, h, ok, r.phy)
		}
	}
}
