package broker

import (
	"fmt"

	"github.com/spoolmq/spool/internal/failover"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/remoting"
)

// errNoAutoSwitch refuses enableControllerMode=true while the broker has
// no replication engine for it to drive.
var errNoAutoSwitch = fmt.Errorf("%w: enableControllerMode=true needs the AutoSwitch replication engine "+
	"(RocketMQ's AutoSwitch HA: the epoch file, truncation on a role change, the confirm offset), "+
	"which this build does not have; set enableControllerMode=false and replicate with brokerRole", ErrConfig)

// checkControllerMode checks the controller-mode keys before anything is
// opened; r is the replication engine controller mode would drive (nil:
// none, refused).
func checkControllerMode(cfg *Config, r failover.Replica) error {
	if !cfg.EnableControllerMode {
		return nil
	}
	if err := cfg.Controller.Check(); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if r == nil {
		return errNoAutoSwitch
	}
	return nil
}

// setupControllerMode builds the controller client over r; the broker
// registers its NOTIFY_BROKER_ROLE_CHANGED handler (registerProcessors),
// starts it once its address is known and closes it at shutdown.
func (b *Broker) setupControllerMode(r failover.Replica) error {
	cfg := b.config()
	a, err := failover.New(failover.Deps{
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
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	b.failover = a
	return nil
}

// controllerRoleChanged logs a role the controller gave the broker and
// registers with the name servers under it.
func (b *Broker) controllerRoleChanged(s failover.Status) {
	b.logger.Info("controller mode: role changed", "role", s.Role.String(), "brokerId", s.BrokerID,
		"master", s.MasterID, "masterAddr", s.MasterAddr, "epoch", s.MasterEpoch)
	b.registrar.trigger()
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
