package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/controller"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// TestMain lets the test binary run as the spool command: the controller
// test starts real `spool controller` processes from it.
func TestMain(m *testing.M) {
	if os.Getenv("SPOOL_TEST_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// syncBuf is a bytes.Buffer safe for a process's output and the test.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// loopbackAddrs returns n loopback addresses whose ports, and the ports a
// broker derives from its listen port (the VIP channel's listenPort-2 and
// the HA port listenPort+1), were free a moment ago. The ports are picked
// below the kernel's ephemeral range when there is room: ports from ":0"
// come from that range, which other tests' outgoing connections also take
// their local ports from, so one could take a port between this check and
// the process binding it.
func loopbackAddrs(t *testing.T, n int) []string {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				low = v
			}
		}
	}
	var out []string
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	const first = 15000
	for tries := 0; len(out) < n && tries < 1000 && low-first > 100; tries++ {
		p := first + rand.IntN(low-first-10) + 2
		var ls []net.Listener
		for q := p - 2; q <= p+1; q++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(q))
			if err != nil {
				break
			}
			ls = append(ls, l)
		}
		held = append(held, ls...)
		if len(ls) == 4 {
			out = append(out, "127.0.0.1:"+strconv.Itoa(p))
		}
	}
	for len(out) < n { // no room below the ephemeral range
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
		out = append(out, l.Addr().String())
	}
	return out
}

type ctlProc struct {
	cmd      *exec.Cmd
	out      *syncBuf
	remoting string
}

// TestControllerProcessesFailover starts three `spool controller`
// processes on loopback, finds the leader with GET_METADATA_INFO,
// registers a broker set over the wire, kills the leader with SIGKILL and
// finds a new leader answering with the same state.
func TestControllerProcessesFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three controller processes")
	}
	dir := t.TempDir()
	addrs := loopbackAddrs(t, 6)
	raftAddrs, rpc := addrs[:3], addrs[3:]
	var peers []string
	for i, a := range raftAddrs {
		peers = append(peers, fmt.Sprintf("n%d-%s", i, a))
	}
	procs := make([]*ctlProc, 3)
	for i := range procs {
		_, port, _ := net.SplitHostPort(rpc[i])
		conf := filepath.Join(dir, fmt.Sprintf("controller%d.conf", i))
		text := fmt.Sprintf("controllerDLegerGroup=group1\ncontrollerDLegerPeers=%s\ncontrollerDLegerSelfId=n%d\n"+
			"controllerStorePath=%s\nscanNotActiveBrokerInterval=1000\nenableElectUncleanMaster=false\nlistenPort=%s\n",
			strings.Join(peers, ";"), i, filepath.Join(dir, fmt.Sprintf("store%d", i)), port)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		p := &ctlProc{out: &syncBuf{}, remoting: rpc[i]}
		p.cmd = exec.Command(os.Args[0], "controller", "-c", conf, "--listen", rpc[i])
		p.cmd.Env = append(os.Environ(), "SPOOL_TEST_RUN_MAIN=1")
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[i] = p
	}
	t.Cleanup(func() {
		for _, p := range procs {
			if p != nil && p.cmd.ProcessState == nil {
				p.cmd.Process.Kill()
				p.cmd.Wait()
			}
		}
		if t.Failed() {
			for i, p := range procs {
				t.Logf("controller %d output:\n%s", i, p.out.String())
			}
		}
	})
	cl := transport.NewClient(transport.ClientConfig{})
	defer cl.Close()
	call := func(addr string, code int32, ext map[string]string, body []byte) (*remoting.Command, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return cl.Invoke(ctx, addr, remoting.NewRequest(code, ext, body))
	}
	mustCall := func(addr string, code int32, ext map[string]string, body []byte, wantCode int32) *remoting.Command {
		t.Helper()
		resp, err := call(addr, code, ext, body)
		if err != nil {
			t.Fatalf("%s to %s: %v", remoting.RequestName(code), addr, err)
		}
		if resp.Code != wantCode {
			t.Fatalf("%s to %s: code %d %q, want %d", remoting.RequestName(code), addr, resp.Code, resp.Remark, wantCode)
		}
		return resp
	}
	// findLeader asks every live controller until one names a leader whose
	// own answer says it leads.
	findLeader := func(not string) string {
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			for _, p := range procs {
				if p.cmd.ProcessState != nil || p.remoting == not {
					continue
				}
				md, err := call(p.remoting, remoting.ControllerGetMetadataInfo, nil, nil)
				if err != nil || md.Code != remoting.Success {
					continue
				}
				leader := md.Ext("controllerLeaderAddress")
				if leader == "" || leader == not {
					continue
				}
				lmd, err := call(leader, remoting.ControllerGetMetadataInfo, nil, nil)
				if err == nil && lmd.Ext("isLeader") == "true" && md.Ext("group") == "group1" {
					return leader
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatal("no controller leader")
		return ""
	}
	leader := findLeader("")

	// A fake broker set: ids, registration, heartbeats to every
	// controller, the first election, a sync-state set of two.
	bk := func(id int) string { return fmt.Sprintf("127.0.0.1:%d", 30910+id) }
	for id := 1; id <= 2; id++ {
		next := mustCall(leader, remoting.ControllerGetNextBrokerID, map[string]string{"clusterName": "c", "brokerName": "broker-a"}, nil, remoting.Success)
		if next.Ext("nextBrokerId") != fmt.Sprint(id) {
			t.Fatalf("nextBrokerId %q", next.Ext("nextBrokerId"))
		}
		mustCall(leader, remoting.ControllerApplyBrokerID, map[string]string{"clusterName": "c", "brokerName": "broker-a",
			"appliedBrokerId": fmt.Sprint(id), "registerCheckCode": bk(id) + ";1"}, nil, remoting.Success)
		mustCall(leader, remoting.ControllerRegisterBroker, map[string]string{"clusterName": "c", "brokerName": "broker-a",
			"brokerId": fmt.Sprint(id), "brokerAddress": bk(id)}, nil, remoting.Success)
		for _, p := range procs {
			mustCall(p.remoting, remoting.BrokerHeartbeat, map[string]string{"clusterName": "c", "brokerName": "broker-a",
				"brokerAddr": bk(id), "brokerId": fmt.Sprint(id), "epoch": "0", "maxOffset": "0", "confirmOffset": "0",
				"heartbeatTimeoutMills": "600000"}, nil, remoting.Success)
		}
	}
	el := mustCall(leader, remoting.ControllerElectMaster, map[string]string{"clusterName": "c", "brokerName": "broker-a", "brokerId": "1"}, nil, remoting.Success)
	if el.Ext("masterBrokerId") != "1" || el.Ext("masterEpoch") != "1" {
		t.Fatalf("elect: %v", el.ExtFields)
	}
	body, _ := json.Marshal(controller.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1})
	mustCall(leader, remoting.ControllerAlterSyncStateSet, map[string]string{"brokerName": "broker-a", "masterBrokerId": "1", "masterEpoch": "1"}, body, remoting.Success)
	for _, p := range procs {
		if p.remoting != leader {
			nl := mustCall(p.remoting, remoting.ControllerGetReplicaInfo, map[string]string{"brokerName": "broker-a"}, nil, remoting.ControllerNotLeader)
			if !strings.Contains(nl.Remark, leader) {
				t.Fatalf("NOT_LEADER does not name %s: %q", leader, nl.Remark)
			}
		}
	}

	// SIGKILL the leader.
	for _, p := range procs {
		if p.remoting == leader {
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			p.cmd.Wait()
		}
	}
	leader2 := findLeader(leader)
	ri := mustCall(leader2, remoting.ControllerGetReplicaInfo, map[string]string{"brokerName": "broker-a"}, nil, remoting.Success)
	if ri.Ext("masterBrokerId") != "1" || ri.Ext("masterEpoch") != "1" || ri.Ext("masterAddress") != bk(1) {
		t.Fatalf("new leader %s: %v", leader2, ri.ExtFields)
	}
	var set controller.SyncStateSet
	if err := json.Unmarshal(ri.Body, &set); err != nil || !slices.Equal(set.SyncStateSet, []int64{1, 2}) || set.SyncStateSetEpoch != 2 {
		t.Fatalf("new leader's set: %s %v", ri.Body, err)
	}
	next := mustCall(leader2, remoting.ControllerGetNextBrokerID, map[string]string{"clusterName": "c", "brokerName": "broker-a"}, nil, remoting.Success)
	if next.Ext("nextBrokerId") != "3" {
		t.Fatalf("nextBrokerId after failover %q", next.Ext("nextBrokerId"))
	}
}

// TestControllerRefusesNamesrvMode: the controller inside a name server
// is not built, and saying so is an error, not a silent standalone run.
func TestControllerRefusesNamesrvMode(t *testing.T) {
	cmd := controllerCmd()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs([]string{"--set", "enableControllerInNamesrv=true", "--set", "controllerDLegerPeers=n0-127.0.0.1:1", "--set", "controllerDLegerSelfId=n0"})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "enableControllerInNamesrv") || !strings.Contains(err.Error(), "spool controller") {
		t.Fatalf("err %v", err)
	}
}
