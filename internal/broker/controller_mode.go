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
		Replica:      r,
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
// ReplicasManager does), makes the services that write to the log follow
// it and registers with the name servers under it.
func (b *Broker) controllerRoleChanged(s failover.Status) {
	b.logger.Info("controller mode: role changed", "role", s.Role.String(), "brokerId", s.BrokerID,
		"master", s.MasterID, "masterAddr", s.MasterAddr, "epoch", s.MasterEpoch)
	switch s.Role {
	case failover.RoleMaster:
		b.setStoreRole(store.SyncMaster)
		b.startMasterServices()
	case failover.RoleSlave:
		b.setStoreRole(store.Slave)
		b.stopMasterServices()
	}
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

// startMasterServices starts the services that write to the log (delayed
// delivery, transaction check-back), which a slave does not run, the
// first time the broker becomes master.
func (b *Broker) startMasterServices() {
	b.roleMu.Lock()
	defer b.roleMu.Unlock()
	switch {
	case b.masterServices == servicesRunning:
		return
	case b.masterServices == servicesStopped:
		b.logger.Warn("controller mode: master again; delayed delivery and transaction check-back restart only with the broker")
		return
	}
	b.schedule.Start()
	b.txCheck.Start()
	b.masterServices = servicesRunning
}

// stopMasterServices stops them when a master becomes slave.
func (b *Broker) stopMasterServices() {
	b.roleMu.Lock()
	defer b.roleMu.Unlock()
	if b.masterServices != servicesRunning {
		return
	}
	b.schedule.Stop()
	b.txCheck.Stop()
	b.masterServices = servicesStopped
}

// Life of the master-only services in controller mode.
const (
	servicesNever = iota
	servicesRunning
	servicesStopped
)

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
// off).
func (b *Broker) startControllerMode() {
	if b.failover != nil {
		b.failover.Start(b.addr)
	}
}

// closeControllerMode stops it.
func (b *Broker) closeControllerMode() {
	if b.failover != nil {
		b.failover.Close()
	}
}
