// Package ctlbody owns the JSON bodies of RocketMQ's controller protocol,
// as RocketMQ's Java classes serialize them: SyncStateSet,
// ElectMasterResponseBody with its BrokerMemberGroup, BrokerReplicasInfo
// (CONTROLLER_GET_SYNC_STATE_DATA) and EpochEntryCache
// (GET_BROKER_EPOCH_CACHE). The controller writes them, the broker's
// controller client and `spool admin` read them; none keeps a copy.
//
// It holds types only and imports nothing of Spool's.
package ctlbody

// SyncStateSet is RocketMQ's SyncStateSet body: the in-sync ids and the
// set's epoch.
type SyncStateSet struct {
	SyncStateSet      []int64 `json:"syncStateSet"`
	SyncStateSetEpoch int32   `json:"syncStateSetEpoch"`
}

// BrokerMemberGroup is RocketMQ's BrokerMemberGroup: a broker set's
// replica addresses by controller id (fastjson reads the quoted keys).
type BrokerMemberGroup struct {
	Cluster     string            `json:"cluster"`
	BrokerName  string            `json:"brokerName"`
	BrokerAddrs map[string]string `json:"brokerAddrs"`
}

// ElectMasterResponseBody is the body of a CONTROLLER_ELECT_MASTER answer.
type ElectMasterResponseBody struct {
	BrokerMemberGroup *BrokerMemberGroup `json:"brokerMemberGroup,omitempty"`
	SyncStateSet      []int64            `json:"syncStateSet"`
}

// ReplicaIdentity is one replica in BrokerReplicasInfo.
type ReplicaIdentity struct {
	BrokerName    string `json:"brokerName"`
	BrokerID      int64  `json:"brokerId"`
	BrokerAddress string `json:"brokerAddress"`
	Alive         bool   `json:"alive"`
}

// ReplicasInfo is one broker set in BrokerReplicasInfo.
type ReplicasInfo struct {
	MasterBrokerID    int64             `json:"masterBrokerId"`
	MasterAddress     string            `json:"masterAddress"`
	MasterEpoch       int32             `json:"masterEpoch"`
	SyncStateSetEpoch int32             `json:"syncStateSetEpoch"`
	InSyncReplicas    []ReplicaIdentity `json:"inSyncReplicas"`
	NotInSyncReplicas []ReplicaIdentity `json:"notInSyncReplicas"`
}

// BrokerReplicasInfo is the body of a CONTROLLER_GET_SYNC_STATE_DATA
// answer.
type BrokerReplicasInfo struct {
	ReplicasInfoTable map[string]ReplicasInfo `json:"replicasInfoTable"`
}

// EpochEntry is RocketMQ's EpochEntry as JSON: an epoch and the CommitLog
// range its bytes occupy (the last entry ends at Long.MAX_VALUE, as
// RocketMQ's epoch cache leaves it; mqadmin prints maxOffset there).
// Fields are in fastjson's (alphabetical) order.
type EpochEntry struct {
	EndOffset   int64 `json:"endOffset"`
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"startOffset"`
}

// EpochEntryCache is RocketMQ's EpochEntryCache body, the answer to
// GET_BROKER_EPOCH_CACHE.
type EpochEntryCache struct {
	BrokerID    int64        `json:"brokerId"`
	BrokerName  string       `json:"brokerName"`
	ClusterName string       `json:"clusterName"`
	EpochList   []EpochEntry `json:"epochList"`
	MaxOffset   int64        `json:"maxOffset"`
}
