//go:build !incidents

package incidents

import "time"

var prof = profile{
	timed: false,
	reps:  1,

	fsyncBaseline: 1500 * time.Millisecond,
	fsyncWindow:   4500 * time.Millisecond,
	syncWindow:    3 * time.Second,
	fsyncRate:     2000,

	allocBaseline: 1500 * time.Millisecond,
	allocWindow:   4 * time.Second,
	allocRate:     2000,

	coldOldBytes: 128 << 20,
	coldFileSize: 32 << 20,
	coldCapacity: 1500 * time.Millisecond,
	coldPhase:    3 * time.Second,

	txnHalves:   5000,
	txnBaseline: 2 * time.Second,
	txnStorm:    3 * time.Second,

	ladderStep: 300 * time.Millisecond,
	overload:   2 * time.Second,
	recovery:   1500 * time.Millisecond,
}
