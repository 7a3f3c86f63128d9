package store

import (
	"testing"
	"time"
)

func TestDispatchWait(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		progressed, failing, waiting bool
		wait                         time.Duration
		wakeable                     bool
	}{
		{"records flowing, nobody waiting: linger, puts do not wake it", true, false, false, dispatchLinger, false},
		{"records flowing, a pull held: park, every put wakes it", true, false, true, time.Second, true},
		{"nothing new: park until a put wakes it", false, false, false, time.Second, true},
		{"nothing new, a pull held: park", false, false, true, time.Second, true},
		{"failing: retry soon, or when a put arrives", false, true, false, dispatchRetryInterval, true},
		{"failing after partial progress: still the retry", true, true, false, dispatchRetryInterval, true},
	} {
		wait, wakeable := dispatchWait(tc.progressed, tc.failing, tc.waiting)
		if wait != tc.wait || wakeable != tc.wakeable {
			t.Errorf("%s: dispatchWait(%v, %v, %v) = %v, %v; want %v, %v", tc.name, tc.progressed, tc.failing, tc.waiting, wait, wakeable, tc.wait, tc.wakeable)
		}
	}
}
