package timer

import "time"

// Clock is the time source that decides when a timer is due. Tests drive
// the service with a fake one.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once the clock has advanced by
	// at least d.
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
