package broker

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/spoolmq/spool/internal/failover"
	"github.com/spoolmq/spool/internal/ha"
	"github.com/spoolmq/spool/internal/store"
)

// switchReplica is controller mode's replication engine as the
// controller client drives it: failover.Replica over ha.AutoSwitch. The
// engine is built at the first role change, when the controller has
// granted the broker its id (the AutoSwitch announces it to its master
// and counts it in its sync-state set); until then the figures come from
// the store and sends are refused.
type switchReplica struct {
	log  switchLog
	base ha.SwitchConfig
	id   func() int64 // the controller id, known once registered

	mu     sync.Mutex
	a      *ha.AutoSwitch
	ln     net.Listener
	haAddr string
	fenced bool
	closed bool
}

var _ failover.Replica = (*switchReplica)(nil)

// remarkNoRole refuses sends before the controller gave a role.
const remarkNoRole = "the broker has no role yet (controller mode: waiting for the controller)"

func newSwitchReplica(b *Broker, st *store.DefaultMessageStore, cfg *Config) *switchReplica {
	hc := cfg.HA
	r := &switchReplica{log: newSwitchLog(st), base: ha.SwitchConfig{
		Clock:                 b.clock,
		Logger:                b.logger,
		SendHeartbeatInterval: millis(hc.SendHeartbeatInterval),
		HousekeepingInterval:  millis(hc.HousekeepingInterval),
		TransferBatchSize:     hc.TransferBatchSize,
		SlaveTimeout:          millis(hc.SlaveTimeout),
		AllAckInSyncStateSet:  hc.AllAckInSyncStateSet,
		InSyncReplicas:        hc.InSyncReplicas,
		MinInSyncReplicas:     hc.MinInSyncReplicas,
	}}
	r.id = func() int64 {
		if b.failover == nil {
			return 0
		}
		return b.failover.Status().BrokerID
	}
	st.RefusePuts(remarkNoRole)
	return r
}

// engine returns the AutoSwitch, building it on first use.
func (r *switchReplica) engine() (*ha.AutoSwitch, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ha.ErrClosed
	}
	if r.a == nil {
		cfg := r.base
		cfg.Log = r.log
		cfg.BrokerID = r.id()
		r.a = ha.NewAutoSwitch(cfg)
		if r.fenced {
			r.a.SetFenced(true)
		}
		if r.ln != nil {
			go r.a.Serve(r.ln)
		}
	}
	return r.a, nil
}

// current is the AutoSwitch, nil before the first role change.
func (r *switchReplica) current() *ha.AutoSwitch {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.a
}

func (r *switchReplica) ChangeToMaster(masterEpoch int32, syncStateSet []int64, syncStateSetEpoch int32) error {
	a, err := r.engine()
	if err != nil {
		return err
	}
	return a.ChangeToMaster(masterEpoch, syncStateSet, syncStateSetEpoch)
}

func (r *switchReplica) ChangeToSlave(masterID int64, masterHAAddr string, masterEpoch int32) error {
	a, err := r.engine()
	if err != nil {
		return err
	}
	return a.ChangeToSlave(masterID, masterHAAddr, masterEpoch)
}

func (r *switchReplica) SetSyncStateSet(set []int64, syncStateSetEpoch int32) {
	if a := r.current(); a != nil {
		a.SetSyncStateSet(set, syncStateSetEpoch)
	}
}

func (r *switchReplica) SetFenced(fenced bool) {
	r.mu.Lock()
	r.fenced = fenced
	a := r.a
	r.mu.Unlock()
	if a != nil {
		a.SetFenced(fenced)
	}
}

func (r *switchReplica) MasterEpoch() int32 {
	if a := r.current(); a != nil {
		return a.MasterEpoch()
	}
	es := r.log.Epochs()
	if len(es) == 0 {
		return -1
	}
	return es[len(es)-1].Epoch
}

func (r *switchReplica) MaxOffset() int64 { return r.log.MaxOffset() }

func (r *switchReplica) ConfirmOffset() int64 {
	if a := r.current(); a != nil {
		return a.ConfirmOffset()
	}
	return 0
}

func (r *switchReplica) Replicas() []failover.ReplicaState {
	a := r.current()
	if a == nil {
		return nil
	}
	rs := a.Replicas()
	out := make([]failover.ReplicaState, len(rs))
	for i, s := range rs {
		out[i] = failover.ReplicaState{BrokerID: s.BrokerID, Addr: s.Addr, AckOffset: s.AckOffset, CaughtUpAt: s.CaughtUpAt}
	}
	return out
}

// admitPut is the data path's admission over the engine.
func (r *switchReplica) admitPut() (store.PutStatus, string) {
	a := r.current()
	if a == nil {
		return store.ServiceNotAvailable, remarkNoRole
	}
	return switchAdmit(a)()
}

// waitReplicated is the data path's replication wait over the engine.
func (r *switchReplica) waitReplicated(end int64, done func(store.PutStatus)) {
	a := r.current()
	if a == nil {
		done(store.ServiceNotAvailable)
		return
	}
	a.Notify()
	switchWait(a)(end, done)
}

func (r *switchReplica) notify() {
	if a := r.current(); a != nil {
		a.Notify()
	}
}

// listen opens the HA listener (haListenPort, default listenPort+1) and
// serves it once the engine exists.
func (r *switchReplica) listen(cfg *Config, bind, ip string, port int) error {
	hp := haListenPort(cfg, port)
	ln, err := net.Listen("tcp", net.JoinHostPort(bind, strconv.Itoa(hp)))
	if err != nil && cfg.ListenPort == 0 && cfg.HA.ListenPort <= 0 {
		ln, err = net.Listen("tcp", net.JoinHostPort(bind, "0"))
	}
	if err != nil {
		return fmt.Errorf("listen on HA port %s:%d (haListenPort, default listenPort+1): %w", bind, hp, err)
	}
	host := ip
	if ip2 := strings.TrimSpace(cfg.BrokerIP2); ip2 != "" {
		host = ip2
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		ln.Close()
		return ha.ErrClosed
	}
	r.ln = ln
	r.haAddr = net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	if r.a != nil {
		go r.a.Serve(ln)
	}
	return nil
}

func (r *switchReplica) advertisedHA() string {
	if r == nil {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.haAddr
}

// close stops the engine (or the listener it never served).
func (r *switchReplica) close() {
	r.mu.Lock()
	r.closed = true
	a, ln := r.a, r.ln
	r.mu.Unlock()
	if a != nil {
		a.Close()
	} else if ln != nil {
		ln.Close()
	}
}

// admitPut is the data path's controller-mode admission (nil otherwise).
func (b *Broker) admitPut() func() (store.PutStatus, string) {
	if b.sw == nil {
		return nil
	}
	return b.sw.admitPut
}
