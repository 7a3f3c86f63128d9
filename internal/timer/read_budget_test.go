package timer

import (
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
)

// TestReadBudgetPaces: the budget starts empty and a reader waits the
// time its bytes take at the rate; idle time banks at most one second.
func TestReadBudgetPaces(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	b := newReadBudget(func() int64 { return 1000 })
	b.clock = clk
	done := make(chan bool)
	go func() { done <- b.take(500, nil) }()
	for clk.Waiters() == 0 {
		time.Sleep(time.Millisecond)
	}
	clk.Advance(499 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("500 bytes at 1000 B/s passed before 500ms")
	default:
	}
	clk.Advance(time.Millisecond)
	if !<-done {
		t.Fatal("take reported quit")
	}
	clk.Advance(time.Hour)
	if !b.take(1000, nil) { // one banked second
		t.Fatal("banked second refused")
	}
	quit := make(chan struct{})
	close(quit)
	if b.take(1, quit) {
		t.Fatal("an empty budget did not wait")
	}
}
