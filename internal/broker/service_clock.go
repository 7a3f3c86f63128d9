package broker

import "time"

// serviceClock is the time source of the background services that wait
// on budgets and intervals (transaction check-back); tests drive a manual
// one.
type serviceClock interface {
	Now() time.Time
	// After delivers once d has passed.
	After(d time.Duration) <-chan time.Time
}

// wallClock is the real clock.
type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
