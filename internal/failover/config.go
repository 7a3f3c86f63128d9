package failover

import (
	"fmt"
	"strings"
	"time"
)

// Config holds the broker keys of controller mode, with RocketMQ 5.3's
// names and defaults (BrokerConfig; haMaxTimeSlaveNotCatchup is a
// MessageStoreConfig key). Periods and timeouts are milliseconds, as in
// RocketMQ.
type Config struct {
	// ControllerAddr lists the controllers' remoting addresses separated
	// by ';'.
	ControllerAddr string `prop:"controllerAddr"`
	// SyncBrokerMetadataPeriod is how often the broker reads its broker
	// set from the controller leader (GET_REPLICA_INFO).
	SyncBrokerMetadataPeriod int64 `prop:"syncBrokerMetadataPeriod"`
	// CheckSyncStateSetPeriod is how often a master decides on its
	// sync-state set and reports a change (ALTER_SYNC_STATE_SET).
	CheckSyncStateSetPeriod int64 `prop:"checkSyncStateSetPeriod"`
	// SyncControllerMetadataPeriod is how often the broker asks which
	// controller leads (GET_CONTROLLER_METADATA_INFO).
	SyncControllerMetadataPeriod int64 `prop:"syncControllerMetadataPeriod"`
	// ControllerHeartBeatTimeoutMills is the heartbeat timeout the broker
	// announces: a controller counts the broker dead this long after its
	// last heartbeat. The master's lease is half of it (see Lease).
	ControllerHeartBeatTimeoutMills int64 `prop:"controllerHeartBeatTimeoutMills"`
	// BrokerHeartbeatInterval is the period of BROKER_HEARTBEAT.
	BrokerHeartbeatInterval int64 `prop:"brokerHeartbeatInterval"`
	// BrokerElectionPriority ranks replicas of equal epoch and offset in
	// an election; lower wins.
	BrokerElectionPriority int32 `prop:"brokerElectionPriority"`
	// HaMaxTimeSlaveNotCatchup is how long a member of the sync-state set
	// may go without catching up to the master's end before the master
	// drops it from the set.
	HaMaxTimeSlaveNotCatchup int64 `prop:"haMaxTimeSlaveNotCatchup"`
}

// DefaultConfig returns RocketMQ's defaults.
func DefaultConfig() Config {
	return Config{
		SyncBrokerMetadataPeriod:        5000,
		CheckSyncStateSetPeriod:         5000,
		SyncControllerMetadataPeriod:    10000,
		ControllerHeartBeatTimeoutMills: 10000,
		BrokerHeartbeatInterval:         1000,
		BrokerElectionPriority:          1<<31 - 1,
		HaMaxTimeSlaveNotCatchup:        15000,
	}
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// Controllers returns the addresses of ControllerAddr, blanks and empty
// entries dropped.
func (c Config) Controllers() []string {
	var out []string
	for _, a := range strings.Split(c.ControllerAddr, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Lease is the master's controller lease: half the heartbeat timeout the
// broker announces (5 s with the defaults). See the package doc for the
// rule it keeps.
func (c Config) Lease() time.Duration { return ms(c.ControllerHeartBeatTimeoutMills) / 2 }

// Check refuses a configuration that controller mode cannot run with.
func (c Config) Check() error {
	if len(c.Controllers()) == 0 {
		return fmt.Errorf("enableControllerMode=true needs controllerAddr (the controllers' addresses, separated by ';')")
	}
	for _, k := range []struct {
		name string
		v    int64
	}{
		{"syncBrokerMetadataPeriod", c.SyncBrokerMetadataPeriod},
		{"checkSyncStateSetPeriod", c.CheckSyncStateSetPeriod},
		{"syncControllerMetadataPeriod", c.SyncControllerMetadataPeriod},
		{"controllerHeartBeatTimeoutMills", c.ControllerHeartBeatTimeoutMills},
		{"brokerHeartbeatInterval", c.BrokerHeartbeatInterval},
		{"haMaxTimeSlaveNotCatchup", c.HaMaxTimeSlaveNotCatchup},
	} {
		if k.v <= 0 {
			return fmt.Errorf("%s=%d: must be positive", k.name, k.v)
		}
	}
	if ms(c.BrokerHeartbeatInterval) >= c.Lease() {
		return fmt.Errorf("brokerHeartbeatInterval=%d must be shorter than the master's lease, half of controllerHeartBeatTimeoutMills=%d",
			c.BrokerHeartbeatInterval, c.ControllerHeartBeatTimeoutMills)
	}
	return nil
}
