package failover

import "time"

// Replica is the broker's replication engine as the controller client drives it.
type Replica interface {
	// ChangeToMaster makes this broker the master of masterEpoch with the given
	// sync-state set. It returns only once the new epoch's start offset is
	// durable in the epoch file; from then on the broker accepts sends.
	ChangeToMaster(masterEpoch int32, syncStateSet []int64, syncStateSetEpoch int32) error
	// ChangeToSlave makes this broker a slave of masterID (HA address
	// masterHAAddr) in masterEpoch. It stops accepting sends at once, then
	// truncates to the consistent point agreed with the new master before
	// serving or acknowledging anything.
	ChangeToSlave(masterID int64, masterHAAddr string, masterEpoch int32) error
	// SetSyncStateSet records a sync-state set the controller accepted
	// (master only); it changes which acknowledgements count.
	SetSyncStateSet(set []int64, syncStateSetEpoch int32)
	// SetFenced(true) makes a master stop acknowledging sends (its controller
	// lease ran out); SetFenced(false) lifts it. Sends while fenced are
	// answered at once with an error code and a remark saying why.
	SetFenced(fenced bool)
	// Figures for heartbeats and elections.
	MasterEpoch() int32
	MaxOffset() int64     // end of the local CommitLog
	ConfirmOffset() int64 // highest offset every member of the sync-state set holds
	// Replicas reports, on a master, each connected slave's state.
	Replicas() []ReplicaState
}

// ReplicaState is one slave as its master sees it.
type ReplicaState struct {
	BrokerID   int64
	Addr       string    // the slave's remoting address as it announced itself
	AckOffset  int64     // highest offset the slave acknowledged
	CaughtUpAt time.Time // last time AckOffset reached the master's end in the current epoch (zero if never)
}
