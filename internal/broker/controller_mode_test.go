package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/spoolmq/spool/internal/config"
	"github.com/spoolmq/spool/internal/controller"
	"github.com/spoolmq/spool/internal/controller/consensus"
	"github.com/spoolmq/spool/internal/failover"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// enableControllerMode=true binds its keys, builds the AutoSwitch engine
// over the broker's store and refuses sends until the controller gives a
// role; without controllers it refuses to start before the store opens.
func TestControllerModeBuildsAutoSwitch(t *testing.T) {
	cfg := DefaultConfig()
	rep, err := config.Bind(map[string]string{
		"enableControllerMode": "true", "controllerAddr": "127.0.0.1:19876;127.0.0.1:19877",
		"controllerHeartBeatTimeoutMills": "6000", "brokerElectionPriority": "3", "haMaxTimeSlaveNotCatchup": "20000",
		"allAckInSyncStateSet": "true", "minInSyncReplicas": "2",
	}, &cfg)
	if err != nil {
		t.Fatalf("controller-mode keys refused: %v", err)
	}
	if len(rep.Unbuilt) != 0 || !cfg.EnableControllerMode || cfg.Controller.ControllerHeartBeatTimeoutMills != 6000 ||
		cfg.Controller.BrokerElectionPriority != 3 || cfg.Controller.HaMaxTimeSlaveNotCatchup != 20000 ||
		len(cfg.Controller.Controllers()) != 2 || !cfg.HA.AllAckInSyncStateSet || cfg.HA.MinInSyncReplicas != 2 {
		t.Fatalf("bound %+v %+v, unbuilt %v", cfg.Controller, cfg.HA, rep.Unbuilt)
	}

	dir := t.TempDir()
	c := testConfig()
	c.EnableControllerMode, c.Controller.ControllerAddr = true, "127.0.0.1:1"
	b, err := New(c, Options{StoreConfig: testkit.StoreConfig(dir, testkit.Medium), Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := b.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer b.Shutdown(context.Background())
	if b.sw == nil || b.failover == nil {
		t.Fatal("controller mode built no AutoSwitch or no controller client")
	}
	if s, remark := b.sw.admitPut(); s != store.ServiceNotAvailable || remark != remarkNoRole {
		t.Fatalf("a send before any role: %v %q", s, remark)
	}
	if e, off, conf := b.sw.MasterEpoch(), b.sw.MaxOffset(), b.sw.ConfirmOffset(); e != -1 || off != 0 || conf != 0 || b.sw.Replicas() != nil {
		t.Fatalf("figures before any role: epoch %d max %d confirm %d", e, off, conf)
	}

	dir = t.TempDir()
	c.Controller.ControllerAddr = ""
	_, err = New(c, Options{StoreConfig: testkit.StoreConfig(dir, testkit.Medium), Logger: testLogger(t)})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "controllerAddr") {
		t.Fatalf("New: %v, want an ErrConfig naming controllerAddr", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "commitlog")); err == nil {
		t.Fatal("the store was opened before the refusal")
	}
}

// recReplica records the role changes a broker's controller client asks
// for.
type recReplica struct {
	mu     sync.Mutex
	epoch  int32
	events chan string
}

func (r *recReplica) ChangeToMaster(epoch int32, set []int64, setEpoch int32) error {
	r.mu.Lock()
	r.epoch = epoch
	r.mu.Unlock()
	r.events <- fmt.Sprintf("master epoch=%d set=%v", epoch, set)
	return nil
}

func (r *recReplica) ChangeToSlave(master int64, haAddr string, epoch int32) error {
	r.mu.Lock()
	r.epoch = epoch
	r.mu.Unlock()
	r.events <- fmt.Sprintf("slave of %d at %s epoch=%d", master, haAddr, epoch)
	return nil
}

func (r *recReplica) SetSyncStateSet([]int64, int32) {}
func (r *recReplica) SetFenced(f bool)               { r.events <- fmt.Sprintf("fenced=%v", f) }
func (r *recReplica) MasterEpoch() int32             { r.mu.Lock(); defer r.mu.Unlock(); return r.epoch }
func (r *recReplica) MaxOffset() int64               { return 0 }
func (r *recReplica) ConfirmOffset() int64           { return 0 }
func (r *recReplica) Replicas() []failover.ReplicaState {
	return nil
}

func (r *recReplica) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case got := <-r.events:
			if got == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %q", want)
		}
	}
}

// startTestController starts a single-node controller on a loopback port.
func startTestController(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	raddr, tr := raft.NewInmemTransport("")
	rc := raft.DefaultConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = 300*time.Millisecond, 300*time.Millisecond
	rc.LeaderLeaseTimeout, rc.CommitTimeout = 150*time.Millisecond, 10*time.Millisecond
	node, err := consensus.Open(consensus.Config{ID: "n0", Peers: []consensus.Peer{{ID: "n0", Addr: string(raddr)}},
		Transport: tr, Raft: rc, LogOutput: io.Discard, OnLeader: controller.LeaderHook(addr)})
	if err != nil {
		t.Fatal(err)
	}
	ctl := controller.New(node, controller.Options{Group: "g"})
	srv := transport.NewServer(transport.ServerConfig{})
	ctl.Register(srv, nil)
	if _, err := srv.Serve(ln); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		node.Close()
	})
	deadline := time.Now().Add(20 * time.Second)
	for !node.Serving() {
		if time.Now().After(deadline) {
			t.Fatal("the controller did not lead")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return addr
}

// A broker in controller mode registers with the controller, is made
// master, keeps its id in brokerIdentity and follows a
// NOTIFY_BROKER_ROLE_CHANGED sent to its port.
func TestControllerModeWiring(t *testing.T) {
	ctlAddr := startTestController(t)
	rep := &recReplica{events: make(chan string, 100)}
	dir := t.TempDir()
	e := startBrokerOpts(t, dir, Options{replica: rep}, func(c *Config, _ *store.Config) {
		c.EnableControllerMode = true
		c.Controller.ControllerAddr = ctlAddr
	})
	rep.waitFor(t, "master epoch=1 set=[1]")
	rep.waitFor(t, "fenced=false")
	// The master registers with the name servers as brokerId 0; nothing
	// was registered before it had a role.
	waitRegistered(t, e.ns, "0")
	e.ns.mu.Lock()
	for _, req := range e.ns.reqs {
		if req.Code == remoting.RegisterBroker {
			if req.Ext("brokerId") != "0" {
				t.Errorf("first registration as brokerId %s", req.Ext("brokerId"))
			}
			break
		}
	}
	e.ns.mu.Unlock()
	b, err := os.ReadFile(filepath.Join(dir, failover.IdentityFile))
	if err != nil || string(b) != "DefaultCluster#broker-a#1" {
		t.Fatalf("%s = %q (%v)", failover.IdentityFile, b, err)
	}
	resp := e.invoke(remoting.NewRequest(remoting.NotifyBrokerRoleChanged, map[string]string{
		"masterAddress": "127.0.0.1:30911", "masterBrokerId": "2", "masterEpoch": "2", "syncStateSetEpoch": "3",
	}, []byte(`{"syncStateSet":[2],"syncStateSetEpoch":3}`)))
	if resp.Code != remoting.Success {
		t.Fatalf("NOTIFY_BROKER_ROLE_CHANGED answered %d %s", resp.Code, resp.Remark)
	}
	rep.waitFor(t, "slave of 2 at 127.0.0.1:30912 epoch=2")
	// ... and registers with the name servers as slave, under its
	// controller id.
	waitRegistered(t, e.ns, "1")
}

// waitRegistered waits for a REGISTER_BROKER with brokerId id and fails on
// one with another id.
func waitRegistered(t *testing.T, ns *recordingNamesrv, id string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case req := <-ns.got:
			if req.Code != remoting.RegisterBroker {
				continue
			}
			if got := req.Ext("brokerId"); got == id {
				return
			} else if !slices.Contains([]string{"0", "1"}, got) {
				t.Fatalf("registered with brokerId %s", got)
			}
		case <-deadline:
			t.Fatalf("no registration with brokerId %s", id)
		}
	}
}
