package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/tlsconf"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// A controller with tls.server.mode=permissive and authentication and
// authorization on answers a plain and a TLS client on its remoting port
// alike: an unsigned request is refused NO_PERMISSION, the super user's
// signed one is served, and a broker-to-controller code is refused to
// the super user and let through for the inner credentials.
func TestControllerPermissiveTLSAndAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a controller process")
	}
	dir := t.TempDir()
	addrs := loopbackAddrs(t, 2)
	raft, rpc := addrs[0], addrs[1]
	_, port, _ := net.SplitHostPort(rpc)
	conf := filepath.Join(dir, "controller.conf")
	text := fmt.Sprintf("controllerDLegerGroup=group1\ncontrollerDLegerPeers=n0-%s\ncontrollerDLegerSelfId=n0\n"+
		"controllerStorePath=%s\nlistenPort=%s\ntls.server.mode=permissive\n"+
		"authenticationEnabled=true\nauthorizationEnabled=true\n"+
		`initAuthenticationUser={"username":"root","password":"root-secret"}`+"\n"+
		"innerClientAuthenticationCredentials=%s\n", raft, filepath.Join(dir, "store"), port, innerCreds)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := &syncBuf{}
	cmd := exec.Command(os.Args[0], "controller", "-c", conf, "--listen", rpc)
	cmd.Env = append(os.Environ(), "SPOOL_TEST_RUN_MAIN=1")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("controller output:\n%s", out.String())
		}
	})
	tlsDial := (&tlsconf.Dialer{TLS: &tls.Config{InsecureSkipVerify: true}}).DialContext
	var handshakes int
	countingDial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := tlsDial(ctx, network, addr)
		if err == nil {
			handshakes++
		}
		return c, err
	}
	for _, c := range []struct {
		name string
		dial func(ctx context.Context, network, addr string) (net.Conn, error)
	}{{"plain", nil}, {"tls", countingDial}} {
		cl := transport.NewClient(transport.ClientConfig{Dial: c.dial})
		call := func(req *remoting.Command) *remoting.Command {
			t.Helper()
			deadline := time.Now().Add(20 * time.Second)
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				resp, err := cl.Invoke(ctx, rpc, req)
				cancel()
				if err == nil {
					return resp
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: %s: %v", c.name, remoting.RequestName(req.Code), err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		cfg := func() *remoting.Command { return remoting.NewRequest(remoting.GetControllerConfig, nil, nil) }
		if r := call(cfg()); r.Code != remoting.NoPermission {
			t.Fatalf("%s: unsigned GET_CONTROLLER_CONFIG: code %d %q", c.name, r.Code, r.Remark)
		}
		if r := call(signed(cfg(), "root", "root-secret")); r.Code != remoting.Success {
			t.Fatalf("%s: root GET_CONTROLLER_CONFIG: code %d %q", c.name, r.Code, r.Remark)
		}
		reg := func() *remoting.Command {
			return remoting.NewRequest(remoting.ControllerRegisterBroker, map[string]string{"clusterName": "c", "brokerName": "b",
				"brokerAddress": "127.0.0.1:1", "brokerId": "0"}, nil)
		}
		if r := call(signed(reg(), "root", "root-secret")); r.Code != remoting.NoPermission {
			t.Fatalf("%s: CONTROLLER_REGISTER_BROKER as root: code %d %q", c.name, r.Code, r.Remark)
		}
		if r := call(signed(reg(), "inner", "inner-secret")); r.Code == remoting.NoPermission {
			t.Fatalf("%s: CONTROLLER_REGISTER_BROKER as the inner user: %q", c.name, r.Remark)
		}
		cl.Close()
	}
	if handshakes == 0 {
		t.Fatal("the TLS client never completed a handshake")
	}
}
