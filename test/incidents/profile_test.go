package incidents

import (
	"sort"
	"testing"
	"time"
)

// profile sizes the scenarios. The short form (plain `go test`) keeps each
// scenario within about 15 s and asserts invariants from counters and
// answer codes only; the timed form (build tag incidents) runs each
// scenario three times and asserts the ratio targets on the
// medians.
type profile struct {
	timed bool
	reps  int

	// Slow fsync under the log.
	fsyncBaseline time.Duration
	fsyncWindow   time.Duration // ASYNC_FLUSH phase with every sync slowed
	syncWindow    time.Duration // SYNC_FLUSH phase with every sync slowed
	fsyncRate     float64       // paced send rate, messages a second

	// Allocation stall.
	allocBaseline time.Duration
	allocWindow   time.Duration
	allocRate     float64

	// Cold-read storm.
	coldOldBytes int64
	coldFileSize int64
	coldCapacity time.Duration
	coldPhase    time.Duration

	// Transaction check-back storm.
	txnHalves   int
	txnBaseline time.Duration
	txnStorm    time.Duration

	// Overload.
	ladderStep time.Duration
	overload   time.Duration
	recovery   time.Duration
}

// median returns the median of xs (the middle one of three).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// runReps runs one repetition per profile rep as subtests rep1, rep2, ...
func runReps(t *testing.T, fn func(t *testing.T)) {
	for i := 1; i <= prof.reps; i++ {
		t.Run("rep"+string(rune('0'+i)), fn)
	}
}
