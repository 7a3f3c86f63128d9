package replicas

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// NoMaster is the master id of a broker set without a master. Controller
// ids start at 1 (FirstBrokerID); 0 is the role id a master reports.
const NoMaster int64 = 0

// FirstBrokerID is the first id the controller hands out in a broker set
// (RocketMQ's MixAll.FIRST_BROKER_CONTROLLER_ID).
const FirstBrokerID int64 = 1

// Replica is one registered replica of a broker set.
type Replica struct {
	Address string `json:"address"`
	// CheckCode is the registerCheckCode the broker applied its id with
	// ("address;millis"); a broker applying the same id again with the
	// same code is the same broker.
	CheckCode string `json:"checkCode"`
}

// BrokerSet is the controller's view of one broker name.
type BrokerSet struct {
	ClusterName string            `json:"clusterName"`
	BrokerName  string            `json:"brokerName"`
	Replicas    map[int64]Replica `json:"replicas"`
	// NextID is the id GET_NEXT_BROKER_ID answers.
	NextID int64 `json:"nextId"`
	// MasterID is the master's controller id, NoMaster when none.
	MasterID int64 `json:"masterId"`
	// MasterEpoch grows by one with every election, also one that ends
	// with no master, and when the master's data is cleaned.
	MasterEpoch int32 `json:"masterEpoch"`
	// SyncStateSet holds the in-sync replica ids, sorted.
	SyncStateSet []int64 `json:"syncStateSet"`
	// SyncStateSetEpoch grows by one with every change of the set
	// (elections of a master and cleaned members included).
	SyncStateSetEpoch int32 `json:"syncStateSetEpoch"`
}

// HasMaster reports whether the set has a master.
func (b *BrokerSet) HasMaster() bool { return b.MasterID != NoMaster }

// MasterAddress is the master's address, "" when none.
func (b *BrokerSet) MasterAddress() string {
	if !b.HasMaster() {
		return ""
	}
	return b.Replicas[b.MasterID].Address
}

// IDs returns the registered replica ids, sorted.
func (b *BrokerSet) IDs() []int64 {
	ids := make([]int64, 0, len(b.Replicas))
	for id := range b.Replicas {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// InSync reports whether id is in the sync-state set.
func (b *BrokerSet) InSync(id int64) bool { return slices.Contains(b.SyncStateSet, id) }

// firstElection: no election has happened yet (RocketMQ's
// isFirstTimeForElect).
func (b *BrokerSet) firstElection() bool { return b.MasterEpoch == 0 }

func (b *BrokerSet) clone() *BrokerSet {
	c := *b
	c.Replicas = make(map[int64]Replica, len(b.Replicas))
	for id, r := range b.Replicas {
		c.Replicas[id] = r
	}
	c.SyncStateSet = slices.Clone(b.SyncStateSet)
	return &c
}

// State is every broker set the controller knows, by broker name.
type State struct {
	Sets map[string]*BrokerSet `json:"sets"`
}

// NewState returns an empty state.
func NewState() *State { return &State{Sets: map[string]*BrokerSet{}} }

// Set returns the broker set of name, nil when unknown.
func (s *State) Set(name string) *BrokerSet { return s.Sets[name] }

// Names returns the broker names, sorted.
func (s *State) Names() []string {
	names := make([]string, 0, len(s.Sets))
	for n := range s.Sets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Clone returns a deep copy.
func (s *State) Clone() *State {
	c := NewState()
	for n, b := range s.Sets {
		c.Sets[n] = b.clone()
	}
	return c
}

// EventType names an Event.
type EventType string

// The events. They are RocketMQ's five (AlterSyncStateSet, ApplyBrokerId,
// ElectMaster, CleanBrokerData, UpdateBrokerAddress); ControllerAddress is
// Spool's: the remoting address of a controller, written by a controller
// when it becomes leader so that every replica can name the leader's
// remoting address in GET_METADATA_INFO.
const (
	EventAlterSyncStateSet   EventType = "AlterSyncStateSet"
	EventApplyBrokerID       EventType = "ApplyBrokerId"
	EventElectMaster         EventType = "ElectMaster"
	EventCleanBrokerData     EventType = "CleanBrokerData"
	EventUpdateBrokerAddress EventType = "UpdateBrokerAddress"
	EventControllerAddress   EventType = "ControllerAddress"
)

// Event is one change of the State. Which fields count depends on Type.
// MasterEpoch and SyncStateSetEpoch are the epochs the event was validated
// against: Apply refuses the event when the set's epochs differ.
type Event struct {
	Type        EventType `json:"type"`
	ClusterName string    `json:"clusterName,omitempty"`
	BrokerName  string    `json:"brokerName,omitempty"`

	MasterEpoch       int32 `json:"masterEpoch,omitempty"`
	SyncStateSetEpoch int32 `json:"syncStateSetEpoch,omitempty"`

	// AlterSyncStateSet: the new set.
	SyncStateSet []int64 `json:"syncStateSet,omitempty"`
	// ApplyBrokerId, UpdateBrokerAddress: the replica; ElectMaster: the new
	// master (NoMaster: the set is left without one).
	BrokerID  int64  `json:"brokerId,omitempty"`
	Address   string `json:"address,omitempty"`
	CheckCode string `json:"checkCode,omitempty"`
	// CleanBrokerData: the ids to remove; empty removes the whole set.
	BrokerIDs []int64 `json:"brokerIds,omitempty"`
	// ControllerAddress: the controller's id and remoting address
	// (Address).
	ControllerID string `json:"controllerId,omitempty"`
}

// ErrFenced is returned by Apply for an event validated against epochs
// that are no longer current, or against a set that no longer exists.
var ErrFenced = errors.New("replicas: event fenced by a newer epoch")

// Controllers maps a controller id to its remoting address (see
// EventControllerAddress). It is part of the replicated state.
type Controllers map[string]string

// Apply applies e, or refuses it with ErrFenced (the state is unchanged).
// Apply is the only code that changes a State.
func (s *State) Apply(e Event, ctl Controllers) error {
	b := s.Sets[e.BrokerName]
	switch e.Type {
	case EventControllerAddress:
		if ctl != nil {
			ctl[e.ControllerID] = e.Address
		}
		return nil
	case EventApplyBrokerID:
		if b == nil {
			if e.BrokerID != FirstBrokerID {
				return ErrFenced
			}
			b = &BrokerSet{ClusterName: e.ClusterName, BrokerName: e.BrokerName,
				Replicas: map[int64]Replica{}, NextID: FirstBrokerID}
			s.Sets[e.BrokerName] = b
		} else if r, ok := b.Replicas[e.BrokerID]; ok && r.CheckCode != e.CheckCode {
			return ErrFenced
		}
		b.Replicas[e.BrokerID] = Replica{Address: e.Address, CheckCode: e.CheckCode}
		b.NextID = max(b.NextID, e.BrokerID+1)
		return nil
	}
	if b == nil || b.MasterEpoch != e.MasterEpoch || b.SyncStateSetEpoch != e.SyncStateSetEpoch {
		return ErrFenced
	}
	switch e.Type {
	case EventUpdateBrokerAddress:
		r, ok := b.Replicas[e.BrokerID]
		if !ok {
			return ErrFenced
		}
		r.Address = e.Address
		b.Replicas[e.BrokerID] = r
	case EventAlterSyncStateSet:
		set := normalize(e.SyncStateSet)
		if !b.HasMaster() || !slices.Contains(set, b.MasterID) {
			return ErrFenced
		}
		for _, id := range set {
			if _, ok := b.Replicas[id]; !ok {
				return ErrFenced
			}
		}
		b.SyncStateSet = set
		b.SyncStateSetEpoch++
	case EventElectMaster:
		if e.BrokerID != NoMaster {
			if _, ok := b.Replicas[e.BrokerID]; !ok {
				return ErrFenced
			}
			b.SyncStateSet = []int64{e.BrokerID}
			b.SyncStateSetEpoch++
		}
		// With no master the set keeps its members (and its epoch): they
		// stay the candidates of the next election.
		b.MasterID = e.BrokerID
		b.MasterEpoch++
	case EventCleanBrokerData:
		if len(e.BrokerIDs) == 0 {
			delete(s.Sets, e.BrokerName)
			return nil
		}
		for _, id := range e.BrokerIDs {
			delete(b.Replicas, id)
		}
		if len(b.Replicas) == 0 {
			delete(s.Sets, e.BrokerName)
			return nil
		}
		b.SyncStateSet = slices.DeleteFunc(b.SyncStateSet, func(id int64) bool {
			return slices.Contains(e.BrokerIDs, id)
		})
		if slices.Contains(e.BrokerIDs, b.MasterID) {
			// Removing the master is a change of master: it takes an
			// epoch, so the removed master is fenced.
			b.MasterID = NoMaster
			b.MasterEpoch++
		}
		b.SyncStateSetEpoch++
	default:
		return fmt.Errorf("replicas: unknown event %q", e.Type)
	}
	return nil
}

// normalize returns ids sorted without duplicates.
func normalize(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
