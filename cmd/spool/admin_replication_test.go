package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startSlave starts `spool broker` as brokerId 1 of f's broker name,
// registering with f's name server.
func startSlave(t *testing.T, f *adminFixture) string {
	t.Helper()
	addr := loopbackAddrs(t, 1)[0]
	out := &syncBuf{}
	cmd := exec.Command(os.Args[0], "broker", "-n", f.ns, "--store", filepath.Join(f.dir, "slave"), "--listen", addr,
		"--set", "brokerName="+f.brokerName, "--set", "brokerId=1", "--set", "brokerRole=SLAVE",
		"--set", "slaveReadEnable=true", "--set", "haSendHeartbeatInterval=200")
	cmd.Env = append(os.Environ(), "SPOOL_TEST_RUN_MAIN=1")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("slave output:\n%s", out.String())
		}
	})
	return addr
}

// waitAdmin runs an admin command until cond accepts what it printed.
func (f *adminFixture) waitAdmin(what string, cond func(string) bool, args ...string) string {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var out string
	for time.Now().Before(deadline) {
		var err error
		if out, err = f.run(args...); err == nil && cond(out) {
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.t.Fatalf("%s: admin %s never matched; last output:\n%s", what, strings.Join(args, " "), out)
	return ""
}

// clusterList lists a slave under its broker name with its id and
// address; brokerStatus shows the replication figures of the master and
// of the slave.
func TestAdminMasterAndSlave(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a standalone and a broker process")
	}
	f := startStandaloneWith(t, func() []string {
		ha := loopbackAddrs(t, 1)[0]
		return []string{"--set", "haListenPort=" + ha[strings.LastIndexByte(ha, ':')+1:]}
	})
	slave := startSlave(t, f)

	row := func(out string, id string) []string {
		for _, l := range strings.Split(out, "\n") {
			if fs := strings.Fields(l); len(fs) > 4 && fs[0] == "DefaultCluster" && fs[1] == f.brokerName && fs[2] == id {
				return fs
			}
		}
		return nil
	}
	out := f.waitAdmin("the slave listed", func(out string) bool { return row(out, "1") != nil }, "clusterList")
	if r := row(out, "1"); r[3] != slave {
		t.Errorf("clusterList slave row %q, want address %s:\n%s", r, slave, out)
	}
	if r := row(out, "0"); r == nil || r[3] != f.addr {
		t.Errorf("clusterList master row %q, want address %s:\n%s", r, f.addr, out)
	}
	var cl []struct {
		BrokerName string `json:"brokerName"`
		BrokerID   int64  `json:"brokerId"`
		Addr       string `json:"addr"`
	}
	f.json(&cl, "clusterList")
	found := false
	for _, r := range cl {
		found = found || (r.BrokerName == f.brokerName && r.BrokerID == 1 && r.Addr == slave)
	}
	if !found {
		t.Errorf("clusterList json lacks brokerId 1 at %s: %+v", slave, cl)
	}

	f.waitAdmin("the master's slave in sync", func(out string) bool {
		return strings.Contains(out, "haConnectionCount") && fieldIs(out, "inSyncSlaveNums", "1")
	}, "brokerStatus", "-b", f.addr)
	out = f.waitAdmin("the slave connected", func(out string) bool { return fieldIs(out, "haClientConnected", "true") },
		"brokerStatus", "-b", slave)
	for _, k := range []string{"brokerRole", "haMasterAddress", "masterAddr", "slaveMaxOffset", "slaveSyncVersionChecks"} {
		if !strings.Contains(out, k) {
			t.Errorf("slave brokerStatus lacks %s:\n%s", k, out)
		}
	}
	if !fieldIs(out, "brokerRole", "SLAVE") || !fieldIs(out, "masterAddr", f.addr) {
		t.Errorf("slave brokerStatus: want brokerRole SLAVE and masterAddr %s:\n%s", f.addr, out)
	}
	var st map[string]string
	f.json(&st, "brokerStatus", "-b", f.addr)
	if st["haConnectionCount"] != "1" || st["slaveFallBehindMuch"] == "" || !strings.Contains(st["haConnectionInfo"], `"inSync":true`) {
		t.Errorf("master brokerStatus json: haConnectionCount %q slaveFallBehindMuch %q haConnectionInfo %q",
			st["haConnectionCount"], st["slaveFallBehindMuch"], st["haConnectionInfo"])
	}
}

// fieldIs reports whether brokerStatus's "key : value" output has key
// with value.
func fieldIs(out, key, value string) bool {
	for _, l := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if ok && strings.TrimSpace(k) == key && strings.TrimSpace(v) == value {
			return true
		}
	}
	return false
}
