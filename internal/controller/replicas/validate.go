package replicas

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spoolmq/spool/remoting"
)

// Result is a validated request: Code is remoting.Success or one of the
// controller codes 2000–2016, Events what to apply (possibly some even on
// a refusal: an election that finds no master records that).
type Result struct {
	Code   int32
	Remark string
	Events []Event
}

// OK reports whether the request was accepted.
func (r Result) OK() bool { return r.Code == remoting.Success }

func refuse(code int32, format string, args ...any) Result {
	return Result{Code: code, Remark: fmt.Sprintf(format, args...)}
}

func accept(events ...Event) Result { return Result{Code: remoting.Success, Events: events} }

// stamp fills in the epochs the event is validated against.
func stamp(b *BrokerSet, e Event) Event {
	e.ClusterName, e.BrokerName = b.ClusterName, b.BrokerName
	e.MasterEpoch, e.SyncStateSetEpoch = b.MasterEpoch, b.SyncStateSetEpoch
	return e
}

// AlterSyncStateSet is CONTROLLER_ALTER_SYNC_STATE_SET from the master
// masterID in masterEpoch, which proposes set in place of the set of
// epoch setEpoch.
func (s *State) AlterSyncStateSet(brokerName string, masterID int64, masterEpoch int32, set []int64, setEpoch int32, live Liveness) Result {
	b := s.Sets[brokerName]
	if b == nil {
		return refuse(remoting.ControllerAlterSyncStateSetFailed, "broker %s is not registered", brokerName)
	}
	set = normalize(set)
	if slices.Equal(set, b.SyncStateSet) {
		return refuse(remoting.ControllerAlterSyncStateSetFailed, "the sync-state set of %s is already %v", brokerName, set)
	}
	if !b.HasMaster() || b.MasterID != masterID {
		return refuse(remoting.ControllerInvalidMaster, "broker %d is not the master of %s (master %d)", masterID, brokerName, b.MasterID)
	}
	if masterEpoch != b.MasterEpoch {
		return refuse(remoting.ControllerFencedMasterEpoch, "master epoch %d is not the current %d", masterEpoch, b.MasterEpoch)
	}
	if setEpoch != b.SyncStateSetEpoch {
		return refuse(remoting.ControllerFencedSyncStateSetEpoch, "sync-state set epoch %d is not the current %d", setEpoch, b.SyncStateSetEpoch)
	}
	for _, id := range set {
		if _, ok := b.Replicas[id]; !ok {
			return refuse(remoting.ControllerInvalidReplicas, "broker %d of the new set is not a replica of %s", id, brokerName)
		}
		if !live.Alive(b.ClusterName, brokerName, id) {
			return refuse(remoting.ControllerBrokerNotAlive, "broker %d of the new set is not alive", id)
		}
	}
	if !slices.Contains(set, masterID) {
		return refuse(remoting.ControllerAlterSyncStateSetFailed, "the new set %v does not hold the master %d", set, masterID)
	}
	return accept(stamp(b, Event{Type: EventAlterSyncStateSet, SyncStateSet: set}))
}

// ControllerTriggered is the broker id of an election the controller
// starts itself (an inactive master), or an admin tool without an id.
const ControllerTriggered int64 = -1

// ElectMaster is CONTROLLER_ELECT_MASTER from brokerID (ControllerTriggered
// for the controller's own scan); designate asks for brokerID itself.
//
// A set's first election takes the requester. An election that keeps the
// current master answers MASTER_STILL_EXIST; one that finds nobody leaves
// the set without a master (MASTER_NOT_AVAILABLE) when the controller
// asked, and fails (ELECT_MASTER_FAILED) when a broker asked.
func (s *State) ElectMaster(brokerName string, brokerID int64, designate bool, p Policy, live Liveness) Result {
	b := s.Sets[brokerName]
	if b == nil {
		return refuse(remoting.ControllerBrokerNeedToBeRegistered, "broker %s is not registered", brokerName)
	}
	newMaster := NoMaster
	if b.firstElection() && brokerID > 0 {
		if _, ok := b.Replicas[brokerID]; ok && live.Electable(b.ClusterName, brokerName, brokerID) {
			newMaster = brokerID
		}
	}
	if newMaster == NoMaster {
		designated := NoMaster
		if designate && brokerID > 0 {
			designated = brokerID
		}
		newMaster = p.Elect(b, live, designated)
	}
	switch {
	case newMaster != NoMaster && newMaster == b.MasterID:
		return refuse(remoting.ControllerMasterStillExist, "broker %d is still the master of %s", newMaster, brokerName)
	case newMaster != NoMaster:
		return accept(stamp(b, Event{Type: EventElectMaster, BrokerID: newMaster}))
	case brokerID == ControllerTriggered || brokerID == NoMaster:
		r := refuse(remoting.ControllerMasterNotAvailable, "no replica of %s can be master", brokerName)
		if b.HasMaster() {
			r.Events = []Event{stamp(b, Event{Type: EventElectMaster, BrokerID: NoMaster})}
		}
		return r
	default:
		return refuse(remoting.ControllerElectMasterFailed, "no replica of %s can be master", brokerName)
	}
}

// NextBrokerID is CONTROLLER_GET_NEXT_BROKER_ID.
func (s *State) NextBrokerID(brokerName string) int64 {
	if b := s.Sets[brokerName]; b != nil {
		return b.NextID
	}
	return FirstBrokerID
}

// ApplyBrokerID is CONTROLLER_APPLY_BROKER_ID: a new set takes only id 1;
// an existing set takes an unused id, or an id applied before with the
// same check code ("address;millis").
func (s *State) ApplyBrokerID(clusterName, brokerName string, id int64, checkCode string) Result {
	addr, _, _ := strings.Cut(checkCode, ";")
	e := Event{Type: EventApplyBrokerID, ClusterName: clusterName, BrokerName: brokerName,
		BrokerID: id, Address: addr, CheckCode: checkCode}
	b := s.Sets[brokerName]
	if b == nil {
		if id != FirstBrokerID {
			return refuse(remoting.ControllerBrokerIDInvalid, "the first broker of %s must apply id %d, not %d", brokerName, FirstBrokerID, id)
		}
		return accept(e)
	}
	if id < FirstBrokerID {
		return refuse(remoting.ControllerBrokerIDInvalid, "broker id %d is not a controller id", id)
	}
	if r, ok := b.Replicas[id]; ok && r.CheckCode != checkCode {
		return refuse(remoting.ControllerBrokerIDInvalid, "broker id %d of %s is taken by %s", id, brokerName, r.Address)
	}
	e.ClusterName = b.ClusterName
	return accept(e)
}

// RegisterBroker is CONTROLLER_REGISTER_BROKER: the id must have been
// applied; a changed address is recorded.
func (s *State) RegisterBroker(brokerName string, id int64, address string) Result {
	b := s.Sets[brokerName]
	if b == nil {
		return refuse(remoting.ControllerBrokerNeedToBeRegistered, "broker %s is not registered", brokerName)
	}
	r, ok := b.Replicas[id]
	if !ok {
		return refuse(remoting.ControllerBrokerNeedToBeRegistered, "broker id %d of %s has not been applied", id, brokerName)
	}
	if address != "" && r.Address != address {
		return accept(stamp(b, Event{Type: EventUpdateBrokerAddress, BrokerID: id, Address: address}))
	}
	return accept()
}

// CleanBrokerData is CLEAN_BROKER_DATA: ids empty removes the whole set;
// alive replicas are removed only with cleanLiving.
func (s *State) CleanBrokerData(brokerName string, ids []int64, cleanLiving bool, live Liveness) Result {
	b := s.Sets[brokerName]
	if b == nil {
		return refuse(remoting.ControllerInvalidCleanBrokerMetadata, "broker %s is not registered", brokerName)
	}
	check := ids
	if len(ids) == 0 {
		check = b.IDs()
	}
	for _, id := range check {
		if _, ok := b.Replicas[id]; !ok {
			return refuse(remoting.ControllerInvalidCleanBrokerMetadata, "broker id %d is not a replica of %s", id, brokerName)
		}
		if !cleanLiving && live.Alive(b.ClusterName, brokerName, id) {
			return refuse(remoting.ControllerInvalidCleanBrokerMetadata, "broker id %d of %s is alive", id, brokerName)
		}
	}
	return accept(stamp(b, Event{Type: EventCleanBrokerData, BrokerIDs: normalize(ids)}))
}
