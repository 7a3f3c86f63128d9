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

// Epoch is one entry of an epoch table: an epoch and the CommitLog
// offset its bytes start at.
type Epoch struct {
	Epoch       int32
	StartOffset int64
}

// MemberLog is what a member of the sync-state set reported of its log
// (GET_BROKER_EPOCH_CACHE): its epoch table and its CommitLog's end. A
// member that did not answer is not Reachable.
type MemberLog struct {
	BrokerID  int64
	Reachable bool
	Epochs    []Epoch
	MaxOffset int64
}

// ResumeInput is what the decision of a master restarted in its own
// epoch reads: its own log, and each other member of the sync-state set.
type ResumeInput struct {
	Epochs  []Epoch // this broker's epoch table, oldest first
	End     int64   // this broker's CommitLog end
	Members []MemberLog
	// TimedOut: the members still unreachable have been waited for long
	// enough; they are left out of the decision.
	TimedOut bool
}

// ResumeAction is what a restarted master does next.
type ResumeAction int

// Resume actions.
const (
	// ResumeServe: no member holds anything this broker lacks; take the
	// master role.
	ResumeServe ResumeAction = iota
	// ResumeElect: member Elect holds bytes this broker lost; ask the
	// controller to elect it (designated), and follow it as a slave.
	ResumeElect
	// ResumeWait: a member did not answer; ask again.
	ResumeWait
)

func (a ResumeAction) String() string {
	return [...]string{"serve", "elect", "wait"}[a]
}

// Resume is a restarted master's decision.
type Resume struct {
	Action ResumeAction
	Elect  int64   // the member to elect (ResumeElect)
	Ahead  []int64 // the members holding more than this broker, sorted
	Silent []int64 // the members that did not answer, sorted
}

// lastHeld is the last epoch of es that holds a byte below end, and its
// index (-1: none).
func lastHeld(es []Epoch, end int64) int {
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].StartOffset < end {
			return i
		}
	}
	return -1
}

// Covers reports whether a log with epoch table es ending at end holds
// every byte member m holds: m's last epoch that holds a byte is in es,
// and es holds that epoch up to m's end. Logs of one broker set agree on
// the bytes of an epoch they share (a slave truncates to the consistent
// point before it appends), so what m holds before that epoch is held
// too.
func Covers(es []Epoch, end int64, m MemberLog) bool {
	i := lastHeld(m.Epochs, m.MaxOffset)
	if i < 0 {
		return true // m holds nothing in any epoch
	}
	e := m.Epochs[i].Epoch
	for j, own := range es {
		if own.Epoch != e {
			continue
		}
		held := end // the epoch's end here: the next epoch's start, or the log's end
		if j+1 < len(es) {
			held = min(held, es[j+1].StartOffset)
		}
		return held >= m.MaxOffset
	}
	return false
}

// DecideResume decides what a master that restarted and was named master
// of its own epoch again does before it acknowledges anything. A member
// of the sync-state set may hold more than it (it lost an unflushed tail
// in a power cut, while the members hold every acknowledged message);
// serving would make each of them cut its log to this broker's end in the
// HA handshake. So:
//
//   - a member that did not answer, until TimedOut: wait and ask again;
//   - a member holding bytes this broker lacks (Covers is false): elect
//     the one holding the most: the latest epoch that holds a byte, then
//     the largest end, then the lowest id;
//   - otherwise serve.
func DecideResume(in ResumeInput) Resume {
	var out Resume
	best := -1
	rank := func(m MemberLog) (int32, int64) {
		i := lastHeld(m.Epochs, m.MaxOffset)
		if i < 0 {
			return -1, m.MaxOffset
		}
		return m.Epochs[i].Epoch, m.MaxOffset
	}
	for k, m := range in.Members {
		if !m.Reachable {
			out.Silent = append(out.Silent, m.BrokerID)
			continue
		}
		if Covers(in.Epochs, in.End, m) {
			continue
		}
		out.Ahead = append(out.Ahead, m.BrokerID)
		if best < 0 {
			best = k
			continue
		}
		be, bo := rank(in.Members[best])
		me, mo := rank(m)
		if me > be || me == be && (mo > bo || mo == bo && m.BrokerID < in.Members[best].BrokerID) {
			best = k
		}
	}
	slices.Sort(out.Silent)
	slices.Sort(out.Ahead)
	switch {
	case len(out.Silent) > 0 && !in.TimedOut:
		out.Action = ResumeWait
	case best >= 0:
		out.Action, out.Elect = ResumeElect, in.Members[best].BrokerID
	default:
		out.Action = ResumeServe
	}
	return out
}

// Joining lists the members of next that set lacks, sorted.
func Joining(set, next []int64) []int64 {
	var out []int64
	for _, id := range next {
		if !slices.Contains(set, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Union is the members of a and b, sorted, each once.
func Union(a, b []int64) []int64 {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// JoinersHold reports whether every joining member is connected and has
// acknowledged at least confirm, the offset up to which the master has
// acknowledged sends: read after the union of the old and the joining
// members counts, it is everything a joiner must hold before the set may
// name it.
func JoinersHold(joining []int64, reps []ReplicaState, confirm int64) bool {
	for _, id := range joining {
		ok := false
		for _, r := range reps {
			if r.BrokerID == id && r.AckOffset >= confirm {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
