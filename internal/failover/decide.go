package failover

import (
	"fmt"
	"slices"
	"time"
)

// This file holds the agent's decisions: functions of state and input,
// no I/O and no clock of their own.

// Role is the broker's role in its broker set as the agent last set it.
type Role int

// Roles.
const (
	// RoleNone: no role yet, or a role change is under way. Nothing is
	// acknowledged.
	RoleNone Role = iota
	RoleMaster
	RoleSlave
)

func (r Role) String() string {
	switch r {
	case RoleMaster:
		return "master"
	case RoleSlave:
		return "slave"
	}
	return "none"
}

// RegisterStep is where the registration with the controller resumes.
type RegisterStep int

// Registration steps, in RocketMQ's order (ReplicasManager.register).
const (
	// StepNextID: ask GET_NEXT_BROKER_ID, then write the temp file.
	StepNextID RegisterStep = iota
	// StepApply: APPLY_BROKER_ID with the temp file's id and check code,
	// then write brokerIdentity and remove the temp file.
	StepApply
	// StepRegister: REGISTER_BROKER_TO_CONTROLLER with brokerIdentity's id.
	StepRegister
)

// PlanRegistration returns where registration resumes from the identity
// files found (have, haveTemp) for a broker configured as cluster/name. A
// file written for another cluster or broker name is an error: the
// operator changed the configuration under an existing store.
func PlanRegistration(cluster, name string, id Identity, have bool, temp Identity, haveTemp bool) (RegisterStep, error) {
	check := func(file string, got Identity) error {
		if got.ClusterName != cluster {
			return fmt.Errorf("%s names cluster %q, the configuration brokerClusterName=%q", file, got.ClusterName, cluster)
		}
		if got.BrokerName != name {
			return fmt.Errorf("%s names broker %q, the configuration brokerName=%q", file, got.BrokerName, name)
		}
		return nil
	}
	switch {
	case have:
		return StepRegister, check(IdentityFile, id)
	case haveTemp:
		return StepApply, check(TempIdentityFile, temp)
	}
	return StepNextID, nil
}

// View is a broker set as the controller reported it: a register, elect
// or replica-info answer, or a NOTIFY_BROKER_ROLE_CHANGED push.
type View struct {
	MasterID          int64
	MasterAddr        string
	MasterEpoch       int32
	SyncStateSet      []int64
	SyncStateSetEpoch int32
}

// HasMaster reports whether the view names a master (controller ids
// start at 1; the controller sends 0 or nothing for none).
func (v View) HasMaster() bool { return v.MasterID > 0 && v.MasterAddr != "" }

// Local is what the agent holds of its own role.
type Local struct {
	ID                int64 // this broker's controller id
	Role              Role
	MasterEpoch       int32 // the epoch of the last role change applied (0: none)
	SyncStateSetEpoch int32
}

// Action is what a View asks of the agent.
type Action int

// Actions.
const (
	Nothing Action = iota
	BecomeMaster
	BecomeSlave
	// AdoptSyncStateSet: same epoch, this broker is master, and the set
	// the controller holds is newer than the one applied.
	AdoptSyncStateSet
	// Elect: the controller holds a newer epoch without a master.
	Elect
)

func (a Action) String() string {
	return [...]string{"nothing", "become master", "become slave", "adopt sync-state set", "elect"}[a]
}

// DecideRole maps a view onto an action, as RocketMQ's ReplicasManager
// does: only a newer master epoch changes the role, so a stale or
// reordered push is ignored; within the current epoch only a master takes
// a newer sync-state set.
func DecideRole(l Local, v View) Action {
	switch {
	case v.MasterEpoch > l.MasterEpoch:
		if !v.HasMaster() {
			return Elect
		}
		if v.MasterID == l.ID {
			return BecomeMaster
		}
		return BecomeSlave
	case v.MasterEpoch == l.MasterEpoch && l.Role == RoleMaster && v.MasterID == l.ID &&
		v.SyncStateSetEpoch > l.SyncStateSetEpoch:
		return AdoptSyncStateSet
	}
	return Nothing
}

// SyncInput is what the master's sync-state-set decision reads.
type SyncInput struct {
	Self          int64
	Set           []int64 // the set the controller accepted
	ConfirmOffset int64
	// Replicas are the connected slaves (Replica.Replicas).
	Replicas []ReplicaState
	// LastCaughtUp is the last CaughtUpAt seen of each slave, kept by the
	// caller across disconnections.
	LastCaughtUp map[int64]time.Time
	// MasterSince is when this broker became master of the current
	// epoch: no member is counted behind from before it.
	MasterSince   time.Time
	Now           time.Time
	MaxNotCatchup time.Duration // haMaxTimeSlaveNotCatchup
}

// NextSyncStateSet decides the sync-state set the master proposes:
//
//   - the master is always a member;
//   - a member leaves when it has not caught up to the master's end for
//     MaxNotCatchup, counted from its last catch-up or from MasterSince,
//     whichever is later; a member that is not connected counts from the
//     last catch-up seen while it was;
//   - a connected slave joins when its acknowledged offset reached the
//     confirm offset and it caught up in the current epoch (CaughtUpAt
//     not before MasterSince) within MaxNotCatchup.
//
// The result is sorted; changed reports whether it differs from in.Set.
func NextSyncStateSet(in SyncInput) (next []int64, changed bool) {
	conn := make(map[int64]ReplicaState, len(in.Replicas))
	for _, r := range in.Replicas {
		conn[r.BrokerID] = r
	}
	behindSince := func(id int64) time.Time {
		t := in.LastCaughtUp[id]
		if r, ok := conn[id]; ok && r.CaughtUpAt.After(t) {
			t = r.CaughtUpAt
		}
		if t.Before(in.MasterSince) {
			t = in.MasterSince
		}
		return t
	}
	next = []int64{in.Self}
	for _, id := range in.Set {
		if id == in.Self {
			continue
		}
		if in.Now.Sub(behindSince(id)) < in.MaxNotCatchup {
			next = append(next, id)
		}
	}
	for _, r := range in.Replicas {
		if r.BrokerID == in.Self || slices.Contains(in.Set, r.BrokerID) {
			continue
		}
		if r.AckOffset >= in.ConfirmOffset && !r.CaughtUpAt.IsZero() && !r.CaughtUpAt.Before(in.MasterSince) &&
			in.Now.Sub(r.CaughtUpAt) < in.MaxNotCatchup {
			next = append(next, r.BrokerID)
		}
	}
	slices.Sort(next)
	next = slices.Compact(next)
	cur := slices.Clone(in.Set)
	slices.Sort(cur)
	cur = slices.Compact(cur)
	return next, !slices.Equal(cur, next)
}

// LeaseInput is what the fencing decision reads.
type LeaseInput struct {
	Role Role
	// EpochCurrent: the last answer of the controller leader named this
	// broker master of the epoch it applied.
	EpochCurrent bool
	// Renewed is when the last successful lease round began (zero: none
	// in this epoch).
	Renewed time.Time
	Now     time.Time
	Lease   time.Duration
}

// Fenced decides whether the broker must not acknowledge: anything but a
// master whose epoch the leader confirmed, within Lease of the start of
// its last successful lease round.
func Fenced(in LeaseInput) bool {
	if in.Role != RoleMaster || !in.EpochCurrent || in.Renewed.IsZero() {
		return true
	}
	return in.Now.Sub(in.Renewed) >= in.Lease
}
