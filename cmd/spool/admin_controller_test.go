package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/spoolmq/spool/internal/controller"
	"github.com/spoolmq/spool/internal/controller/consensus"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// startController runs a one-node controller in the test process on
// loopback (raft over TCP, remoting on its own port) and returns its
// remoting address once it leads.
func startController(t *testing.T) string {
	t.Helper()
	addrs := loopbackAddrs(t, 2)
	raftAddr, rpc := addrs[0], addrs[1]
	rc := raft.DefaultConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = 200*time.Millisecond, 200*time.Millisecond
	rc.LeaderLeaseTimeout, rc.CommitTimeout = 100*time.Millisecond, 10*time.Millisecond
	node, err := consensus.Open(consensus.Config{ID: "n0", Peers: []consensus.Peer{{ID: "n0", Addr: raftAddr}},
		Raft: rc, LogOutput: io.Discard, OnLeader: controller.LeaderHook(rpc)})
	if err != nil {
		t.Fatal(err)
	}
	ctl := controller.New(node, controller.Options{Group: "group1", Notify: func(string, *remoting.Command) {}})
	srv := transport.NewServer(transport.ServerConfig{})
	ctl.Register(srv, controller.ConfigBody(map[string]string{}))
	if _, err := srv.Listen(rpc); err != nil {
		node.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go ctl.Run(ctx)
	t.Cleanup(func() {
		cancel()
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		srv.Shutdown(sctx)
		node.Close()
	})
	cl := transport.NewClient(transport.ClientConfig{})
	defer cl.Close()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		md, err := call(cl, rpc, remoting.NewRequest(remoting.ControllerGetMetadataInfo, nil, nil))
		if err == nil && md.Ext("isLeader") == "true" && md.Ext("controllerLeaderAddress") == rpc {
			return rpc
		}
	}
	t.Fatal("the controller does not lead")
	return ""
}

// registerReplicas registers broker set name with ids 1..n through the
// controller's own requests, as brokers in controller mode do, with
// heartbeats that keep them alive.
func registerReplicas(t *testing.T, ctl, cluster, name string, n int) {
	t.Helper()
	// The client stands in for the brokers: its connection stays open for
	// the test, as a broker's heartbeat connection does (a replica whose
	// heartbeat connection closed is not electable).
	cl := transport.NewClient(transport.ClientConfig{})
	t.Cleanup(func() { cl.Close() })
	must := func(code int32, ext map[string]string, body []byte) *remoting.Command {
		t.Helper()
		resp, err := call(cl, ctl, remoting.NewRequest(code, ext, body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	addr := func(id int) string { return fmt.Sprintf("127.0.0.1:%d", 30910+id) }
	for id := 1; id <= n; id++ {
		must(remoting.ControllerGetNextBrokerID, map[string]string{"clusterName": cluster, "brokerName": name}, nil)
		must(remoting.ControllerApplyBrokerID, map[string]string{"clusterName": cluster, "brokerName": name,
			"appliedBrokerId": fmt.Sprint(id), "registerCheckCode": addr(id) + ";1"}, nil)
		must(remoting.ControllerRegisterBroker, map[string]string{"clusterName": cluster, "brokerName": name,
			"brokerId": fmt.Sprint(id), "brokerAddress": addr(id)}, nil)
		must(remoting.BrokerHeartbeat, map[string]string{"clusterName": cluster, "brokerName": name, "brokerAddr": addr(id),
			"brokerId": fmt.Sprint(id), "epoch": "0", "maxOffset": "0", "confirmOffset": "0", "heartbeatTimeoutMills": "600000"}, nil)
	}
	must(remoting.ControllerElectMaster, map[string]string{"clusterName": cluster, "brokerName": name, "brokerId": "1"}, nil)
	body, _ := json.Marshal(controller.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1})
	must(remoting.ControllerAlterSyncStateSet, map[string]string{"brokerName": name, "masterBrokerId": "1", "masterEpoch": "1"}, body)
}

// runAdmin runs `spool admin ARGS` with no name server.
func runAdmin(args ...string) (string, error) {
	cmd := adminCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func mustAdmin(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runAdmin(args...)
	if err != nil {
		t.Fatalf("admin %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func wantLines(t *testing.T, what, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(out, l) {
			t.Errorf("%s: no %q in:\n%s", what, l, out)
		}
	}
}

// TestControllerAdminCommands drives getControllerMetaData,
// getSyncStateSet, electMaster and cleanBrokerMetadata against a running
// controller whose broker set was registered through its requests.
func TestControllerAdminCommands(t *testing.T) {
	ctl := startController(t)
	registerReplicas(t, ctl, "c1", "broker-a", 3)

	out := mustAdmin(t, "getControllerMetaData", "-a", ctl)
	wantLines(t, "getControllerMetaData", out, "\n#ControllerGroup\tgroup1", "\n#ControllerLeaderId\tn0",
		"\n#ControllerLeaderAddress\t"+ctl, "\n#Peer:\tn0-")
	var md controllerMeta
	if err := json.Unmarshal([]byte(mustAdmin(t, "getControllerMetaData", "-a", ctl, "-o", "json")), &md); err != nil {
		t.Fatal(err)
	}
	if md.Group != "group1" || md.ControllerLeaderAddress != ctl || !md.IsLeader || len(md.Peers) != 1 {
		t.Fatalf("getControllerMetaData json: %+v", md)
	}

	out = mustAdmin(t, "getSyncStateSet", "-a", ctl, "-b", "broker-a")
	wantLines(t, "getSyncStateSet", out, "\n#brokerName\tbroker-a\n#MasterBrokerId\t1\n#MasterAddr\t127.0.0.1:30911\n#MasterEpoch\t1\n#SyncStateSetEpoch\t2\n#SyncStateSetNums\t2\n",
		"\nInSyncReplica:\tReplicaIdentity{brokerName='broker-a', brokerId=1, brokerAddress='127.0.0.1:30911', alive=true}\n",
		"\nInSyncReplica:\tReplicaIdentity{brokerName='broker-a', brokerId=2, brokerAddress='127.0.0.1:30912', alive=true}\n",
		"\nNotInSyncReplica:\tReplicaIdentity{brokerName='broker-a', brokerId=3, brokerAddress='127.0.0.1:30913', alive=true}\n")
	var info controller.BrokerReplicasInfo
	if err := json.Unmarshal([]byte(mustAdmin(t, "getSyncStateSet", "-a", ctl, "-b", "broker-a", "-o", "json")), &info); err != nil {
		t.Fatal(err)
	}
	if ri := info.ReplicasInfoTable["broker-a"]; ri.MasterBrokerID != 1 || len(ri.InSyncReplicas) != 2 || len(ri.NotInSyncReplicas) != 1 {
		t.Fatalf("getSyncStateSet json: %+v", info)
	}

	// Electing a replica outside the sync-state set is refused with the
	// controller's code; electing one inside moves the master.
	if out, err := runAdmin("electMaster", "-a", ctl, "-b", "3", "-bn", "broker-a", "-c", "c1"); err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf("code %d", remoting.ControllerElectMasterFailed)) {
		t.Fatalf("electMaster of a replica outside the sync-state set: %v\n%s", err, out)
	}
	out = mustAdmin(t, "electMaster", "-a", ctl, "-b", "2", "-bn", "broker-a", "-c", "c1")
	wantLines(t, "electMaster", out, "\n#ClusterName\tc1", "\n#BrokerName\tbroker-a", "\n#BrokerMasterAddr\t127.0.0.1:30912",
		"\n#MasterEpoch\t2", "\n#SyncStateSetEpoch\t3\n", "\t#Broker\t1\t127.0.0.1:30911\n", "\t#Broker\t3\t127.0.0.1:30913\n")
	wantLines(t, "getSyncStateSet after the election", mustAdmin(t, "getSyncStateSet", "-a", ctl, "-b", "broker-a"),
		"#MasterBrokerId\t2\n#MasterAddr\t127.0.0.1:30912\n#MasterEpoch\t2\n")
	if _, err := runAdmin("electMaster", "-a", ctl, "-b", "2", "-bn", "broker-a", "-c", "c1"); err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf("code %d", remoting.ControllerMasterStillExist)) {
		t.Fatalf("electMaster of the master: %v", err)
	}
	// The new master takes replica 1 back into its set; then elect it.
	cl := transport.NewClient(transport.ClientConfig{})
	defer cl.Close()
	body, _ := json.Marshal(controller.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 3})
	if _, err := call(cl, ctl, remoting.NewRequest(remoting.ControllerAlterSyncStateSet,
		map[string]string{"brokerName": "broker-a", "masterBrokerId": "2", "masterEpoch": "2"}, body)); err != nil {
		t.Fatal(err)
	}
	var el map[string]any
	if err := json.Unmarshal([]byte(mustAdmin(t, "electMaster", "-a", ctl, "-b", "1", "-bn", "broker-a", "-c", "c1", "-o", "json")), &el); err != nil {
		t.Fatal(err)
	}
	if el["masterBrokerId"] != "1" || el["masterEpoch"] != "3" || el["masterAddress"] != "127.0.0.1:30911" {
		t.Fatalf("electMaster json: %v", el)
	}

	// cleanBrokerMetadata: mqadmin's rule on -c, then the controller's
	// refusal of a living replica without -l, then -l.
	if _, err := runAdmin("cleanBrokerMetadata", "-a", ctl, "-bn", "broker-a", "-b", "3"); err == nil ||
		!strings.Contains(err.Error(), "clusterName option can not be empty") {
		t.Fatalf("cleanBrokerMetadata without -c: %v", err)
	}
	if _, err := runAdmin("cleanBrokerMetadata", "-a", ctl, "-bn", "broker-a", "-b", "x", "-c", "c1"); err == nil ||
		!strings.Contains(err.Error(), "brokerControllerIdsToClean") {
		t.Fatalf("cleanBrokerMetadata -b x: %v", err)
	}
	if _, err := runAdmin("cleanBrokerMetadata", "-a", ctl, "-bn", "broker-a", "-b", "3", "-c", "c1"); err == nil ||
		!strings.Contains(err.Error(), "CLEAN_BROKER_DATA") {
		t.Fatalf("cleanBrokerMetadata of a living replica without -l: %v", err)
	}
	out = mustAdmin(t, "cleanBrokerMetadata", "-a", ctl, "-bn", "broker-a", "-b", "3", "-c", "c1", "-l")
	wantLines(t, "cleanBrokerMetadata", out, "clear broker broker-a metadata from controller success! \n")
	out = mustAdmin(t, "getSyncStateSet", "-a", ctl, "-b", "broker-a")
	if strings.Contains(out, "brokerId=3") {
		t.Fatalf("replica 3 still listed after cleanBrokerMetadata:\n%s", out)
	}

	// The controller address is required, and the help names the options.
	if _, err := runAdmin("getControllerMetaData"); err == nil || !strings.Contains(err.Error(), "-a CONTROLLER_ADDR") {
		t.Fatalf("getControllerMetaData without -a: %v", err)
	}
	wantLines(t, "electMaster -h", mustAdmin(t, "electMaster", "-h"), "[-bn brokerName]", "[-a controllerAddress]")
}
