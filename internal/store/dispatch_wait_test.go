package store

import (
	"testing"
	"time"
)

func TestDispatchWait(t *testing.T) {
	for _, tc := range []struct {
		name                string
		progressed, failing bool
		wait                time.Duration
		wakeable            bool
	}{
		{"records flowing: linger, puts do not wake it", true, false, dispatchLinger, false},
		{"nothing new: park until a put wakes it", false, false, time.Second, true},
		{"failing: retry soon, or when a put arrives", false, true, dispatchRetryInterval, true},
		{"failing after partial progress: still the retry", true, true, dispatchRetryInterval, true},
	} {
		wait, wakeable := dispatchWait(tc.progressed, tc.failing)
		if wait != tc.wait || wakeable != tc.wakeable {
			t.Errorf("%s: dispatchWait(%v, %v) = %v, %v; want %v, %v", tc.name, tc.progressed, tc.failing, wait, wakeable, tc.wait, tc.wakeable)
		}
	}
}
