package broker

import "testing"

// TestTransactionIndexStarts: the offsets a rebuild starts from cover a
// half that completed and was resolved while an earlier put was still in
// flight (its op record lies below the op queue's end).
func TestTransactionIndexStarts(t *testing.T) {
	x := newTransactionIndex()
	x.finishRebuild(0)
	// Half 0 stored and pending; op queue at 3.
	a := x.beginPut(0, 3)
	x.endPut(a, &pendingHalf{queueOffset: 0, group: "g"})
	// Half h begins (op queue at 3); an op record is stored (queue at 4);
	// a slow put P begins; h gets offset 1, completes and is resolved by
	// op record 4 while P is still in flight.
	h := x.beginPut(0, 3)
	p := x.beginPut(0, 4)
	x.endPut(h, &pendingHalf{queueOffset: 1, group: "g"})
	op := x.beginOp(4)
	x.resolve(1)
	x.endOp(op)
	// Snapshot with the op queue now at 5: P may get an offset below 1, so
	// the half scan starts at 1 (from P's lower bound) and finds half 1;
	// every op record that may refer to it (from 3) must be replayed.
	hs, halfFrom, opFrom, _, ok := x.snapshot(5)
	if !ok || len(hs) != 1 || halfFrom != 1 || opFrom != 3 {
		t.Fatalf("snapshot: %d halves, halfFrom %d opFrom %d", len(hs), halfFrom, opFrom)
	}
	if half, opF := x.floors(5); half != 0 || opF != 3 {
		t.Fatalf("floors %d %d", half, opF)
	}
	// Once P completes and half 0 is resolved, both move up.
	x.endPut(p, &pendingHalf{queueOffset: 2, group: "g", opMark: 3})
	x.resolve(0)
	x.resolve(2)
	if _, halfFrom, opFrom, _, _ = x.snapshot(6); halfFrom != 3 || opFrom != 6 {
		t.Fatalf("after: halfFrom %d opFrom %d", halfFrom, opFrom)
	}
	if half, opF := x.floors(6); half != 3 || opF != 6 {
		t.Fatalf("floors after: %d %d", half, opF)
	}
}

// TestTransactionIndexResolvedDuringRebuild: a half indexed by the put path
// and resolved while the rebuild runs is not indexed again when the
// rebuild reaches it in the half queue.
func TestTransactionIndexResolvedDuringRebuild(t *testing.T) {
	x := newTransactionIndex()
	id := x.beginPut(0, 0)
	x.endPut(id, &pendingHalf{queueOffset: 7, group: "g"})
	if !x.resolve(7) {
		t.Fatal("the half was not pending")
	}
	x.add(&pendingHalf{queueOffset: 7, group: "g"}) // the rebuild's scan
	x.resolve(8)                                    // resolved before the scan reaches it
	x.add(&pendingHalf{queueOffset: 8, group: "g"})
	x.finishRebuild(9)
	if n := x.len(); n != 0 {
		t.Fatalf("%d halves pending", n)
	}
}
