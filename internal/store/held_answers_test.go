package store

import (
	"slices"
	"testing"
)

// TestVisibleWaitersTakenInOrder checks the held puts a readable end
// answers: exactly those it reached, in the order they were held, the
// others kept in theirs, whether every waiter is reached (the lists swap)
// or only some (they are split); and that the list given back is reused
// empty, not answered again.
func TestVisibleWaitersTakenInOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ends    []int64 // held puts' ends, in the order they were held
		visible int64
		answer  []int64 // ends answered, in order
		keep    []int64 // ends still held, in order
	}{
		{"none held", nil, 100, nil, nil},
		{"none reached", []int64{200, 300}, 100, nil, []int64{200, 300}},
		{"all reached", []int64{10, 20, 30}, 30, []int64{10, 20, 30}, nil},
		{"a prefix reached", []int64{10, 20, 30, 40}, 25, []int64{10, 20}, []int64{30, 40}},
		{"held out of order", []int64{40, 10, 30, 20}, 25, []int64{10, 20}, []int64{40, 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &CommitLog{}
			var answered []int64
			for round := 0; round < 3; round++ {
				answered = answered[:0]
				for _, end := range tc.ends {
					c.visWaiters = append(c.visWaiters, visWaiter{end: end, res: PutResult{WroteOffset: end}, done: func(r PutResult) {
						if r.WroteOffset != end {
							t.Errorf("put ending at %d answered with %d's result", end, r.WroteOffset)
						}
						answered = append(answered, end)
					}})
				}
				c.visible.Store(tc.visible)
				c.pubMu.Lock()
				ready := c.takeVisibleLocked()
				c.pubMu.Unlock()
				c.answerVisible(ready)
				if !slices.Equal(answered, tc.answer) {
					t.Fatalf("round %d: answered %v, want %v", round, answered, tc.answer)
				}
				var kept []int64
				for _, w := range c.visWaiters {
					kept = append(kept, w.end)
				}
				if !slices.Equal(kept, tc.keep) {
					t.Fatalf("round %d: still held %v, want %v", round, kept, tc.keep)
				}
				if len(tc.answer) > 0 && cap(c.visSpare) == 0 {
					t.Fatalf("round %d: the answered list was not kept for reuse", round)
				}
				if len(c.visSpare) != 0 {
					t.Fatalf("round %d: the spare list holds %d waiters", round, len(c.visSpare))
				}
				for _, w := range c.visSpare[:cap(c.visSpare)] {
					if w.done != nil {
						t.Fatalf("round %d: the spare list keeps an answered put's callback", round)
					}
				}
				c.visWaiters = c.visWaiters[:0] // the next round holds the same puts afresh
			}
		})
	}
}

// TestSpareWaiterListIsBounded checks that the list of a burst of held
// puts is not kept for reuse.
func TestSpareWaiterListIsBounded(t *testing.T) {
	c := &CommitLog{}
	n := 0
	for i := 0; i <= maxSpareWaiters; i++ {
		c.visWaiters = append(c.visWaiters, visWaiter{end: 1, done: func(PutResult) { n++ }})
	}
	c.visible.Store(1)
	c.pubMu.Lock()
	ready := c.takeVisibleLocked()
	c.pubMu.Unlock()
	c.answerVisible(ready)
	if n != maxSpareWaiters+1 {
		t.Fatalf("%d answered, want %d", n, maxSpareWaiters+1)
	}
	if cap(c.visSpare) > maxSpareWaiters {
		t.Fatalf("a list of %d waiters kept for reuse (bound %d)", cap(c.visSpare), maxSpareWaiters)
	}
}
