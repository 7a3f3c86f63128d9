package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/spoolmq/spool/remoting"
)

// spoolAdmin runs `spool admin` against s signed as the initial user.
func (s *spool) spoolAdmin(t testing.TB, args ...string) string {
	t.Helper()
	all := append([]string{"admin", "-n", s.namesrvAddr, "--accessKey", "root", "--secretKey", "root-secret"}, args...)
	out, err := exec.Command(spoolBin, all...).CombinedOutput()
	if err != nil {
		t.Fatalf("spool %s: %v\n%s", strings.Join(all, " "), err, out)
	}
	return string(out)
}

func sendErr(t testing.TB, p interface {
	SendSync(ctx context.Context, mq ...*primitive.Message) (*primitive.SendResult, error)
}, topic, body string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
	if err == nil && r.Status != primitive.SendOK {
		t.Fatalf("send %s to %s: status %v", body, topic, r.Status)
	}
	return err
}

func wantNoPermission(t testing.TB, err error, what string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "CODE: 16") {
		t.Fatalf("%s: %v, want NO_PERMISSION (16)", what, err)
	}
}

// With authentication and authorization on, the official client signs
// with primitive.Credentials: the initial super user and a user allowed
// Pub on Topic:A send; a wrong secret, no credentials and an unknown user
// are refused with NO_PERMISSION and store nothing; the Pub-only user
// cannot send to B or consume; an ACL change made with spool admin takes
// effect without a restart.
func TestAuthGoClient(t *testing.T) {
	s := startSpool(t, "authenticationEnabled=true", "authorizationEnabled=true",
		`initAuthenticationUser={"username":"root","password":"root-secret"}`)
	for _, topic := range []string{"AuthA", "AuthB"} {
		s.spoolAdmin(t, "create-topic", topic, "--queues", "1")
		waitFor(t, 20*time.Second, "route of "+topic, func() bool { return len(s.routeQueues(t, topic)) == 1 })
	}
	s.spoolAdmin(t, "createUser", "-b", s.brokerAddr, "-u", "pub", "-p", "pub-secret", "-t", "Normal")
	s.spoolAdmin(t, "createAcl", "-b", s.brokerAddr, "-s", "User:pub", "-r", "Topic:AuthA", "-a", "Pub", "-d", "Allow")
	if out := s.spoolAdmin(t, "listUser", "-b", s.brokerAddr); !strings.Contains(out, `"pub"`) || strings.Contains(out, "secret") {
		t.Fatalf("listUser: %s", out)
	}

	cred := func(ak, sk string) producer.Option {
		return producer.WithCredentials(primitive.Credentials{AccessKey: ak, SecretKey: sk})
	}
	wantNoPermission(t, sendErr(t, s.newProducer(t, "pg-wrong", cred("root", "wrong-secret")), "AuthA", "refused-wrong"), "wrong secret")
	wantNoPermission(t, sendErr(t, s.newProducer(t, "pg-none"), "AuthA", "refused-none"), "no credentials")
	wantNoPermission(t, sendErr(t, s.newProducer(t, "pg-who", cred("nobody", "nobody-secret")), "AuthA", "refused-who"), "unknown user")

	pub := s.newProducer(t, "pg-pub", cred("pub", "pub-secret"))
	if err := sendErr(t, pub, "AuthA", "ok-pub"); err != nil {
		t.Fatalf("pub to A: %v", err)
	}
	wantNoPermission(t, sendErr(t, pub, "AuthB", "refused-pub-b"), "pub to B")
	if err := sendErr(t, s.newProducer(t, "pg-root", cred("root", "root-secret")), "AuthA", "ok-root"); err != nil {
		t.Fatalf("root to A: %v", err)
	}

	// The super user consumes exactly what was allowed; the Pub-only user
	// consumes nothing.
	rootSeen, pubSeen := newCollector(), newCollector()
	pc := s.newPushConsumer(t, "cg-pub", consumer.WithCredentials(primitive.Credentials{AccessKey: "pub", SecretKey: "pub-secret"}))
	if err := pc.Subscribe("AuthA", consumer.MessageSelector{}, pubSeen.handler); err != nil {
		t.Fatal(err)
	}
	_ = pc.Start() // its pulls are refused; Start may report it
	t.Cleanup(func() { _ = pc.Shutdown() })
	rc := s.newPushConsumer(t, "cg-root", consumer.WithCredentials(primitive.Credentials{AccessKey: "root", SecretKey: "root-secret"}))
	if err := rc.Subscribe("AuthA", consumer.MessageSelector{}, rootSeen.handler); err != nil {
		t.Fatal(err)
	}
	if err := rc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.Shutdown() })
	waitFor(t, 30*time.Second, "root consumes A", func() bool { return rootSeen.count("ok-pub") == 1 && rootSeen.count("ok-root") == 1 })
	rootSeen.mu.Lock()
	n := len(rootSeen.msgs)
	rootSeen.mu.Unlock()
	if n != 2 {
		t.Fatalf("root consumed %d messages from A, want the 2 allowed ones", n)
	}
	pubSeen.mu.Lock()
	if len(pubSeen.msgs) != 0 {
		t.Fatalf("the Pub-only user consumed %d messages", len(pubSeen.msgs))
	}
	pubSeen.mu.Unlock()

	s.spoolAdmin(t, "updateAcl", "-b", s.brokerAddr, "-s", "User:pub", "-r", "Topic:AuthB", "-a", "Pub", "-d", "Allow")
	if err := sendErr(t, pub, "AuthB", "ok-pub-b"); err != nil {
		t.Fatalf("pub to B after updateAcl: %v", err)
	}
}

// spoolAdminAs runs `spool admin` signed as ak.
func (s *spool) spoolAdminAs(t testing.TB, ak, sk string, args ...string) string {
	t.Helper()
	all := append([]string{"admin", "-n", s.namesrvAddr, "--accessKey", ak, "--secretKey", sk}, args...)
	out, err := exec.Command(spoolBin, all...).CombinedOutput()
	if err != nil {
		t.Fatalf("spool %s: %v\n%s", strings.Join(all, " "), err, out)
	}
	return string(out)
}

// A Deny on a topic beats an Allow on every topic; the Deny, added and
// removed with spool admin, takes effect on the next send without a
// restart. The standalone's name-server port refuses an unsigned broker
// registration.
func TestAuthDenyBeatsAllow(t *testing.T) {
	s := startSpool(t, "authenticationEnabled=true", "authorizationEnabled=true",
		`initAuthenticationUser={"username":"root","password":"root-secret"}`)
	for _, topic := range []string{"DenyA", "DenyB"} {
		s.spoolAdmin(t, "create-topic", topic, "--queues", "1")
		waitFor(t, 20*time.Second, "route of "+topic, func() bool { return len(s.routeQueues(t, topic)) == 1 })
	}
	s.spoolAdmin(t, "createUser", "-b", s.brokerAddr, "-u", "wide", "-p", "wide-secret", "-t", "Normal")
	s.spoolAdmin(t, "createAcl", "-b", s.brokerAddr, "-s", "User:wide", "-r", "Topic:*", "-a", "Pub", "-d", "Allow")
	p := s.newProducer(t, "pg-wide", producer.WithCredentials(primitive.Credentials{AccessKey: "wide", SecretKey: "wide-secret"}))
	for _, topic := range []string{"DenyA", "DenyB"} {
		if err := sendErr(t, p, topic, "before-deny"); err != nil {
			t.Fatalf("send to %s with Allow on Topic:*: %v", topic, err)
		}
	}
	s.spoolAdmin(t, "updateAcl", "-b", s.brokerAddr, "-s", "User:wide", "-r", "Topic:DenyB", "-a", "Pub", "-d", "Deny")
	wantNoPermission(t, sendErr(t, p, "DenyB", "after-deny"), "send to DenyB with Deny on it")
	if err := sendErr(t, p, "DenyA", "after-deny"); err != nil {
		t.Fatalf("send to DenyA after the Deny on DenyB: %v", err)
	}
	s.spoolAdmin(t, "deleteAcl", "-b", s.brokerAddr, "-s", "User:wide", "-r", "Topic:DenyB")
	if err := sendErr(t, p, "DenyB", "deny-removed"); err != nil {
		t.Fatalf("send to DenyB after the Deny was deleted: %v", err)
	}

	rc := dialRaw(t, s.namesrvAddr)
	reg := rawRequest(remoting.RegisterBroker, map[string]string{"brokerName": "fake", "brokerAddr": "127.0.0.1:1",
		"clusterName": "DefaultCluster", "brokerId": "0", "compressed": "false"},
		[]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{}},"filterServerList":[]}`))
	if resp := rc.call(t, reg); resp.Code != remoting.NoPermission {
		t.Fatalf("unsigned REGISTER_BROKER on the name-server port: code %d %q", resp.Code, resp.Remark)
	}
}

// With aclEnable and plain_acl.yml, an account allowed PUB on a topic
// sends to it; the file rewritten to DENY the topic refuses the next
// sends once it is reloaded, without a restart.
func TestAuthPlainACLReload(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(home, "conf", "plain_acl.yml")
	write := func(perm string) {
		text := "accounts:\n" +
			"  - accessKey: aclAdmin\n    secretKey: admin-secret\n    admin: true\n" +
			"  - accessKey: aclProducer\n    secretKey: producer-secret\n    admin: false\n" +
			"    defaultTopicPerm: DENY\n    defaultGroupPerm: SUB\n    topicPerms:\n      - AclT=" + perm + "\n"
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	write("PUB")
	s := startSpool(t, "aclEnable=true", "rocketmqHome="+home)
	s.spoolAdminAs(t, "aclAdmin", "admin-secret", "create-topic", "AclT", "--queues", "1")
	waitFor(t, 20*time.Second, "route of AclT", func() bool { return len(s.routeQueues(t, "AclT")) == 1 })
	p := s.newProducer(t, "pg-acl", producer.WithCredentials(primitive.Credentials{AccessKey: "aclProducer", SecretKey: "producer-secret"}))
	if err := sendErr(t, p, "AclT", "allowed"); err != nil {
		t.Fatalf("send with AclT=PUB: %v", err)
	}
	write("DENY")
	var err error
	waitFor(t, 30*time.Second, "plain_acl.yml's DENY applied", func() bool {
		err = sendErr(t, p, "AclT", "denied")
		return err != nil
	})
	wantNoPermission(t, err, "send with AclT=DENY")
	write("PUB")
	waitFor(t, 30*time.Second, "plain_acl.yml's PUB applied again", func() bool { return sendErr(t, p, "AclT", "allowed-again") == nil })
}
