package store

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// waiterOp is one step of a syncWaiters scenario. Times are milliseconds
// from an arbitrary origin.
type waiterOp struct {
	op   string // add, covered, expired, drain
	end  int64  // add: the record run's end
	at   int64  // add: deadline; expired: now
	upTo int64  // covered: flushed offset

	earliest bool    // add: must re-arm the driver's timer
	want     []int64 // covered, expired, drain: ends taken, in order
	next     int64   // expired: earliest deadline left, -1 for none
	left     int     // waiters left after the step
}

func TestSyncWaiters(t *testing.T) {
	origin := time.Unix(1700000000, 0)
	ms := func(v int64) time.Time { return origin.Add(time.Duration(v) * time.Millisecond) }
	add := func(end, deadline int64, earliest bool, left int) waiterOp {
		return waiterOp{op: "add", end: end, at: deadline, earliest: earliest, left: left}
	}
	covered := func(upTo int64, left int, want ...int64) waiterOp {
		return waiterOp{op: "covered", upTo: upTo, want: want, left: left}
	}
	expired := func(now, next int64, left int, want ...int64) waiterOp {
		return waiterOp{op: "expired", at: now, next: next, want: want, left: left}
	}
	drain := func(want ...int64) waiterOp { return waiterOp{op: "drain", want: want} }

	tests := []struct {
		name string
		ops  []waiterOp
	}{
		{"empty set takes nothing", []waiterOp{
			covered(1000, 0), expired(5000, -1, 0), drain(),
		}},
		{"first waiter re-arms, later deadlines do not", []waiterOp{
			add(100, 1000, true, 1), add(200, 1001, false, 2), add(300, 1001, false, 3),
		}},
		{"an earlier deadline re-arms (a shorter timeout)", []waiterOp{
			add(100, 1000, true, 1), add(200, 500, true, 2), add(300, 700, false, 3),
		}},
		{"covered takes exactly the ends at or before the flushed offset", []waiterOp{
			add(100, 1000, true, 1), add(200, 1000, false, 2), add(300, 1000, false, 3),
			covered(99, 3), covered(200, 1, 100, 200), covered(299, 1), covered(300, 0, 300),
		}},
		{"out-of-order registration is taken in end order", []waiterOp{
			add(300, 1000, true, 1), add(100, 1001, false, 2), add(200, 1002, false, 3),
			covered(250, 1, 100, 200), drain(300),
		}},
		{"expired at the deadline, not before", []waiterOp{
			add(100, 1000, true, 1), add(200, 2000, false, 2),
			expired(999, 1000, 2), expired(1000, 2000, 1, 100), expired(1999, 2000, 1), expired(2000, -1, 0, 200),
		}},
		{"expired leaves covered order and the earliest deadline of the rest", []waiterOp{
			add(100, 3000, true, 1), add(200, 1000, true, 2), add(300, 2000, false, 3), add(400, 1500, false, 4),
			expired(1500, 2000, 2, 200, 400), covered(300, 0, 100, 300),
		}},
		{"a waiter leaves once: covered then never expired", []waiterOp{
			add(100, 1000, true, 1), covered(100, 0, 100), expired(5000, -1, 0),
		}},
		{"a waiter leaves once: expired then never covered", []waiterOp{
			add(100, 1000, true, 1), expired(1000, -1, 0, 100), covered(100, 0),
		}},
		{"emptied by covered: the next add re-arms", []waiterOp{
			add(100, 1000, true, 1), covered(100, 0, 100), add(200, 2000, true, 1),
		}},
		{"not emptied by covered: a later deadline does not re-arm", []waiterOp{
			add(100, 1000, true, 1), add(200, 1100, false, 2), covered(100, 1, 100), add(300, 1200, false, 2),
			expired(1100, 1200, 1, 200),
		}},
		{"drain takes everything and empties the set", []waiterOp{
			add(200, 1000, true, 1), add(100, 900, true, 2), drain(100, 200),
			covered(1000, 0), add(300, 3000, true, 1),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s syncWaiters
			for i, op := range tc.ops {
				step := fmt.Sprintf("step %d (%s)", i, op.op)
				var got []*syncWaiter
				switch op.op {
				case "add":
					if e := s.add(&syncWaiter{end: op.end, deadline: ms(op.at)}); e != op.earliest {
						t.Fatalf("%s: earliest %v, want %v", step, e, op.earliest)
					}
				case "covered":
					got = s.covered(op.upTo, nil)
				case "expired":
					var next time.Time
					got, next = s.expired(ms(op.at), nil)
					want := time.Time{}
					if op.next >= 0 {
						want = ms(op.next)
					}
					if !next.Equal(want) {
						t.Fatalf("%s: next deadline %v, want %v", step, next, want)
					}
				case "drain":
					got = s.drain(nil)
				}
				if op.op != "add" {
					ends := []int64{}
					for _, w := range got {
						ends = append(ends, w.end)
					}
					if !slices.Equal(ends, append([]int64{}, op.want...)) {
						t.Fatalf("%s: took %v, want %v", step, ends, op.want)
					}
				}
				if s.len() != op.left {
					t.Fatalf("%s: %d waiters left, want %d", step, s.len(), op.left)
				}
			}
		})
	}
}

// TestSyncWaitersKeepNoReferences checks that removed waiters are not
// reachable from the set's backing array, and that a burst's array is
// given back once the burst is answered.
func TestSyncWaitersKeepNoReferences(t *testing.T) {
	var s syncWaiters
	deadline := time.Unix(1700000000, 0)
	for i := range 10000 {
		s.add(&syncWaiter{end: int64(i + 1), deadline: deadline})
	}
	s.add(&syncWaiter{end: 20000, deadline: deadline.Add(time.Hour)})
	got := s.covered(10000, nil)
	if len(got) != 10000 || s.len() != 1 {
		t.Fatalf("covered %d, left %d", len(got), s.len())
	}
	if cap(s.ws) > 1024 {
		t.Fatalf("backing array of %d kept for 1 waiter", cap(s.ws))
	}
	for _, w := range s.ws[len(s.ws):cap(s.ws)] {
		if w != nil {
			t.Fatalf("a removed waiter is still referenced")
		}
	}
	got, _ = s.expired(deadline.Add(2*time.Hour), nil)
	if len(got) != 1 || s.len() != 0 {
		t.Fatalf("expired %d, left %d", len(got), s.len())
	}
	for _, w := range s.ws[:cap(s.ws)] {
		if w != nil {
			t.Fatalf("an expired waiter is still referenced")
		}
	}
}
