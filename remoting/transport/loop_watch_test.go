package transport

import (
	"testing"
	"time"
)

// TestUnitSeenHeld checks the watchdog's measure of how long a loop's
// unit of work (a frame's dispatch or a pass's end) has been under way:
// from the first look that saw it, so that a long pass of many short
// frames never counts as one held frame, and a new run or unit starts
// again from zero.
func TestUnitSeenHeld(t *testing.T) {
	// look is one look of the watchdog: the run and unit it saw, when,
	// and the hold it should measure.
	type look struct {
		run  *loopRun
		unit uint64
		ms   int
		want time.Duration
	}
	r1, r2 := &loopRun{}, &loopRun{}
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, c := range []struct {
		name  string
		looks []look
	}{
		{"one frame held", []look{{r1, 1, 0, 0}, {r1, 1, 5, 5 * time.Millisecond}, {r1, 1, 25, 25 * time.Millisecond}}},
		{"a long pass of short frames", []look{{r1, 1, 0, 0}, {r1, 3, 5, 0}, {r1, 5, 10, 0}, {r1, 7, 15, 0}, {r1, 9, 20, 0}, {r1, 11, 25, 0}}},
		{"between units", []look{{r1, 1, 0, 0}, {r1, 2, 5, 0}, {r1, 2, 30, 0}, {r1, 3, 35, 0}, {r1, 3, 40, 5 * time.Millisecond}}},
		{"the same unit number of another run", []look{{r1, 5, 0, 0}, {r1, 5, 10, 10 * time.Millisecond}, {r2, 5, 15, 0}, {r2, 5, 40, 25 * time.Millisecond}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s unitSeen
			for i, l := range c.looks {
				if got := s.held(l.run, l.unit, at(l.ms)); got != l.want {
					t.Fatalf("look %d (unit %d at %d ms): held %v, want %v", i, l.unit, l.ms, got, l.want)
				}
			}
		})
	}
}
