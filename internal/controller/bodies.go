package controller

import (
	"encoding/json"
	"strconv"

	"github.com/spoolmq/spool/internal/controller/replicas"
	"github.com/spoolmq/spool/internal/ctlbody"
)

// The controller's bodies are ctlbody's (their one owner), named here as
// the controller's handlers and tests use them.
type (
	SyncStateSet            = ctlbody.SyncStateSet
	BrokerMemberGroup       = ctlbody.BrokerMemberGroup
	ElectMasterResponseBody = ctlbody.ElectMasterResponseBody
	ReplicaIdentity         = ctlbody.ReplicaIdentity
	ReplicasInfo            = ctlbody.ReplicasInfo
	BrokerReplicasInfo      = ctlbody.BrokerReplicasInfo
)

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
