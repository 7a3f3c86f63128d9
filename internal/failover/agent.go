package failover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// Deps is what an Agent needs from the broker.
type Deps struct {
	Config      Config
	ClusterName string // brokerClusterName
	BrokerName  string // brokerName
	// Replica is the replication engine the agent drives.
	Replica Replica
	// FS and StoreRoot locate the identity files (FS nil: the OS).
	FS        vfs.FS
	StoreRoot string
	// Client sends the controller requests (nil: the agent's own, closed
	// with it).
	Client *transport.Client
	// Dial and Prepare configure the agent's own client: the dialer of
	// the broker's tls.client.* settings and the signer of its inner
	// credentials (nil: plain TCP, unsigned).
	Dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	Prepare func(req *remoting.Command)
	// MasterHAAddr maps the master's remoting address to its HA address
	// (nil: the same host, port + 1, RocketMQ's default haListenPort).
	MasterHAAddr func(masterAddr string) string
	// OnRoleChange runs after every role change applied (re-registration
	// with the name servers, under the controller id or 0 as master).
	OnRoleChange func(s Status)
	// Epochs is the broker's epoch table, oldest first, which a master
	// restarted in its own epoch compares with its sync-state set's (nil:
	// one entry, the replica's MasterEpoch).
	Epochs func() []Epoch
	// CallTimeout bounds one controller request (default 3 s, RocketMQ's).
	CallTimeout time.Duration
	Clock       clock.Clock
	Logger      *slog.Logger
}

// Status is a snapshot of the agent's view of its broker set.
type Status struct {
	BrokerID          int64 // controller id (0: not registered yet)
	Role              Role
	MasterID          int64
	MasterAddr        string
	MasterEpoch       int32
	SyncStateSet      []int64
	SyncStateSetEpoch int32
	Fenced            bool
	Leader            string // controller leader's address ("" unknown)
}

// Agent is the broker's controller client (RocketMQ's ReplicasManager).
type Agent struct {
	d     Deps
	clk   clock.Clock
	log   *slog.Logger
	ctl   *controllers
	files IdentityFiles
	own   bool // the client is the agent's

	addr string // this broker's remoting address, set by Bootstrap

	// roleMu serializes role changes (they call the Replica, which may
	// truncate) and the decisions that read the role around them.
	roleMu sync.Mutex
	// fenceMu serializes the fencing decision with its application.
	fenceMu sync.Mutex

	mu           sync.Mutex
	id           int64
	role         Role
	masterID     int64
	masterAddr   string
	epoch        int32
	set          []int64
	setEpoch     int32
	masterSince  time.Time
	lastCaughtUp map[int64]time.Time
	renewed      time.Time
	epochCurrent bool
	fenced       bool // as last applied to the Replica
	// hold is the epoch a restarted master is checking its set's logs
	// in (resumeMaster): a view naming it master of that epoch or an
	// older one is not applied meanwhile (0: none).
	hold int32

	following atomic.Bool // a lease round's view is being followed

	stop chan struct{}
	kick chan struct{} // runs the next heartbeat round at once
	wg   sync.WaitGroup
}

// New returns an agent; nothing is sent until Bootstrap or Start.
func New(d Deps) (*Agent, error) {
	if d.Replica == nil {
		return nil, errors.New("controller mode needs a replication engine (Deps.Replica)")
	}
	if err := d.Config.Check(); err != nil {
		return nil, err
	}
	if d.BrokerName == "" || d.ClusterName == "" {
		return nil, errors.New("controller mode needs brokerClusterName and brokerName")
	}
	if d.FS == nil {
		d.FS = vfs.OS()
	}
	if d.CallTimeout <= 0 {
		d.CallTimeout = 3 * time.Second
	}
	if d.MasterHAAddr == nil {
		d.MasterHAAddr = DefaultHAAddr
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	a := &Agent{d: d, clk: clock.Or(d.Clock), log: d.Logger.With("component", "failover"),
		files: IdentityFiles{FS: d.FS, Root: d.StoreRoot}, lastCaughtUp: map[int64]time.Time{}, fenced: true,
		stop: make(chan struct{}), kick: make(chan struct{}, 1)}
	cl := d.Client
	if cl == nil {
		cl, a.own = transport.NewClient(transport.ClientConfig{Logger: d.Logger, Dial: d.Dial, Prepare: d.Prepare}), true
	}
	a.ctl = &controllers{cl: cl, addrs: d.Config.Controllers(), timeout: d.CallTimeout}
	return a, nil
}

// DefaultHAAddr is host:port+1 of a remoting address (RocketMQ's default
// haListenPort), addr as is when it has no numeric port.
func DefaultHAAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return addr
	}
	return net.JoinHostPort(host, strconv.Itoa(p+1))
}

// Status returns the agent's current view.
func (a *Agent) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return Status{BrokerID: a.id, Role: a.role, MasterID: a.masterID, MasterAddr: a.masterAddr, MasterEpoch: a.epoch,
		SyncStateSet: slices.Clone(a.set), SyncStateSetEpoch: a.setEpoch, Fenced: a.fenced, Leader: a.ctl.leaderAddr()}
}

func (a *Agent) local() Local {
	a.mu.Lock()
	defer a.mu.Unlock()
	return Local{ID: a.id, Role: a.role, MasterEpoch: a.epoch, SyncStateSetEpoch: a.setEpoch}
}

// Start fences the replica, then registers in the background (retrying
// every 5 s, as RocketMQ does, until it succeeds or Close) and runs the
// periodic tasks: heartbeats and the lease, the broker set's metadata,
// the controller leader, the sync-state set. addr is the broker's
// remoting address, the one controllers push role changes to.
func (a *Agent) Start(addr string) {
	a.d.Replica.SetFenced(true)
	ctx, cancel := context.WithCancel(context.Background())
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		<-a.stop
		cancel()
	}()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for {
			err := a.Bootstrap(ctx, addr)
			if err == nil {
				break
			}
			a.log.Warn("registration with the controller failed; retrying in 5 s", "err", err)
			if !a.sleep(5 * time.Second) {
				return
			}
		}
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			for {
				select {
				case <-a.stop:
					return
				case <-a.kick:
				case <-a.clk.After(ms(a.d.Config.BrokerHeartbeatInterval)):
				}
				a.HeartbeatOnce(ctx)
			}
		}()
		a.loop(ms(a.d.Config.SyncBrokerMetadataPeriod), func() { a.SyncBrokerMetadataOnce(ctx) })
		a.loop(ms(a.d.Config.SyncControllerMetadataPeriod), func() {
			if _, err := a.ctl.refreshLeader(ctx); err != nil {
				a.log.Warn("controller leader unknown", "err", err)
			}
		})
		a.loop(ms(a.d.Config.CheckSyncStateSetPeriod), func() { a.CheckSyncStateSetOnce(ctx) })
		a.loop(min(expandTick, ms(a.d.Config.CheckSyncStateSetPeriod)), func() { a.ExpandSyncStateSetOnce(ctx) })
		a.loop(a.fenceTick(), func() { a.CheckLease() })
	}()
}

// fenceTick is how often the lease is checked between rounds: a tenth of
// the lease, so the replica is fenced within a tenth of the lease of its
// end.
func (a *Agent) fenceTick() time.Duration { return max(a.d.Config.Lease()/10, time.Millisecond) }

func (a *Agent) sleep(d time.Duration) bool {
	select {
	case <-a.stop:
		return false
	case <-a.clk.After(d):
		return true
	}
}

// kickRound asks the heartbeat loop for a round now.
func (a *Agent) kickRound() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

func (a *Agent) loop(every time.Duration, fn func()) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for a.sleep(every) {
			fn()
		}
	}()
}

// Close stops the periodic tasks and fences the replica.
func (a *Agent) Close() {
	select {
	case <-a.stop:
		return
	default:
		close(a.stop)
	}
	a.wg.Wait()
	a.setFenced(true)
	if a.own {
		a.ctl.cl.Close()
	}
}

// Bootstrap is the start-up sequence: learn the controller leader,
// obtain or reuse the broker's controller id (GET_NEXT_BROKER_ID, the
// temp identity file, APPLY_BROKER_ID, brokerIdentity), register
// (REGISTER_BROKER_TO_CONTROLLER), heartbeat, and ask for an election
// when the broker set has no master.
func (a *Agent) Bootstrap(ctx context.Context, addr string) error {
	a.mu.Lock()
	a.addr = addr
	a.mu.Unlock()
	if _, err := a.ctl.refreshLeader(ctx); err != nil {
		return err
	}
	id, err := a.obtainID(ctx)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.id = id
	a.mu.Unlock()
	v, err := a.register(ctx)
	if err != nil {
		return err
	}
	a.log.Info("registered with the controller", "id", id, "leader", a.ctl.leaderAddr(),
		"master", v.MasterID, "epoch", v.MasterEpoch, "set", v.SyncStateSet)
	a.HeartbeatOnce(ctx)
	if v.HasMaster() && v.MasterID == id && hasOthers(v.SyncStateSet, id) {
		return a.resumeMaster(ctx, v)
	}
	if v.HasMaster() {
		a.apply(v, "registration")
		return nil
	}
	return a.Elect(ctx)
}

// obtainID returns the broker's controller id, from brokerIdentity or
// through the controller, keeping the files RocketMQ keeps.
func (a *Agent) obtainID(ctx context.Context) (int64, error) {
	for try := 0; ; try++ {
		id, have, err := a.files.Load(false)
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", IdentityFile, err)
		}
		temp, haveTemp, err := a.files.Load(true)
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", TempIdentityFile, err)
		}
		step, err := PlanRegistration(a.d.ClusterName, a.d.BrokerName, id, have, temp, haveTemp)
		if err != nil {
			return 0, err
		}
		switch step {
		case StepRegister:
			return id.BrokerID, nil
		case StepNextID:
			if try >= 3 {
				return 0, errors.New("no broker id could be applied for after 3 tries")
			}
			resp, err := a.ctl.callLeader(ctx, func() *remoting.Command {
				return remoting.NewRequest(remoting.ControllerGetNextBrokerID, map[string]string{
					"clusterName": a.d.ClusterName, "brokerName": a.d.BrokerName}, nil)
			})
			if err != nil {
				return 0, fmt.Errorf("GET_NEXT_BROKER_ID: %w", err)
			}
			next, err := headerInt64(resp, "nextBrokerId", 0)
			if err != nil || next <= 0 {
				return 0, fmt.Errorf("GET_NEXT_BROKER_ID: nextBrokerId=%q", resp.Ext("nextBrokerId"))
			}
			code := a.addr + ";" + strconv.FormatInt(a.clk.Now().UnixMilli(), 10)
			if err := a.files.Store(Identity{ClusterName: a.d.ClusterName, BrokerName: a.d.BrokerName, BrokerID: next, CheckCode: code}, true); err != nil {
				return 0, fmt.Errorf("write %s: %w", TempIdentityFile, err)
			}
		case StepApply:
			_, err := a.ctl.callLeader(ctx, func() *remoting.Command {
				return remoting.NewRequest(remoting.ControllerApplyBrokerID, map[string]string{
					"clusterName": a.d.ClusterName, "brokerName": a.d.BrokerName,
					"appliedBrokerId": strconv.FormatInt(temp.BrokerID, 10), "registerCheckCode": temp.CheckCode}, nil)
			})
			var ce *codeError
			if errors.As(err, &ce) {
				// The id went to another broker: start over, as RocketMQ.
				a.log.Warn("broker id not granted; asking for another", "id", temp.BrokerID, "code", ce.code, "remark", ce.remark)
				if err := a.files.Remove(true); err != nil {
					return 0, err
				}
				continue
			}
			if err != nil {
				return 0, fmt.Errorf("APPLY_BROKER_ID: %w", err)
			}
			if err := a.files.Store(Identity{ClusterName: a.d.ClusterName, BrokerName: a.d.BrokerName, BrokerID: temp.BrokerID}, false); err != nil {
				return 0, fmt.Errorf("write %s: %w", IdentityFile, err)
			}
			if err := a.files.Remove(true); err != nil {
				return 0, err
			}
			a.log.Info("broker id granted by the controller", "id", temp.BrokerID)
		}
	}
}

// register sends REGISTER_BROKER_TO_CONTROLLER and returns the broker
// set's view in the answer.
func (a *Agent) register(ctx context.Context) (View, error) {
	st := a.Status()
	resp, err := a.ctl.callLeader(ctx, func() *remoting.Command {
		return remoting.NewRequest(remoting.ControllerRegisterBroker, map[string]string{
			"clusterName": a.d.ClusterName, "brokerName": a.d.BrokerName,
			"brokerId": strconv.FormatInt(st.BrokerID, 10), "brokerAddress": a.addr,
			"invokeTime": strconv.FormatInt(a.clk.Now().UnixMilli(), 10)}, nil)
	})
	if err != nil {
		return View{}, fmt.Errorf("REGISTER_BROKER_TO_CONTROLLER: %w", err)
	}
	return viewOf(resp, false)
}

// Elect asks the controller leader for an election in this broker set
// (ELECT_MASTER triggered by the broker) and applies the answer; an
// answer that a master still exists is applied too.
func (a *Agent) Elect(ctx context.Context) error {
	return a.elect(ctx, a.Status().BrokerID, false)
}

// elect sends ELECT_MASTER for broker id and applies the answer. A
// designated election (designateElect=true) succeeds only when it makes
// that broker master.
func (a *Agent) elect(ctx context.Context, id int64, designate bool) error {
	resp, err := a.ctl.callLeader(ctx, func() *remoting.Command { return a.electRequest(id, designate) })
	if err != nil && (designate || !isCode(err, remoting.ControllerMasterStillExist)) {
		return fmt.Errorf("ELECT_MASTER: %w", err)
	}
	v, err := viewOf(resp, true)
	if err != nil {
		return fmt.Errorf("ELECT_MASTER answer: %w", err)
	}
	if !v.HasMaster() {
		return errors.New("ELECT_MASTER: the broker set still has no master")
	}
	if designate && v.MasterID != id {
		return fmt.Errorf("ELECT_MASTER: broker %d is master, not the designated %d", v.MasterID, id)
	}
	a.apply(v, "election")
	return nil
}
