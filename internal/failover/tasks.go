package failover

import (
	"context"
	"encoding/json"
	"github.com/spoolmq/spool/internal/ctlbody"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// apply carries out what view v asks (DecideRole). Elect is left to the
// caller (a push without a master changes nothing, as in RocketMQ); it is
// returned with the other actions.
func (a *Agent) apply(v View, source string) Action {
	a.roleMu.Lock()
	defer a.roleMu.Unlock()
	act := DecideRole(a.local(), v)
	if act == BecomeMaster && a.holds(v.MasterEpoch) {
		a.log.Info("not master yet: the sync-state set's logs are being checked", "epoch", v.MasterEpoch, "source", source)
		return Nothing
	}
	switch act {
	case BecomeMaster, BecomeSlave:
		// Nothing is acknowledged while the role changes.
		a.mu.Lock()
		a.role, a.epochCurrent, a.renewed = RoleNone, false, time.Time{}
		a.mu.Unlock()
		a.setFenced(true)
		var err error
		if act == BecomeMaster {
			err = a.d.Replica.ChangeToMaster(v.MasterEpoch, slices.Clone(v.SyncStateSet), v.SyncStateSetEpoch)
		} else {
			err = a.d.Replica.ChangeToSlave(v.MasterID, a.d.MasterHAAddr(v.MasterAddr), v.MasterEpoch)
		}
		if err != nil {
			// The epoch stays the old one: the next metadata sync retries.
			a.log.Error("role change failed", "action", act.String(), "epoch", v.MasterEpoch, "source", source, "err", err)
			return act
		}
		a.mu.Lock()
		a.masterID, a.masterAddr, a.epoch = v.MasterID, v.MasterAddr, v.MasterEpoch
		if act == BecomeMaster {
			a.role, a.epochCurrent = RoleMaster, true
			a.set, a.setEpoch = slices.Clone(v.SyncStateSet), v.SyncStateSetEpoch
			a.masterSince = a.clk.Now()
			clear(a.lastCaughtUp)
		} else {
			a.role, a.set, a.setEpoch = RoleSlave, nil, 0
		}
		st := a.statusLocked()
		a.mu.Unlock()
		a.log.Info("role changed", "role", st.Role.String(), "id", st.BrokerID, "master", v.MasterID,
			"masterAddr", v.MasterAddr, "epoch", v.MasterEpoch, "source", source)
		if a.d.OnRoleChange != nil {
			a.d.OnRoleChange(st)
		}
		if act == BecomeMaster {
			a.kickRound() // a new master is fenced until its first lease round
		}
	case AdoptSyncStateSet:
		a.d.Replica.SetSyncStateSet(slices.Clone(v.SyncStateSet), v.SyncStateSetEpoch)
		a.mu.Lock()
		a.set, a.setEpoch = slices.Clone(v.SyncStateSet), v.SyncStateSetEpoch
		a.mu.Unlock()
	}
	return act
}

func (a *Agent) statusLocked() Status {
	return Status{BrokerID: a.id, Role: a.role, MasterID: a.masterID, MasterAddr: a.masterAddr, MasterEpoch: a.epoch,
		SyncStateSet: slices.Clone(a.set), SyncStateSetEpoch: a.setEpoch, Fenced: a.fenced}
}

// setFenced applies a fencing state to the replica when it differs from
// the one applied.
func (a *Agent) setFenced(f bool) {
	a.fenceMu.Lock()
	defer a.fenceMu.Unlock()
	a.mu.Lock()
	same := a.fenced == f
	a.fenced = f
	a.mu.Unlock()
	if !same {
		a.d.Replica.SetFenced(f)
	}
}

// CheckLease applies the fencing decision (Fenced) at the clock's now.
func (a *Agent) CheckLease() {
	a.fenceMu.Lock()
	defer a.fenceMu.Unlock()
	a.mu.Lock()
	f := Fenced(LeaseInput{Role: a.role, EpochCurrent: a.epochCurrent, Renewed: a.renewed, Now: a.clk.Now(), Lease: a.d.Config.Lease()})
	same := a.fenced == f
	a.fenced = f
	a.mu.Unlock()
	if !same {
		if f {
			a.log.Warn("controller lease ran out: not acknowledging sends", "lease", a.d.Config.Lease())
		} else {
			a.log.Info("controller lease held: acknowledging sends")
		}
		a.d.Replica.SetFenced(f)
	}
}

func (a *Agent) heartbeatRequest() *remoting.Command {
	a.mu.Lock()
	id, addr := a.id, a.addr
	a.mu.Unlock()
	r := a.d.Replica
	return remoting.NewRequest(remoting.BrokerHeartbeat, map[string]string{
		"clusterName": a.d.ClusterName, "brokerAddr": addr, "brokerName": a.d.BrokerName,
		"brokerId": strconv.FormatInt(id, 10), "epoch": strconv.Itoa(int(r.MasterEpoch())),
		"maxOffset": strconv.FormatInt(r.MaxOffset(), 10), "confirmOffset": strconv.FormatInt(r.ConfirmOffset(), 10),
		"heartbeatTimeoutMills": strconv.FormatInt(a.d.Config.ControllerHeartBeatTimeoutMills, 10),
		"electionPriority":      strconv.Itoa(int(a.d.Config.BrokerElectionPriority)),
	}, nil)
}

// HeartbeatOnce is one heartbeat round, which is also the master's lease
// round: BROKER_HEARTBEAT to every controller (each keeps its own
// liveness table), and on a master, once the leader answered it,
// GET_REPLICA_INFO to the leader (answered only after the leader verified
// its leadership). The lease is renewed from the round's start when both
// succeed and the leader still names this broker master of its epoch; a
// newer epoch is applied at once.
func (a *Agent) HeartbeatOnce(ctx context.Context) {
	start := a.clk.Now()
	leader := a.ctl.leaderAddr()
	var wg sync.WaitGroup
	leaderOK := false
	if leader != "" {
		// Two-way to the leader (its address as it names itself, which
		// may differ from the configured one): the lease needs its answer.
		resp, err := a.ctl.invoke(ctx, leader, a.heartbeatRequest())
		leaderOK = err == nil && resp.Code == remoting.Success
		if err != nil {
			a.log.Debug("heartbeat to the controller leader failed", "controller", leader, "err", err)
		}
	}
	for _, addr := range a.ctl.addrs {
		if addr == leader {
			continue
		}
		req := a.heartbeatRequest()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.ctl.cl.InvokeOneway(addr, req); err != nil {
				a.log.Debug("heartbeat to a controller not sent", "controller", addr, "err", err)
			}
		}()
	}
	defer wg.Wait()
	if !leaderOK {
		// The leader may have moved: learn it for the next round.
		if _, err := a.ctl.refreshLeader(ctx); err != nil {
			a.log.Debug("controller leader unknown", "err", err)
		}
		a.CheckLease()
		return
	}
	a.mu.Lock()
	master := a.role == RoleMaster
	a.mu.Unlock()
	if !master {
		return
	}
	resp, err := a.ctl.invoke(ctx, leader, a.replicaInfoRequest())
	if err != nil || resp.Code != remoting.Success {
		a.CheckLease()
		return
	}
	v, err := viewOf(resp, false)
	if err != nil {
		a.log.Warn("GET_REPLICA_INFO answer not read", "err", err)
		a.CheckLease()
		return
	}
	a.mu.Lock()
	switch {
	case a.role == RoleMaster && v.MasterEpoch == a.epoch && v.MasterID == a.id:
		a.renewed, a.epochCurrent = start, true
	case v.MasterEpoch > a.epoch:
		a.epochCurrent = false
	}
	a.mu.Unlock()
	a.CheckLease()
	if DecideRole(a.local(), v) != Nothing {
		a.followAsync(ctx, v, "lease round") // a newer epoch or sync-state set
	}
}

// followAsync follows v on a goroutine of its own, one at a time, so that
// a slow role change (a truncation waiting for the disk) never holds up
// the heartbeats: a broker busy changing role still counts as alive.
func (a *Agent) followAsync(ctx context.Context, v View, source string) {
	if !a.following.CompareAndSwap(false, true) {
		return // the next round sees the view again
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer a.following.Store(false)
		a.follow(ctx, v, source)
	}()
}

func (a *Agent) replicaInfoRequest() *remoting.Command {
	return remoting.NewRequest(remoting.ControllerGetReplicaInfo, map[string]string{"brokerName": a.d.BrokerName}, nil)
}

// follow applies a view and asks for an election when it has no master.
func (a *Agent) follow(ctx context.Context, v View, source string) {
	if a.apply(v, source) == Elect {
		if err := a.Elect(ctx); err != nil {
			a.log.Warn("election request failed", "err", err)
		}
	}
}

// SyncBrokerMetadataOnce reads the broker set from the leader
// (GET_REPLICA_INFO) and follows it: a newer epoch changes the role, a
// newer epoch without a master asks for an election, a newer sync-state
// set of the current epoch is adopted by the master. A controller that
// does not know the broker set is registered with again.
func (a *Agent) SyncBrokerMetadataOnce(ctx context.Context) {
	resp, err := a.ctl.callLeader(ctx, a.replicaInfoRequest)
	if isCode(err, remoting.ControllerBrokerMetadataNotExist) {
		v, err := a.register(ctx)
		if err != nil {
			a.log.Warn("registration again failed", "err", err)
			return
		}
		a.follow(ctx, v, "registration")
		return
	}
	if err != nil {
		a.log.Warn("GET_REPLICA_INFO failed", "err", err)
		return
	}
	v, err := viewOf(resp, false)
	if err != nil {
		a.log.Warn("GET_REPLICA_INFO answer not read", "err", err)
		return
	}
	a.follow(ctx, v, "metadata sync")
}

// CheckSyncStateSetOnce is the master's sync-state-set round: decide the
// set (NextSyncStateSet) and, when it changed, propose it
// (ALTER_SYNC_STATE_SET); the replica takes it only once the controller
// accepted it.
func (a *Agent) CheckSyncStateSetOnce(ctx context.Context) { a.checkSyncStateSet(ctx, false) }

// ExpandSyncStateSetOnce is the round between the periodic ones: it
// proposes a set only when a slave has caught up to join it, at once (as
// RocketMQ's master does when a slave's acknowledgement reaches it), so a
// new master, whose set an election leaves it alone in, counts its slaves
// again within expandTick rather than checkSyncStateSetPeriod.
func (a *Agent) ExpandSyncStateSetOnce(ctx context.Context) { a.checkSyncStateSet(ctx, true) }

// expandTick is how often a master looks for a slave ready to join.
const expandTick = 200 * time.Millisecond

func (a *Agent) checkSyncStateSet(ctx context.Context, onlyExpand bool) {
	a.roleMu.Lock()
	defer a.roleMu.Unlock()
	reps := a.d.Replica.Replicas()
	confirm := a.d.Replica.ConfirmOffset()
	a.mu.Lock()
	if a.role != RoleMaster {
		a.mu.Unlock()
		return
	}
	for _, r := range reps {
		if r.CaughtUpAt.After(a.lastCaughtUp[r.BrokerID]) {
			a.lastCaughtUp[r.BrokerID] = r.CaughtUpAt
		}
	}
	in := SyncInput{Self: a.id, Set: slices.Clone(a.set), ConfirmOffset: confirm, Replicas: reps,
		LastCaughtUp: a.lastCaughtUp, MasterSince: a.masterSince, Now: a.clk.Now(),
		MaxNotCatchup: ms(a.d.Config.HaMaxTimeSlaveNotCatchup)}
	next, changed := NextSyncStateSet(in)
	id, epoch, setEpoch := a.id, a.epoch, a.setEpoch
	a.mu.Unlock()
	if !changed || onlyExpand && len(Joining(in.Set, next)) == 0 {
		return
	}
	// While an expansion is in flight the master acknowledges only what
	// the old and the joining members hold (RocketMQ's AutoSwitchHAService
	// counts the union too): the controller may commit the new set at any
	// moment, and an election may then pick a joiner. Everything the old
	// set acknowledged before the union counted must be on every joiner
	// already, or the proposal waits for the next round.
	restore := func() {}
	if joining := Joining(in.Set, next); len(joining) > 0 {
		union := Union(in.Set, next)
		a.d.Replica.SetSyncStateSet(union, setEpoch)
		restore = func() {
			a.mu.Lock()
			cur, curEpoch, master := slices.Clone(a.set), a.setEpoch, a.role == RoleMaster && a.epoch == epoch
			a.mu.Unlock()
			if master {
				a.d.Replica.SetSyncStateSet(cur, curEpoch)
			}
		}
		if !JoinersHold(joining, a.d.Replica.Replicas(), a.d.Replica.ConfirmOffset()) {
			restore()
			return
		}
	}
	body, _ := json.Marshal(ctlbody.SyncStateSet{SyncStateSet: next, SyncStateSetEpoch: setEpoch})
	resp, err := a.ctl.callLeader(ctx, func() *remoting.Command {
		return remoting.NewRequest(remoting.ControllerAlterSyncStateSet, map[string]string{
			"brokerName": a.d.BrokerName, "masterBrokerId": strconv.FormatInt(id, 10),
			"masterEpoch": strconv.Itoa(int(epoch)), "invokeTime": strconv.FormatInt(a.clk.Now().UnixMilli(), 10)}, body)
	})
	if err != nil {
		a.log.Warn("ALTER_SYNC_STATE_SET refused", "proposed", next, "err", err)
		restore()
		return
	}
	var got ctlbody.SyncStateSet
	if err := json.Unmarshal(resp.Body, &got); err != nil {
		// The controller may have taken it: the union stays counted until
		// the next view names the set.
		a.log.Warn("ALTER_SYNC_STATE_SET answer not read", "err", err)
		return
	}
	a.mu.Lock()
	adopt := a.role == RoleMaster && a.epoch == epoch && got.SyncStateSetEpoch > a.setEpoch
	if adopt {
		a.set, a.setEpoch = slices.Clone(got.SyncStateSet), got.SyncStateSetEpoch
	}
	a.mu.Unlock()
	if adopt {
		a.d.Replica.SetSyncStateSet(slices.Clone(got.SyncStateSet), got.SyncStateSetEpoch)
		a.log.Info("sync-state set changed", "set", got.SyncStateSet, "epoch", got.SyncStateSetEpoch)
		return
	}
	restore()
}

// HandleNotify answers NOTIFY_BROKER_ROLE_CHANGED (1008), which the
// controller leader pushes after an election: the role change it names is
// applied unless its epoch is not newer than the one applied.
func (a *Agent) HandleNotify(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	v, err := viewOf(req, false)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, "NOTIFY_BROKER_ROLE_CHANGED: "+err.Error())
	}
	a.apply(v, "notify")
	a.CheckLease()
	return remoting.NewResponse(req, remoting.Success, "")
}
