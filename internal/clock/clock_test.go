package clock

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestManualFiresWhenReached(t *testing.T) {
	start := time.Unix(1000, 0)
	m := NewManual(start)
	a := m.After(2 * time.Second)
	b := m.After(5 * time.Second)
	if got := m.Waiters(); got != 2 {
		t.Fatalf("waiters %d", got)
	}
	m.Advance(time.Second)
	select {
	case <-a:
		t.Fatal("fired before its time")
	default:
	}
	m.Advance(time.Second)
	if got := <-a; !got.Equal(start.Add(2 * time.Second)) {
		t.Fatalf("fired with %v", got)
	}
	if got := m.Waiters(); got != 1 {
		t.Fatalf("waiters after one fired: %d", got)
	}
	m.Set(start.Add(time.Minute))
	<-b
	if m.Waiters() != 0 || m.Since(start) != time.Minute {
		t.Fatalf("waiters %d since %v", m.Waiters(), m.Since(start))
	}
	select {
	case <-m.After(0):
	default:
		t.Fatal("After(0) did not fire at once")
	}
}

func TestManualSetBackDoesNotFire(t *testing.T) {
	m := NewManual(time.Unix(1000, 0))
	c := m.After(time.Second)
	m.Set(time.Unix(900, 0))
	select {
	case <-c:
		t.Fatal("fired after the clock went back")
	default:
	}
	m.Set(time.Unix(1001, 0))
	<-c
}

func TestManualConcurrent(t *testing.T) {
	m := NewManual(time.Unix(0, 0))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-m.After(time.Second)
		}()
	}
	for m.Waiters() < 8 {
		runtime.Gosched() // until every goroutine waits on the clock
	}
	m.Advance(time.Second)
	wg.Wait()
}

func TestOr(t *testing.T) {
	if _, ok := Or(nil).(realClock); !ok {
		t.Fatal("Or(nil) is not the real clock")
	}
	m := NewManual(time.Time{})
	if Or(m) != Clock(m) {
		t.Fatal("Or(m) is not m")
	}
}

func TestAfterTime(t *testing.T) {
	start := time.Unix(1000, 0)
	m := NewManual(start)
	at := start.Add(3 * time.Second)
	m.Advance(time.Second) // moved after the caller computed at
	c := AfterTime(m, at)
	m.Advance(1999 * time.Millisecond)
	select {
	case <-c:
		t.Fatal("fired before its time")
	default:
	}
	m.Advance(time.Millisecond)
	if got := <-c; !got.Equal(at) {
		t.Fatalf("fired with %v", got)
	}
	select {
	case <-AfterTime(m, start):
	default:
		t.Fatal("a past time did not fire at once")
	}
	r := AfterTime(Real(), time.Now().Add(-time.Second))
	<-r
}
