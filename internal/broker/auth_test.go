package broker

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/spoolmq/spool/internal/auth"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/tlsconf"
	"github.com/spoolmq/spool/remoting"
)

func signAs(req *remoting.Command, user, secret string) *remoting.Command {
	if req.ExtFields == nil {
		req.ExtFields = map[string]string{}
	}
	auth.SignRequest(req.ExtFields, req.Body, req.Version, auth.Credentials{AccessKey: user, SecretKey: secret})
	return req
}

func startAuthBroker(t *testing.T) *testEnv {
	return startBroker(t, func(c *Config, _ *store.Config) {
		c.AuthenticationEnabled = true
		c.AuthorizationEnabled = true
		c.InitAuthenticationUser = `{"username":"root","password":"root-secret"}`
		c.InnerClientAuthenticationCredentials = `{"accessKey":"inner","secretKey":"inner-secret"}`
	})
}

func topicReq(topic string) *remoting.Command {
	return goRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "defaultTopic": "defaultTopic", "readQueueNums": "1", "writeQueueNums": "1",
		"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
	}, nil)
}

func (e *testEnv) mustCode(req *remoting.Command, want int32) *remoting.Command {
	e.t.Helper()
	resp := e.invoke(req)
	if resp.Code != want {
		e.t.Fatalf("%s: code %d remark %q, want code %d", remoting.RequestName(req.Code), resp.Code, resp.Remark, want)
	}
	return resp
}

func (e *testEnv) maxOffset(topic string) int64 {
	e.t.Helper()
	resp := e.mustCode(signAs(goRequest(remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": "0"}, nil),
		"root", "root-secret"), remoting.Success)
	return extInt(e.t, resp, "offset")
}

// With authentication and authorization on, the initial super user may
// do everything; a missing signature, a wrong secret and an unknown user
// are refused NO_PERMISSION with no side effect; a user allowed only Pub
// on Topic:A sends to A, not to B, cannot pull or create topics; an ACL
// change applies to the next request.
func TestAuthGate(t *testing.T) {
	e := startAuthBroker(t)
	root := func(req *remoting.Command) *remoting.Command { return signAs(req, "root", "root-secret") }
	e.mustCode(root(topicReq("A")), remoting.Success)
	e.mustCode(root(topicReq("B")), remoting.Success)
	e.mustCode(root(sendV1("A", 0, nil, []byte("x"))), remoting.Success)
	e.waitDispatched("A", 0, 1)

	e.mustCode(sendV1("A", 0, nil, []byte("unsigned")), remoting.NoPermission)
	e.mustCode(signAs(sendV1("A", 0, nil, []byte("wrong")), "root", "not-the-secret"), remoting.NoPermission)
	e.mustCode(signAs(sendV1("A", 0, nil, []byte("who")), "nobody", "whatever"), remoting.NoPermission)
	e.mustCode(topicReq("C"), remoting.NoPermission)
	if n := e.maxOffset("A"); n != 1 {
		t.Fatalf("topic A holds %d messages after refused sends, want 1", n)
	}

	body, _ := json.Marshal(auth.UserInfo{Username: "pub", Password: "pub-secret", UserType: "Normal"})
	e.mustCode(root(goRequest(remoting.AuthCreateUser, map[string]string{"username": "pub"}, body)), remoting.Success)
	acl := func(code int32, res, actions string) {
		body, _ := json.Marshal(auth.AclInfo{Subject: "User:pub", Policies: []auth.PolicyInfo{{PolicyType: "Custom",
			Entries: []auth.PolicyEntryInfo{{Resource: res, Actions: strings.Split(actions, ","), Decision: "Allow"}}}}})
		e.mustCode(root(goRequest(code, map[string]string{"subject": "User:pub"}, body)), remoting.Success)
	}
	acl(remoting.AuthCreateACL, "Topic:A", "Pub")
	pub := func(req *remoting.Command) *remoting.Command { return signAs(req, "pub", "pub-secret") }
	e.mustCode(pub(sendV1("A", 0, nil, []byte("y"))), remoting.Success)
	resp := e.mustCode(pub(sendV1("B", 0, nil, []byte("y"))), remoting.NoPermission)
	if !strings.Contains(resp.Remark, "User:pub") {
		t.Fatalf("remark %q does not name the user", resp.Remark)
	}
	e.mustCode(pub(pullReq("g", "A", 0, 0, 0, 0, "*")), remoting.NoPermission)
	e.mustCode(pub(topicReq("D")), remoting.NoPermission)
	e.waitDispatched("A", 0, 2)
	if n := e.maxOffset("B"); n != 0 {
		t.Fatalf("topic B holds %d messages, want 0", n)
	}

	acl(remoting.AuthUpdateACL, "Topic:B", "Pub")
	e.mustCode(pub(sendV1("B", 0, nil, []byte("z"))), remoting.Success)

	list := e.mustCode(root(goRequest(remoting.AuthListUser, map[string]string{}, nil)), remoting.Success)
	var users []auth.UserInfo
	if err := json.Unmarshal(list.Body, &users); err != nil || len(users) != 3 {
		t.Fatalf("users %s: %v", list.Body, err)
	}
	if strings.Contains(string(list.Body), "secret") {
		t.Fatalf("AUTH_LIST_USER shows passwords: %s", list.Body)
	}
	got := e.mustCode(root(goRequest(remoting.AuthGetACL, map[string]string{"subject": "User:pub"}, nil)), remoting.Success)
	if !strings.Contains(string(got.Body), "Topic:B") {
		t.Fatalf("ACL %s", got.Body)
	}
	cfg := e.mustCode(root(goRequest(remoting.GetBrokerConfig, nil, nil)), remoting.Success)
	if strings.Contains(string(cfg.Body), "root-secret") || strings.Contains(string(cfg.Body), "inner-secret") {
		t.Fatalf("GET_BROKER_CONFIG shows a secret:\n%s", cfg.Body)
	}
	info := e.mustCode(root(goRequest(remoting.GetBrokerRuntimeInfo, nil, nil)), remoting.Success)
	if !strings.Contains(string(info.Body), `"accessRefused":"7"`) || !strings.Contains(string(info.Body), `"accessRefusedAuthentication":"4"`) {
		t.Fatalf("runtime info does not count the 7 refusals (4 by authentication): %s", info.Body)
	}
}

// The broker signs its registrations with the inner credentials.
func TestAuthSignsRegistration(t *testing.T) {
	e := startAuthBroker(t)
	req := e.ns.lastRegistration()
	if req == nil {
		t.Fatal("no registration")
	}
	if req.Ext(auth.AccessKeyField) != "inner" {
		t.Fatalf("registration signed by %q", req.Ext(auth.AccessKeyField))
	}
	if err := auth.Verify(req.ExtFields, req.Body, req.Version, "inner-secret"); err != nil {
		t.Fatalf("registration signature: %v", err)
	}
}

// Access control over plain TCP on a non-loopback address is refused
// unless authAllowPlaintext accepts it; loopback and TLS pass.
func TestAuthNeedsTLSOffLoopback(t *testing.T) {
	b := &Broker{logger: testLogger(t)}
	cfg := testConfig()
	cfg.AuthenticationEnabled = true
	cfg.BindAddress = "0.0.0.0"
	if err := b.setupTLS(nil, &cfg); !errors.Is(err, ErrConfig) {
		t.Fatalf("plain on 0.0.0.0: %v, want ErrConfig", err)
	}
	tc, err := tlsconf.Parse(map[string]string{"tls.server.mode": "enforcing"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.setupTLS(&tc, &cfg); err != nil {
		t.Fatalf("enforcing on 0.0.0.0: %v", err)
	}
	b.tls = nil
	cfg.AuthAllowPlaintext = true
	if err := b.setupTLS(nil, &cfg); err != nil {
		t.Fatalf("authAllowPlaintext: %v", err)
	}
	cfg.AuthAllowPlaintext, cfg.BindAddress = false, "127.0.0.1"
	if err := b.setupTLS(nil, &cfg); err != nil {
		t.Fatalf("loopback: %v", err)
	}
}
