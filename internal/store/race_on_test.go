//go:build race

package store

// raceEnabled reports a race-detector build, whose binaries run scale
// tests several times slower.
const raceEnabled = true
