package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// startNamesrvs starts n name servers in process with the controller as
// one raft group of n peers.
func startNamesrvs(t *testing.T, n int) []*namesrvRun {
	t.Helper()
	dir := t.TempDir()
	raft := loopbackAddrs(t, n)
	var peers []string
	for i, a := range raft {
		peers = append(peers, fmt.Sprintf("n%d-%s", i, a))
	}
	runs := make([]*namesrvRun, n)
	for i := range runs {
		props := map[string]string{
			"enableControllerInNamesrv":   "true",
			"controllerDLegerGroup":       "group1",
			"controllerDLegerPeers":       strings.Join(peers, ";"),
			"controllerDLegerSelfId":      fmt.Sprintf("n%d", i),
			"controllerStorePath":         filepath.Join(dir, fmt.Sprintf("controller%d", i)),
			"kvConfigPath":                filepath.Join(dir, fmt.Sprintf("namesrv%d", i), "kvConfig.json"),
			"scanNotActiveBrokerInterval": "1000",
		}
		r, err := startNamesrv(props, "127.0.0.1:0", nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("name server %d: %v", i, err)
		}
		runs[i] = r
	}
	t.Cleanup(func() {
		for _, r := range runs {
			r.shutdown()
		}
	})
	return runs
}

type nsCaller struct {
	t  *testing.T
	cl *transport.Client
}

func (c nsCaller) call(addr string, code int32, ext map[string]string) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.cl.Invoke(ctx, addr, remoting.NewRequest(code, ext, nil))
}

func (c nsCaller) must(addr string, code int32, ext map[string]string, want int32) *remoting.Command {
	c.t.Helper()
	resp, err := c.call(addr, code, ext)
	if err != nil {
		c.t.Fatalf("%s to %s: %v", remoting.RequestName(code), addr, err)
	}
	if resp.Code != want {
		c.t.Fatalf("%s to %s: code %d %q, want %d", remoting.RequestName(code), addr, resp.Code, resp.Remark, want)
	}
	return resp
}

// leaderOf waits until a name server names a controller leader that
// says it leads, and returns its address.
func (c nsCaller) leaderOf(runs []*namesrvRun) string {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range runs {
			md, err := c.call(r.addr.String(), remoting.ControllerGetMetadataInfo, nil)
			if err != nil || md.Code != remoting.Success || md.Ext("controllerLeaderAddress") == "" {
				continue
			}
			leader := md.Ext("controllerLeaderAddress")
			lmd, err := c.call(leader, remoting.ControllerGetMetadataInfo, nil)
			if err == nil && lmd.Ext("isLeader") == "true" && lmd.Ext("group") == "group1" {
				return leader
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatal("no controller leader among the name servers")
	return ""
}

// TestNamesrvControllerSinglePeer: a name server with
// enableControllerInNamesrv=true answers the controller's requests on its
// own port (metadata, broker id, registration, the controller-mode
// heartbeat, election) and still answers as a name server, including
// the name server's own BROKER_HEARTBEAT.
func TestNamesrvControllerSinglePeer(t *testing.T) {
	runs := startNamesrvs(t, 1)
	cl := transport.NewClient(transport.ClientConfig{})
	defer cl.Close()
	c := nsCaller{t, cl}
	addr := runs[0].addr.String()
	if leader := c.leaderOf(runs); leader != addr {
		t.Fatalf("leader %s, want the name server's port %s", leader, addr)
	}
	md := c.must(addr, remoting.ControllerGetMetadataInfo, nil, remoting.Success)
	if md.Ext("controllerLeaderId") != "n0" || !strings.HasPrefix(md.Ext("peers"), "n0-") {
		t.Fatalf("metadata %v", md.ExtFields)
	}

	bk := "127.0.0.1:30911"
	next := c.must(addr, remoting.ControllerGetNextBrokerID, map[string]string{"clusterName": "c", "brokerName": "broker-a"}, remoting.Success)
	if next.Ext("nextBrokerId") != "1" {
		t.Fatalf("nextBrokerId %q", next.Ext("nextBrokerId"))
	}
	c.must(addr, remoting.ControllerApplyBrokerID, map[string]string{"clusterName": "c", "brokerName": "broker-a",
		"appliedBrokerId": "1", "registerCheckCode": bk + ";1"}, remoting.Success)
	c.must(addr, remoting.ControllerRegisterBroker, map[string]string{"clusterName": "c", "brokerName": "broker-a",
		"brokerId": "1", "brokerAddress": bk}, remoting.Success)
	c.must(addr, remoting.BrokerHeartbeat, map[string]string{"clusterName": "c", "brokerName": "broker-a",
		"brokerAddr": bk, "brokerId": "1", "epoch": "0", "maxOffset": "0", "confirmOffset": "0",
		"heartbeatTimeoutMills": "600000"}, remoting.Success)
	// The election needs the controller to have the heartbeat.
	el := c.must(addr, remoting.ControllerElectMaster, map[string]string{"clusterName": "c", "brokerName": "broker-a", "brokerId": "1"}, remoting.Success)
	if el.Ext("masterBrokerId") != "1" || el.Ext("masterEpoch") != "1" || el.Ext("masterAddress") != bk {
		t.Fatalf("elect: %v", el.ExtFields)
	}
	ri := c.must(addr, remoting.ControllerGetReplicaInfo, map[string]string{"brokerName": "broker-a"}, remoting.Success)
	if ri.Ext("masterBrokerId") != "1" {
		t.Fatalf("replica info %v", ri.ExtFields)
	}
	cfg := c.must(addr, remoting.GetControllerConfig, nil, remoting.Success)
	if !strings.Contains(string(cfg.Body), "controllerDLegerSelfId") || !strings.Contains(string(cfg.Body), "listenPort=9876\n") {
		t.Fatalf("controller config %s", cfg.Body)
	}

	// The name server is still one: its heartbeat (no brokerId) and its
	// own requests.
	c.must(addr, remoting.BrokerHeartbeat, map[string]string{"clusterName": "c", "brokerName": "broker-a", "brokerAddr": bk}, remoting.Success)
	c.must(addr, remoting.GetBrokerClusterInfo, nil, remoting.Success)
	c.must(addr, remoting.GetNamesrvConfig, nil, remoting.Success)
}

// TestNamesrvWithoutControllerRefusesControllerCodes: without the key the
// name server answers the controller's codes REQUEST_CODE_NOT_SUPPORTED.
func TestNamesrvWithoutControllerRefusesControllerCodes(t *testing.T) {
	dir := t.TempDir()
	r, err := startNamesrv(map[string]string{"kvConfigPath": filepath.Join(dir, "kvConfig.json")}, "127.0.0.1:0", nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer r.shutdown()
	cl := transport.NewClient(transport.ClientConfig{})
	defer cl.Close()
	c := nsCaller{t, cl}
	c.must(r.addr.String(), remoting.ControllerGetMetadataInfo, nil, remoting.RequestCodeNotSupported)
	c.must(r.addr.String(), remoting.BrokerHeartbeat, map[string]string{"clusterName": "c", "brokerName": "b", "brokerAddr": "127.0.0.1:1", "brokerId": "1"}, remoting.Success)
}

// TestNamesrvControllerThreePeers: three name servers with the
// controller as one raft group elect one leader, every one names it, and
// the others answer CONTROLLER_NOT_LEADER naming it.
func TestNamesrvControllerThreePeers(t *testing.T) {
	if testing.Short() {
		t.Skip("three raft nodes")
	}
	runs := startNamesrvs(t, 3)
	cl := transport.NewClient(transport.ClientConfig{})
	defer cl.Close()
	c := nsCaller{t, cl}
	leader := c.leaderOf(runs)
	found := false
	for _, r := range runs {
		a := r.addr.String()
		if a == leader {
			found = true
			c.must(a, remoting.ControllerGetNextBrokerID, map[string]string{"clusterName": "c", "brokerName": "broker-a"}, remoting.Success)
			continue
		}
		// A follower may learn the leader's address a moment after it
		// is elected.
		deadline := time.Now().Add(10 * time.Second)
		for {
			md := c.must(a, remoting.ControllerGetMetadataInfo, nil, remoting.Success)
			if md.Ext("controllerLeaderAddress") == leader {
				if md.Ext("isLeader") != "false" {
					t.Fatalf("follower %s says it leads: %v", a, md.ExtFields)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("follower %s names leader %q, want %s", a, md.Ext("controllerLeaderAddress"), leader)
			}
			time.Sleep(50 * time.Millisecond)
		}
		nl := c.must(a, remoting.ControllerGetReplicaInfo, map[string]string{"brokerName": "broker-a"}, remoting.ControllerNotLeader)
		if !strings.Contains(nl.Remark, leader) {
			t.Fatalf("NOT_LEADER from %s does not name %s: %q", a, leader, nl.Remark)
		}
	}
	if !found {
		t.Fatalf("leader %s is none of the name servers' ports", leader)
	}
}
