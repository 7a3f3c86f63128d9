//go:build incidents

package incidents

import "time"

var prof = profile{
	timed: true,
	reps:  3,

	fsyncBaseline: 10 * time.Second,
	fsyncWindow:   30 * time.Second,
	syncWindow:    10 * time.Second,
	fsyncRate:     4000,

	allocBaseline: 5 * time.Second,
	allocWindow:   8 * time.Second,
	allocRate:     2000,

	coldOldBytes: 2 << 30,
	coldFileSize: 256 << 20,
	coldCapacity: 3 * time.Second,
	coldPhase:    10 * time.Second,

	txnHalves:   50000,
	txnBaseline: 10 * time.Second,
	txnStorm:    10 * time.Second,

	ladderStep: time.Second,
	overload:   10 * time.Second,
	recovery:   3 * time.Second,
}
