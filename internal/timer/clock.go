package timer

import (
	"time"

	"github.com/spoolmq/spool/internal/clock"
)

// alarm returns a channel that receives once c has reached at. The wait
// is registered before the time is checked again, so a clock moved
// between the two readings (a clock.Manual in tests) does not push the
// alarm past at.
func alarm(c clock.Clock, at time.Time) <-chan time.Time {
	ch := c.After(at.Sub(c.Now()))
	if now := c.Now(); !now.Before(at) {
		due := make(chan time.Time, 1)
		due <- now
		return due
	}
	return ch
}
