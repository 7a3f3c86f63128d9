package authserve

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/auth"
	"github.com/spoolmq/spool/remoting"
)

func sendAs(topic, ak, sk string) *remoting.Command {
	req := remoting.NewRequest(remoting.SendMessage, map[string]string{"producerGroup": "pg", "topic": topic}, []byte("x"))
	if ak != "" {
		auth.SignRequest(req.ExtFields, req.Body, req.Version, auth.Credentials{AccessKey: ak, SecretKey: sk})
	}
	return req
}

const aclV1 = `
accounts:
  - accessKey: producer1
    secretKey: producer-secret
    defaultTopicPerm: DENY
    topicPerms:
      - topicA=PUB
`

// ACL 1.0: plain_acl.yml decides, and an edit of the file applies after
// ReloadV1 without a restart; a file that does not parse keeps the last
// good one.
func TestPlainACLReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plain_acl.yml")
	if err := os.WriteFile(path, []byte(aclV1), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Config{AclEnable: true, PlainACLPath: path, StoreDir: filepath.Join(dir, "store")})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Active() || s.Hook() == nil {
		t.Fatal("aclEnable does not install the hook")
	}
	allowed := func(topic, ak, sk string) bool { return s.decide("10.0.0.1", sendAs(topic, ak, sk)) == nil }
	if !allowed("topicA", "producer1", "producer-secret") {
		t.Fatal("producer1 refused on topicA")
	}
	if allowed("topicB", "producer1", "producer-secret") || allowed("topicA", "producer1", "wrong-secret") || allowed("topicA", "", "") {
		t.Fatal("a request plain_acl.yml refuses was allowed")
	}
	edited := aclV1 + "      - topicB=PUB\n"
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, future, future); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.ReloadV1(); !ok || err != nil {
		t.Fatalf("reload: %v %v", ok, err)
	}
	if !allowed("topicB", "producer1", "producer-secret") {
		t.Fatal("the edit of plain_acl.yml did not apply")
	}
	if err := os.WriteFile(path, []byte("accounts: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReloadV1(); err == nil {
		t.Fatal("a broken plain_acl.yml loaded")
	}
	if !allowed("topicB", "producer1", "producer-secret") {
		t.Fatal("a broken plain_acl.yml replaced the last good one")
	}
	if total, _ := s.Refused(); total != 3 {
		t.Fatalf("refusals %d, want 3", total)
	}
}

// Nothing on: no hook, so the transport pays one nil check.
func TestInactiveHasNoHook(t *testing.T) {
	s, err := Open(Config{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if s.Active() || s.Hook() != nil {
		t.Fatal("hook installed with every check off")
	}
}

// migrateAuthFromV1Enabled copies the accounts into the store at start.
func TestMigrateFromV1(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plain_acl.yml")
	if err := os.WriteFile(path, []byte(aclV1), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Config{AuthenticationEnabled: true, AuthorizationEnabled: true, MigrateFromV1: true,
		PlainACLPath: path, StoreDir: filepath.Join(dir, "store")})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Store().User("producer1"); !ok {
		t.Fatal("producer1 not migrated")
	}
	if s.decide("10.0.0.1", sendAs("topicA", "producer1", "producer-secret")) != nil {
		t.Fatal("the migrated user may not send to topicA")
	}
	if s.decide("10.0.0.1", sendAs("topicB", "producer1", "producer-secret")) == nil {
		t.Fatal("the migrated user may send to topicB")
	}
}
