package broker

import (
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
)

// TestReadBudgetDebt: a full bucket lets one read larger than a second's
// bytes through, and the debt it leaves is paid at the byte rate.
func TestReadBudgetDebt(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	r := newReadBudget(clk)
	if _, ok := r.take(2500, 0, 1000); !ok {
		t.Fatal("a full bucket refused a read over its size")
	}
	// 1000 - 2500 = -1500 bytes: 1.5 s until the bucket is at 0, 2.5 s
	// until it holds the 1000 bytes a read needs.
	if d, ok := r.take(10, 0, 1000); ok || d != time.Second {
		t.Fatalf("in debt: %v %v, want a capped 1s wait", d, ok)
	}
	clk.Advance(1510 * time.Millisecond)
	if _, ok := r.take(10, 0, 1000); !ok {
		t.Fatal("debt paid, 10 bytes held, a 10-byte read refused")
	}
	// Messages: at most the rate in one second, then one more per 1/rate.
	for i := range 5 {
		if _, ok := r.take(0, 5, 0); !ok {
			t.Fatalf("message %d refused", i)
		}
	}
	if d, ok := r.take(0, 5, 0); ok || d != 201*time.Millisecond {
		t.Fatalf("sixth message: %v %v", d, ok)
	}
	clk.Advance(200 * time.Millisecond)
	if _, ok := r.take(0, 5, 0); !ok {
		t.Fatal("refilled message refused")
	}
}

// TestColdReadBudgetRateChange: a changed rate starts a full second's
// worth again, keeping the debt.
func TestColdReadBudgetRateChange(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	c := coldReadBudget{clock: clk}
	if allow, wait := c.take(1000); allow != 1000 || wait != 0 {
		t.Fatalf("first take: %d %v", allow, wait)
	}
	c.charge(1300) // 300 in debt
	if allow, wait := c.take(1000); allow != 0 || wait != 301*time.Millisecond {
		t.Fatalf("in debt: %d %v", allow, wait)
	}
	if allow, wait := c.take(2000); allow != 1700 || wait != 0 {
		t.Fatalf("after the rate change: %d %v", allow, wait)
	}
	clk.Advance(time.Hour)
	if allow, _ := c.take(2000); allow != 2000 {
		t.Fatalf("refilled to %d, want one second's worth", allow)
	}
}
