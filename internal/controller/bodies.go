package controller

import (
	"encoding/json"
	"strconv"

	"github.com/spoolmq/spool/internal/controller/replicas"
)

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

func setBody(b *replicas.BrokerSet) []byte {
	set := b.SyncStateSet
	if set == nil {
		set = []int64{}
	}
	raw, _ := json.Marshal(SyncStateSet{SyncStateSet: set, SyncStateSetEpoch: b.SyncStateSetEpoch})
	return raw
}

func memberGroup(b *replicas.BrokerSet) *BrokerMemberGroup {
	g := &BrokerMemberGroup{Cluster: b.ClusterName, BrokerName: b.BrokerName, BrokerAddrs: map[string]string{}}
	for id, r := range b.Replicas {
		g.BrokerAddrs[strconv.FormatInt(id, 10)] = r.Address
	}
	return g
}
