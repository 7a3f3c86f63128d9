package broker

import (
	"errors"
	"net"
	"testing"

	"github.com/spoolmq/spool/internal/ha"
	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/store"
)

func TestCheckRole(t *testing.T) {
	for _, c := range []struct {
		role string
		id   int64
		ok   bool
	}{
		{"", 0, true},
		{store.AsyncMaster, 0, true},
		{store.SyncMaster, 0, true},
		{store.Slave, 1, true},
		{store.Slave, 3, true},
		{store.AsyncMaster, 1, false},
		{store.SyncMaster, 2, false},
		{store.Slave, 0, false},
		{"MASTER", 0, false},
	} {
		err := checkRole(c.role, c.id)
		if (err == nil) != c.ok {
			t.Errorf("checkRole(%q, %d) = %v, want ok=%v", c.role, c.id, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrConfig) {
			t.Errorf("checkRole(%q, %d) = %v, want ErrConfig", c.role, c.id, err)
		}
	}
}

func TestAdmitRule(t *testing.T) {
	ci := &namesrv.ClusterInfo{BrokerAddrTable: map[string]namesrv.BrokerData{
		"broker-a": {BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911", 2: "10.0.0.3:10911", 3: "10.0.0.3:20911"}},
		"broker-b": {BrokerName: "broker-b", BrokerAddrs: map[int64]string{0: "10.0.0.4:10911", 1: "10.0.0.5:10911"}},
	}}
	peer := func(s string) net.Addr { a, _ := net.ResolveTCPAddr("tcp", s); return a }
	for _, c := range []struct {
		peer string
		name string
		ok   bool
	}{
		{"10.0.0.2:50000", "brokerId=1@10.0.0.2", true},
		{"10.0.0.3:50001", "10.0.0.3", true}, // two slaves on one host: one copy
		{"10.0.0.1:50002", "", false},        // the master's own host is not a slave
		{"10.0.0.5:50003", "", false},        // a slave of another broker name
		{"10.0.0.9:50004", "", false},        // unregistered
	} {
		name, ok := AdmitRule(ci, "broker-a", peer(c.peer))
		if name != c.name || ok != c.ok {
			t.Errorf("AdmitRule(%s) = %q, %v; want %q, %v", c.peer, name, ok, c.name, c.ok)
		}
	}
	if _, ok := AdmitRule(nil, "broker-a", peer("10.0.0.2:1")); ok {
		t.Error("no cluster table admitted a peer")
	}
}

func TestReplicaStatus(t *testing.T) {
	for o, want := range map[ha.Outcome]store.PutStatus{
		ha.ReplicaOK:         store.PutOK,
		ha.FlushSlaveTimeout: store.FlushSlaveTimeout,
		ha.SlaveNotAvailable: store.SlaveNotAvailable,
	} {
		if got := replicaStatus(o); got != want {
			t.Errorf("replicaStatus(%v) = %v, want %v", o, got, want)
		}
	}
}

func TestHAListenPort(t *testing.T) {
	cfg := DefaultConfig()
	if got := haListenPort(&cfg, cfg.ListenPort); got != 10912 {
		t.Errorf("default haListenPort = %d, want 10912", got)
	}
	if got := haListenPort(&cfg, 20911); got != 20912 {
		t.Errorf("haListenPort<=0 = %d, want listenPort+1", got)
	}
	cfg.HA.ListenPort = 30000
	if got := haListenPort(&cfg, 20911); got != 30000 {
		t.Errorf("haListenPort=30000 = %d", got)
	}
}
