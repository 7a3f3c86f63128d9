//go:build soak

package e2e

// replicationKillCycles: the soak form kills and restarts the master five
// times.
const replicationKillCycles = 5
