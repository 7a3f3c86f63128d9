package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spoolmq/spool/internal/ctlbody"
	"slices"
	"strconv"
	"sync"

	"github.com/spoolmq/spool/remoting"
)

// errStopped: the agent was closed while it waited.
var errStopped = errors.New("the controller client stopped")

// member is a replica of the sync-state set and its remoting address.
type member struct {
	id   int64
	addr string
}

// syncStateData asks the controller leader for the broker set
// (CONTROLLER_GET_SYNC_STATE_DATA): its view and the members of its
// sync-state set with their addresses.
func (a *Agent) syncStateData(ctx context.Context) (View, []member, error) {
	body, _ := json.Marshal([]string{a.d.BrokerName})
	resp, err := a.ctl.callLeader(ctx, func() *remoting.Command {
		return remoting.NewRequest(remoting.ControllerGetSyncStateData, nil, body)
	})
	if err != nil {
		return View{}, nil, fmt.Errorf("CONTROLLER_GET_SYNC_STATE_DATA: %w", err)
	}
	var info ctlbody.BrokerReplicasInfo
	if err := json.Unmarshal(resp.Body, &info); err != nil {
		return View{}, nil, fmt.Errorf("CONTROLLER_GET_SYNC_STATE_DATA answer: %w", err)
	}
	ri, ok := info.ReplicasInfoTable[a.d.BrokerName]
	if !ok {
		return View{}, nil, fmt.Errorf("CONTROLLER_GET_SYNC_STATE_DATA: broker %s unknown to the controller", a.d.BrokerName)
	}
	v := View{MasterID: ri.MasterBrokerID, MasterAddr: ri.MasterAddress, MasterEpoch: ri.MasterEpoch,
		SyncStateSetEpoch: ri.SyncStateSetEpoch}
	var ms []member
	for _, r := range ri.InSyncReplicas {
		v.SyncStateSet = append(v.SyncStateSet, r.BrokerID)
		ms = append(ms, member{id: r.BrokerID, addr: r.BrokerAddress})
	}
	slices.Sort(v.SyncStateSet)
	return v, ms, nil
}

// memberLogs asks each member for its epoch table and end
// (GET_BROKER_EPOCH_CACHE), all at once; a member that does not answer,
// answers an error or names another broker set is not Reachable.
func (a *Agent) memberLogs(ctx context.Context, ms []member) []MemberLog {
	out := make([]MemberLog, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		out[i].BrokerID = m.id
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := a.memberLog(ctx, m)
			if err != nil {
				a.log.Info("a member of the sync-state set did not report its log", "member", m.id, "addr", m.addr, "err", err)
				return
			}
			out[i] = l
		}()
	}
	wg.Wait()
	return out
}

func (a *Agent) memberLog(ctx context.Context, m member) (MemberLog, error) {
	if m.addr == "" {
		return MemberLog{}, errors.New("no address known")
	}
	resp, err := a.ctl.invoke(ctx, m.addr, remoting.NewRequest(remoting.GetBrokerEpochCache, nil, nil))
	if err != nil {
		return MemberLog{}, err
	}
	if resp.Code != remoting.Success {
		return MemberLog{}, &codeError{resp.Code, resp.Remark}
	}
	var c ctlbody.EpochEntryCache
	if err := json.Unmarshal(resp.Body, &c); err != nil {
		return MemberLog{}, fmt.Errorf("EpochEntryCache: %w", err)
	}
	if c.BrokerName != a.d.BrokerName || c.ClusterName != a.d.ClusterName || (c.BrokerID != 0 && c.BrokerID != m.id) {
		return MemberLog{}, fmt.Errorf("the broker at %s is %s/%s id %d, not member %d", m.addr, c.ClusterName, c.BrokerName, c.BrokerID, m.id)
	}
	l := MemberLog{BrokerID: m.id, Reachable: true, MaxOffset: c.MaxOffset}
	for _, e := range c.EpochList {
		l.Epochs = append(l.Epochs, Epoch{Epoch: e.Epoch, StartOffset: e.StartOffset})
	}
	return l, nil
}

// localEpochs is this broker's epoch table (Deps.Epochs; without it, or
// when it has none, a single entry for the replica's epoch).
func (a *Agent) localEpochs() []Epoch {
	if a.d.Epochs != nil {
		if es := a.d.Epochs(); len(es) > 0 {
			return es
		}
	}
	if e := a.d.Replica.MasterEpoch(); e >= 0 {
		return []Epoch{{Epoch: e}}
	}
	return nil
}

// resumeMaster runs when the registration names this broker master of an
// epoch and its sync-state set has other members: the broker restarted
// before the controllers counted it dead, and its log may have lost an
// unflushed tail (a power cut) the members hold, every acknowledged
// message among it. It stays without a role (fenced, refusing sends,
// closing slave connections) and, every brokerHeartbeatInterval, reads
// the broker set from the controller and asks every other member for its
// log (DecideResume): it takes the master role when no member holds more
// than it; it asks the controller to elect the member holding the most
// (ELECT_MASTER with designateElect=true) and follows it as a slave when
// one does; it asks again while a member does not answer, for at most
// controllerHeartBeatTimeoutMills, and then decides without it. When the
// controller names another master meanwhile, that view is followed.
// Heartbeats go on during the wait.
func (a *Agent) resumeMaster(ctx context.Context, v View) error {
	a.setHold(v.MasterEpoch)
	defer a.setHold(0)
	deadline := a.clk.Now().Add(ms(a.d.Config.ControllerHeartBeatTimeoutMills))
	a.log.Info("restarted as the master of its own epoch: checking the sync-state set's logs before serving",
		"epoch", v.MasterEpoch, "set", v.SyncStateSet)
	for round := 0; ; round++ {
		if round > 0 {
			if !a.sleep(ms(a.d.Config.BrokerHeartbeatInterval)) {
				return errStopped
			}
			a.HeartbeatOnce(ctx)
		}
		cur, members, err := a.syncStateData(ctx)
		if err != nil {
			return err
		}
		self := a.Status().BrokerID
		if cur.MasterID != self || cur.MasterEpoch != v.MasterEpoch {
			a.setHold(0)
			a.follow(ctx, cur, "registration")
			return nil
		}
		members = slices.DeleteFunc(members, func(m member) bool { return m.id == self })
		in := ResumeInput{Epochs: a.localEpochs(), End: a.d.Replica.MaxOffset(), Members: a.memberLogs(ctx, members),
			TimedOut: !a.clk.Now().Before(deadline)}
		d := DecideResume(in)
		switch d.Action {
		case ResumeServe:
			if len(d.Silent) > 0 {
				a.log.Warn("members of the sync-state set did not report their logs in time: serving without them",
					"silent", d.Silent, "end", in.End)
			}
			a.setHold(0)
			a.apply(cur, "registration")
			return nil
		case ResumeElect:
			a.log.Warn("a member of the sync-state set holds more than this broker's log: asking for its election",
				"member", d.Elect, "ahead", d.Ahead, "end", in.End, "epoch", v.MasterEpoch)
			err := a.elect(ctx, d.Elect, true)
			if err == nil {
				return nil
			}
			a.log.Warn("designated election refused; asking again", "member", d.Elect, "err", err)
		case ResumeWait:
			a.log.Info("waiting for members of the sync-state set to report their logs", "silent", d.Silent)
		}
	}
}

func (a *Agent) setHold(epoch int32) {
	a.mu.Lock()
	a.hold = epoch
	a.mu.Unlock()
}

// holds reports whether a view naming this broker master of epoch must
// wait for resumeMaster's decision.
func (a *Agent) holds(epoch int32) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hold != 0 && epoch <= a.hold
}

// hasOthers reports whether set has a member other than self.
func hasOthers(set []int64, self int64) bool {
	return slices.ContainsFunc(set, func(id int64) bool { return id != self })
}

// electRequest is ELECT_MASTER for broker id of this broker set.
func (a *Agent) electRequest(id int64, designate bool) *remoting.Command {
	return remoting.NewRequest(remoting.ControllerElectMaster, map[string]string{
		"clusterName": a.d.ClusterName, "brokerName": a.d.BrokerName,
		"brokerId": strconv.FormatInt(id, 10), "designateElect": strconv.FormatBool(designate),
		"invokeTime": strconv.FormatInt(a.clk.Now().UnixMilli(), 10)}, nil)
}
