package transaction

import "testing"

// TestTransactionIndexStarts: the offsets a rebuild starts from cover a
// half that completed and was resolved while an earlier put was still in
// flight (its op record lies below the op queue's end).
func TestTransactionIndexStarts(t *testing.T) {
	x := NewIndex()
	x.FinishRebuild(0)
	// Half 0 stored and pending; op queue at 3.
	a := x.BeginPut(0, 3)
	x.EndPut(a, &PendingHalf{QueueOffset: 0, Group: "g"})
	// Half h begins (op queue at 3); an op record is stored (queue at 4);
	// a slow put P begins; h gets offset 1, completes and is resolved by
	// op record 4 while P is still in flight.
	h := x.BeginPut(0, 3)
	p := x.BeginPut(0, 4)
	x.EndPut(h, &PendingHalf{QueueOffset: 1, Group: "g"})
	op := x.BeginOp(4)
	x.Resolve(1)
	x.EndOp(op)
	// Snapshot with the op queue now at 5: P may get an offset below 1, so
	// the half scan starts at 1 (from P's lower bound) and finds half 1;
	// every op record that may refer to it (from 3) must be replayed.
	hs, halfFrom, opFrom, _, ok := x.Snapshot(5)
	if !ok || len(hs) != 1 || halfFrom != 1 || opFrom != 3 {
		t.Fatalf("snapshot: %d halves, halfFrom %d opFrom %d", len(hs), halfFrom, opFrom)
	}
	if half, opF := x.Floors(5); half != 0 || opF != 3 {
		t.Fatalf("floors %d %d", half, opF)
	}
	// Once P completes and half 0 is resolved, both move up.
	x.EndPut(p, &PendingHalf{QueueOffset: 2, Group: "g", OpMark: 3})
	x.Resolve(0)
	x.Resolve(2)
	if _, halfFrom, opFrom, _, _ = x.Snapshot(6); halfFrom != 3 || opFrom != 6 {
		t.Fatalf("after: halfFrom %d opFrom %d", halfFrom, opFrom)
	}
	if half, opF := x.Floors(6); half != 3 || opF != 6 {
		t.Fatalf("floors after: %d %d", half, opF)
	}
}

// TestTransactionIndexResolvedDuringRebuild: a half indexed by the put path
// and resolved while the rebuild runs is not indexed again when the
// rebuild reaches it in the half queue.
func TestTransactionIndexResolvedDuringRebuild(t *testing.T) {
	x := NewIndex()
	id := x.BeginPut(0, 0)
	x.EndPut(id, &PendingHalf{QueueOffset: 7, Group: "g"})
	if !x.Resolve(7) {
		t.Fatal("the half was not pending")
	}
	x.Add(&PendingHalf{QueueOffset: 7, Group: "g"}) // the rebuild's scan
	x.Resolve(8)                                    // resolved before the scan reaches it
	x.Add(&PendingHalf{QueueOffset: 8, Group: "g"})
	x.FinishRebuild(9)
	if n := x.Len(); n != 0 {
		t.Fatalf("%d halves pending", n)
	}
}
