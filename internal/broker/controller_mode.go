package broker

import (
	"fmt"

	"github.com/spoolmq/spool/internal/failover"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/remoting"
)

// checkControllerMode checks the controller-mode keys before anything is
// opened.
func checkControllerMode(cfg *Config) error {
	if !cfg.EnableControllerMode {
		return nil
	}
	if err := cfg.Controller.Check(); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return nil
}

// setupControllerMode builds the controller client over r; the broker
// registers its NOTIFY_BROKER_ROLE_CHANGED handler (registerProcessors),
// starts it once its address is known and closes it at shutdown.
func (b *Broker) setupControllerMode(r failover.Replica) error {
	cfg := b.config()
	deps := failover.Deps{
		Config:       cfg.Controller,
		ClusterName:  cfg.BrokerClusterName,
		BrokerName:   cfg.BrokerName,
		Replica:      roleReplica{Replica: r, b: b},
		FS:           vfs.Default,
		StoreRoot:    b.storeCfg.Load().StorePathRootDir,
		Clock:        b.clock,
		Logger:       b.logger,
		Dial:         b.dialer(),
		Prepare:      func(req *remoting.Command) { b.authsrv.Sign(req) },
		OnRoleChange: b.controllerRoleChanged,
		Epochs:       b.controllerEpochs,
	}
	if sw, ok := r.(*switchReplica); ok {
		// The HA client is given the master's remoting address and asks
		// the master for its HA address before every connection attempt
		// (EXCHANGE_BROKER_HA_INFO, ha_info.go).
		deps.MasterHAAddr = func(masterAddr string) string { return masterAddr }
		sw.base.ResolveMaster = b.resolveMasterHA
	}
	a, err := failover.New(deps)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	b.failover = a
	return nil
}

// controllerEpochs is the store's epoch table as the controller client
// reads it (nil before the store started).
func (b *Broker) controllerEpochs() []failover.Epoch {
	tab := b.epochTable()
	if tab == nil {
		return nil
	}
	var out []failover.Epoch
	for _, e := range tab.Entries() {
		out = append(out, failover.Epoch{Epoch: e.Epoch, StartOffset: e.StartOffset})
	}
	return out
}

// controllerRoleChanged logs a role the controller gave the broker,
// sets the broker's role from it (SYNC_MASTER or SLAVE, as RocketMQ's
// ReplicasManager does) and registers with the name servers under it, at
// a topic data version whose state version is the master epoch: a name
// server then ignores a registration of the same broker id at a lower
// epoch (a deposed master resumed after a stop registering as master
// after its successor). The master-only services followed the role
// already (roleReplica).
func (b *Broker) controllerRoleChanged(s failover.Status) {
	b.logger.Info("controller mode: role changed", "role", s.Role.String(), "brokerId", s.BrokerID,
		"master", s.MasterID, "masterAddr", s.MasterAddr, "epoch", s.MasterEpoch)
	switch s.Role {
	case failover.RoleMaster:
		b.setStoreRole(store.SyncMaster)
	case failover.RoleSlave:
		b.setStoreRole(store.Slave)
	}
	b.topics.NextStateVersion(int64(s.MasterEpoch))
	b.registrar.trigger()
}

// setStoreRole replaces the broker's view of brokerRole (the runtime
// figures, the data path's slave rules). The store's own refusal of puts
// is the replication engine's (RefusePuts).
func (b *Broker) setStoreRole(role string) {
	b.cfgMu.Lock()
	defer b.cfgMu.Unlock()
	cur := b.storeConfig()
	if cur.BrokerRole == role {
		return
	}
	next := *cur
	next.BrokerRole = role
	b.setConfig(b.config(), &next)
}

// roleReplica is the replication engine as the controller client drives
// it, with the services only a master runs around its role changes, as
// RocketMQ's BrokerController.changeSpecialServiceStatus: they stop
// before the engine follows another master (which may cut the CommitLog)
// and start once the engine has begun the new epoch, on every change.
type roleReplica struct {
	failover.Replica
	b *Broker
}

func (r roleReplica) ChangeToMaster(masterEpoch int32, syncStateSet []int64, syncStateSetEpoch int32) error {
	if err := r.Replica.ChangeToMaster(masterEpoch, syncStateSet, syncStateSetEpoch); err != nil {
		return err
	}
	r.b.startMasterServices()
	return nil
}

func (r roleReplica) ChangeToSlave(masterID int64, masterHAAddr string, masterEpoch int32) error {
	r.b.stopMasterServices()
	return r.Replica.ChangeToSlave(masterID, masterHAAddr, masterEpoch)
}

// startMasterServices starts the services that write to the log on their
// own, which a slave does not run: delayed delivery, transaction
// check-back and the timing wheel (timerWheelEnable). Each starts from
// its latest state: the schedule progress and the transaction index are
// recovered from the CommitLog, which holds what another master did
// meanwhile; the wheel from its files, cut with the log, or from the
// checkpoint copied from a master. Running services are left as they are.
func (b *Broker) startMasterServices() {
	b.roleMu.Lock()
	defer b.roleMu.Unlock()
	if b.rolesClosed {
		return
	}
	b.schedule.Start()
	b.txCheck.Start()
	if b.config().TimerWheelEnable && !b.wheelOn {
		if err := b.openWheel(); err != nil {
			b.logger.Error("controller mode: the timing wheel did not start; timer messages are refused", "err", err)
		}
	}
}

// stopMasterServices stops them (when the broker becomes slave); stopped
// services are left as they are.
func (b *Broker) stopMasterServices() {
	b.roleMu.Lock()
	defer b.roleMu.Unlock()
	b.schedule.Stop()
	b.txCheck.Stop()
	if err := b.closeWheel(); err != nil {
		b.logger.Error("controller mode: close the timing wheel", "err", err)
	}
}

// endMasterServices stops delayed delivery and transaction check-back for
// good (shutdown; the wheel is closed later, before the store).
func (b *Broker) endMasterServices() {
	b.roleMu.Lock()
	defer b.roleMu.Unlock()
	b.rolesClosed = true
	b.schedule.Stop()
	b.txCheck.Stop()
}

// hasRole reports whether the broker has a role to register with the
// name servers: always, unless controller mode has not given it one yet
// (RocketMQ's broker skips registration while isolated, too).
func (b *Broker) hasRole() bool {
	return b.failover == nil || b.failover.Status().Role != failover.RoleNone
}

// registeredBrokerID is the brokerId the broker registers with the name
// servers: in controller mode 0 as master and its controller id as slave,
// as RocketMQ's ReplicasManager sets it; otherwise brokerId.
func (b *Broker) registeredBrokerID() int64 {
	if b.failover == nil {
		return b.config().BrokerID
	}
	st := b.failover.Status()
	if st.Role == failover.RoleMaster {
		return 0
	}
	return st.BrokerID
}

// startControllerMode starts the controller client (nil: controller mode
// off) and the slave's copy of its master's timer checkpoint.
func (b *Broker) startControllerMode() {
	if b.failover != nil {
		b.failover.Start(b.addr)
		b.background(b.runTimerCheckpointCopy)
	}
}

// runTimerCheckpointCopy copies, every syncCheckInterval while the broker
// is a slave, its master's timer checkpoint (GET_TIMER_CHECK_POINT, as
// RocketMQ's SlaveSynchronize does in controller mode too): a broker
// elected master with no wheel file of its own starts its wheel from it.
func (b *Broker) runTimerCheckpointCopy() {
	b.every(syncCheckInterval, func() {
		st := b.failover.Status()
		if st.Role != failover.RoleSlave || st.MasterAddr == "" || !b.config().TimerWheelEnable {
			return
		}
		if err := b.syncTimerCheckpoint(st.MasterAddr); err != nil {
			b.logger.Warn("controller mode: copy the master's timer checkpoint", "master", st.MasterAddr, "err", err)
		}
	})
}

// closeControllerMode stops it.
func (b *Broker) closeControllerMode() {
	if b.failover != nil {
		b.failover.Close()
	}
}
