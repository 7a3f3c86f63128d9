package timer

import "time"

// Clock is the time source that decides when a timer is due. Tests drive
// the service with a fake one.
type Clock interface {
	Now() time.Time
	// Alarm returns a channel that receives once Now() has reached at.
	Alarm(at time.Time) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                      { return time.Now() }
func (systemClock) Alarm(at time.Time) <-chan time.Time { return time.After(time.Until(at)) }
