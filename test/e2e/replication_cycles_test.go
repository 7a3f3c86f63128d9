//go:build !soak

package e2e

// replicationKillCycles is the number of SIGKILL-and-restart cycles of the
// master in TestReplicationSyncMasterKillLoop; `-tags soak` runs five.
const replicationKillCycles = 2
