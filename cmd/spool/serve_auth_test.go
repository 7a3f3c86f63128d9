package main

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/auth"
	"github.com/spoolmq/spool/internal/broker"
	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/testkit/brokerkit"
	"github.com/spoolmq/spool/internal/tlsconf"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

const innerCreds = `{"accessKey":"inner","secretKey":"inner-secret"}`

// startAuthNamesrv starts a name server with authentication and
// authorization on, a root super user and the brokers' inner
// credentials; whitelist is authenticationWhitelist and
// authorizationWhitelist.
func startAuthNamesrv(t *testing.T, whitelist string) string {
	t.Helper()
	nc := namesrv.DefaultConfig()
	nc.KVConfigPath = filepath.Join(t.TempDir(), "kvConfig.json")
	na := namesrvAuth{AuthenticationEnabled: true, AuthorizationEnabled: true, AuthenticationWhitelist: whitelist, AuthorizationWhitelist: whitelist,
		InitAuthenticationUser:               `{"username":"root","password":"root-secret"}`,
		InnerClientAuthenticationCredentials: innerCreds}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts, err := namesrvAccess(na, nc, "127.0.0.1:0", nil, limitKeys{}.serverConfig(true), logger)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := namesrv.New(nc, logger, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown() })
	addr, err := ns.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return addr.String()
}

func signed(req *remoting.Command, ak, sk string) *remoting.Command {
	if req.ExtFields == nil {
		req.ExtFields = map[string]string{}
	}
	auth.SignRequest(req.ExtFields, req.Body, req.Version, auth.Credentials{AccessKey: ak, SecretKey: sk})
	return req
}

func invokeCode(t *testing.T, cl *transport.Client, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// With authentication on at the name server, an unsigned or wrongly
// signed request is refused NO_PERMISSION unless its code is in
// authenticationWhitelist; broker registration is allowed to the inner
// credentials only (not even to a super user); a broker configured with
// innerClientAuthenticationCredentials signs its registration and its
// route appears.
func TestNamesrvAuthentication(t *testing.T) {
	addr := startAuthNamesrv(t, "105") // GET_ROUTEINFO_BY_TOPIC
	cl := transport.NewClient(transport.ClientConfig{})
	defer cl.Close()
	clusterInfo := func() *remoting.Command { return remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil) }
	if r := invokeCode(t, cl, addr, clusterInfo()); r.Code != remoting.NoPermission {
		t.Fatalf("unsigned cluster info: code %d %q", r.Code, r.Remark)
	}
	if r := invokeCode(t, cl, addr, signed(clusterInfo(), "root", "wrong")); r.Code != remoting.NoPermission {
		t.Fatalf("wrong secret: code %d %q", r.Code, r.Remark)
	}
	if r := invokeCode(t, cl, addr, signed(clusterInfo(), "root", "root-secret")); r.Code != remoting.Success {
		t.Fatalf("root: code %d %q", r.Code, r.Remark)
	}
	route := remoting.NewRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": "NoSuchTopic"}, nil)
	if r := invokeCode(t, cl, addr, route); r.Code != remoting.TopicNotExist {
		t.Fatalf("whitelisted route query: code %d %q, want TOPIC_NOT_EXIST", r.Code, r.Remark)
	}
	reg := func() *remoting.Command {
		return remoting.NewRequest(remoting.RegisterBroker, map[string]string{"brokerName": "fake", "brokerAddr": "127.0.0.1:1",
			"clusterName": "DefaultCluster", "brokerId": "0", "compressed": "false"}, []byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{}},"filterServerList":[]}`))
	}
	for _, r := range []*remoting.Command{reg(), signed(reg(), "root", "root-secret")} {
		if resp := invokeCode(t, cl, addr, r); resp.Code != remoting.NoPermission {
			t.Fatalf("REGISTER_BROKER as %q: code %d %q", r.Ext("AccessKey"), resp.Code, resp.Remark)
		}
	}

	b := brokerkit.Start(t, brokerkit.Config{Broker: func(c *broker.Config) {
		c.NamesrvAddr = addr
		c.InnerClientAuthenticationCredentials = innerCreds
	}})
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := invokeCode(t, cl, addr, signed(clusterInfo(), "root", "root-secret"))
		if r.Code == remoting.Success && strings.Contains(string(r.Body), b.Addr()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the signed registration of %s never showed: %s", b.Addr(), r.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Contains(string(invokeCode(t, cl, addr, signed(clusterInfo(), "root", "root-secret")).Body), "fake") {
		t.Fatal("a refused registration was recorded")
	}
}

// A name server with access control on refuses to listen in plain TCP on
// a non-loopback address unless authAllowPlaintext is set.
func TestNamesrvAuthPlaintextRefused(t *testing.T) {
	if err := plaintextRefusal("0.0.0.0:9876", nil, false); err == nil || !strings.Contains(err.Error(), "authAllowPlaintext") {
		t.Fatalf("plain on every interface: %v", err)
	}
	for _, ok := range []error{plaintextRefusal("127.0.0.1:9876", nil, false), plaintextRefusal("0.0.0.0:9876", nil, true),
		plaintextRefusal("0.0.0.0:9876", &tlsconf.Config{Mode: tlsconf.Permissive}, false)} {
		if ok != nil {
			t.Fatal(ok)
		}
	}
}
