package controller

import (
	"os"
	"path/filepath"
)

// Config is a standalone controller's configuration under RocketMQ's
// ControllerConfig and NettyServerConfig key names (see
// internal/config.Bind); durations are milliseconds, as in RocketMQ.
type Config struct {
	// Group is controllerDLegerGroup, the controller group's name.
	Group string `prop:"controllerDLegerGroup"`
	// Peers is controllerDLegerPeers: "n0-host:port;n1-host:port;...", the
	// raft addresses of the controllers.
	Peers string `prop:"controllerDLegerPeers"`
	// SelfID is controllerDLegerSelfId, this controller's id in Peers.
	SelfID string `prop:"controllerDLegerSelfId"`
	// StorePath is controllerStorePath: the raft log (raft.db) and the
	// snapshots.
	StorePath string `prop:"controllerStorePath"`
	// Type is controllerType; Spool replicates with raft wherever
	// RocketMQ names DLedger.
	Type string `prop:"controllerType"`
	// ScanNotActiveBrokerInterval is how often (ms) the leader looks for
	// dead masters.
	ScanNotActiveBrokerInterval int64 `prop:"scanNotActiveBrokerInterval"`
	// ElectMasterMaxRetryCount bounds the scan's tries per broker set.
	ElectMasterMaxRetryCount int `prop:"electMasterMaxRetryCount"`
	// EnableElectUncleanMaster lets an election pick a replica outside the
	// sync-state set when no member is alive (data may be lost).
	EnableElectUncleanMaster bool `prop:"enableElectUncleanMaster"`
	// ListenPort is the remoting port brokers (controllerAddr) and admin
	// tools call.
	ListenPort int `prop:"listenPort"`
}

// DefaultConfig returns RocketMQ 5.3.3's defaults for a standalone
// controller: port 19876, ~/DLedgerController, a 5 s scan, 3 tries, no
// unclean election.
func DefaultConfig() Config {
	store := "DLedgerController"
	if home, err := os.UserHomeDir(); err == nil {
		store = filepath.Join(home, "DLedgerController")
	}
	return Config{
		Type:                        "DLedger",
		StorePath:                   store,
		ScanNotActiveBrokerInterval: 5000,
		ElectMasterMaxRetryCount:    3,
		ListenPort:                  19876,
	}
}
