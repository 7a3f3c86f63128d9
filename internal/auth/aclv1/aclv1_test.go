package aclv1

import (
	"errors"
	"reflect"
	"testing"

	"github.com/spoolmq/spool/internal/auth"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/remoting"
)

// plainACL is RocketMQ's sample plain_acl.yml, with an address set and a
// range added.
const plainACL = `
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      # the group should convert to retry topic
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    # if it is admin, it could access all resources
    admin: true

  - accessKey: producer1
    secretKey: producer-secret
    whiteRemoteAddress: 172.16.0.{1,2,3}
    defaultTopicPerm: PUB
    defaultGroupPerm: DENY
`

func mustParse(t *testing.T, s string) *Config {
	t.Helper()
	c, err := Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParse(t *testing.T) {
	c := mustParse(t, plainACL)
	f := c.File
	if !reflect.DeepEqual(f.GlobalWhiteRemoteAddresses, []string{"10.10.103.*", "192.168.0.*"}) || len(f.Accounts) != 3 {
		t.Fatalf("%+v", f)
	}
	a := f.Accounts[0]
	if a.AccessKey != "RocketMQ" || a.SecretKey != "12345678" || a.Admin || a.DefaultTopicPerm != "DENY" || a.DefaultGroupPerm != "SUB" ||
		!reflect.DeepEqual(a.TopicPerms, []string{"topicA=DENY", "topicB=PUB|SUB", "topicC=SUB"}) ||
		!reflect.DeepEqual(a.GroupPerms, []string{"groupA=DENY", "groupB=PUB|SUB", "groupC=SUB"}) {
		t.Fatalf("account %+v", a)
	}
	if !f.Accounts[1].Admin || f.Accounts[1].WhiteRemoteAddress != "192.168.1.*" {
		t.Fatalf("admin account %+v", f.Accounts[1])
	}
	acc := c.accounts["RocketMQ"]
	if acc.perms["%RETRY%groupB"] != Pub|Sub || acc.perms["topicA"] != Deny || acc.defaultGroup != Sub || acc.defaultTopic != Deny {
		t.Fatalf("compiled %+v", acc)
	}
	if c, err := Parse(nil); err != nil || len(c.File.Accounts) != 0 {
		t.Fatalf("empty file: %v", err)
	}
	for name, bad := range map[string]string{
		"short key":     "accounts:\n  - accessKey: abc\n    secretKey: 12345678\n",
		"short secret":  "accounts:\n  - accessKey: abcdefgh\n    secretKey: 123\n",
		"bad perm":      "accounts:\n  - accessKey: abcdefgh\n    secretKey: 12345678\n    topicPerms: [a=ALL]\n",
		"no equals":     "accounts:\n  - accessKey: abcdefgh\n    secretKey: 12345678\n    groupPerms: [g]\n",
		"bad address":   "globalWhiteRemoteAddresses: [10.1.300.*]\n",
		"bad range":     "globalWhiteRemoteAddresses: [10.1.9-3.*]\n",
		"not yaml":      "accounts: [\n",
		"duplicate key": "accounts:\n  - {accessKey: abcdefgh, secretKey: 12345678}\n  - {accessKey: abcdefgh, secretKey: 12345678}\n",
	} {
		if _, err := Parse([]byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestAddresses(t *testing.T) {
	for _, c := range []struct {
		pattern string
		in, out []string
	}{
		{"*", []string{"1.2.3.4", "::1"}, nil},
		{"", nil, []string{"1.2.3.4"}},
		{"192.168.1.*", []string{"192.168.1.0", "192.168.1.255"}, []string{"192.168.2.1", "::1"}},
		{"10.*.*.*", []string{"10.9.8.7"}, []string{"11.0.0.1"}},
		{"10.1.2-5.*", []string{"10.1.2.9", "10.1.5.0"}, []string{"10.1.6.1", "10.1.1.1"}},
		{"10.1.1.100-200", []string{"10.1.1.100", "10.1.1.200"}, []string{"10.1.1.99", "10.1.1.201"}},
		{"172.16.0.{1,2,3}", []string{"172.16.0.2"}, []string{"172.16.0.4"}},
		{"1.1.1.1,2.2.2.2", []string{"2.2.2.2"}, []string{"3.3.3.3"}},
		{"1.1.1.1", []string{"1.1.1.1", "::ffff:1.1.1.1"}, []string{"1.1.1.2"}},
		{"fe80::1", []string{"fe80:0:0:0:0:0:0:1"}, []string{"fe80::2"}},
	} {
		m, err := parseAddress(c.pattern)
		if err != nil {
			t.Fatalf("%q: %v", c.pattern, err)
		}
		for _, ip := range c.in {
			if !m(ip) {
				t.Errorf("%q does not match %s", c.pattern, ip)
			}
		}
		for _, ip := range c.out {
			if m(ip) {
				t.Errorf("%q matches %s", c.pattern, ip)
			}
		}
	}
}

func signed(code int32, ext map[string]string, body []byte, ak, sk string) Request {
	m := map[string]string{auth.AccessKeyField: ak}
	for k, v := range ext {
		m[k] = v
	}
	m[auth.SignatureField] = auth.Sign(auth.Content(m, body, 479), sk)
	return Request{Code: code, Ext: m, Body: body, Version: 479, RemoteIP: "127.0.0.1"}
}

func TestCheck(t *testing.T) {
	c := mustParse(t, plainACL)
	rmq := func(code int32, ext map[string]string) Request { return signed(code, ext, nil, "RocketMQ", "12345678") }
	hb := []byte(`{"consumerDataSet":[{"groupName":"groupC","subscriptionDataSet":[{"topic":"topicC"}]}]}`)
	cases := []struct {
		name   string
		req    Request
		allow  bool
		reason string
	}{
		{"send to a PUB|SUB topic", rmq(remoting.SendMessageV2, map[string]string{"b": "topicB"}), true, "permitted"},
		{"send to a SUB topic", rmq(remoting.SendMessageV2, map[string]string{"b": "topicC"}), false, "No permission for topic:topicC"},
		{"send to a DENY topic", rmq(remoting.SendMessage, map[string]string{"topic": "topicA"}), false, "No permission for topic:topicA"},
		{"send to another topic: default DENY", rmq(remoting.SendMessage, map[string]string{"topic": "other"}), false, "No default permission for topic:other"},
		{"pull topicC as groupC", rmq(remoting.PullMessage, map[string]string{"topic": "topicC", "consumerGroup": "groupC"}), true, "permitted"},
		{"pull topicC as groupA", rmq(remoting.PullMessage, map[string]string{"topic": "topicC", "consumerGroup": "groupA"}), false, "No permission for group:groupA"},
		{"pull as another group: default SUB", rmq(remoting.PullMessage, map[string]string{"topic": "topicC", "consumerGroup": "g9"}), true, "permitted"},
		{"heartbeat", signed(remoting.HeartBeat, nil, hb, "RocketMQ", "12345678"), true, "permitted"},
		{"create topic is admin only", rmq(remoting.UpdateAndCreateTopic, map[string]string{"topic": "topicB"}), false,
			"Need admin permission for request code=17, but accessKey=RocketMQ is not"},
		{"trace topic", rmq(remoting.SendMessageV2, map[string]string{"b": "RMQ_SYS_TRACE_TOPIC"}), true, "trace topic"},
		{"admin", signed(remoting.UpdateAndCreateTopic, map[string]string{"topic": "x"}, nil, "rocketmq2", "12345678"), true, "admin account"},
		{"wrong secret", signed(remoting.SendMessageV2, map[string]string{"b": "topicB"}, nil, "RocketMQ", "wrong"), false,
			"Check signature failed for accessKey=RocketMQ"},
		{"unknown key", signed(remoting.SendMessageV2, map[string]string{"b": "topicB"}, nil, "nobody1", "12345678"), false, "No acl config for nobody1"},
		{"no key", Request{Code: remoting.SendMessageV2, Ext: map[string]string{"b": "topicB"}, RemoteIP: "127.0.0.1"}, false, "No accessKey is configured"},
		{"global white address, unsigned", Request{Code: remoting.UpdateAndCreateTopic, Ext: map[string]string{"topic": "x"}, RemoteIP: "192.168.0.7"}, true, "global white address"},
		{"account white address, bad signature", func() Request {
			r := signed(remoting.SendMessageV2, map[string]string{"b": "x"}, nil, "producer1", "wrong")
			r.RemoteIP = "172.16.0.3"
			return r
		}(), true, "white address of producer1"},
		{"default group DENY", signed(remoting.PullMessage, map[string]string{"topic": "t", "consumerGroup": "g"}, nil, "producer1", "producer-secret"), false,
			"No default permission for topic:t"},
	}
	for _, cs := range cases {
		v := c.Check(cs.req)
		if v.Allowed != cs.allow || v.Reason != cs.reason {
			t.Errorf("%s: %v %q, want %v %q", cs.name, v.Allowed, v.Reason, cs.allow, cs.reason)
		}
	}
}

func TestMigrate(t *testing.T) {
	c := mustParse(t, plainACL)
	users, acls := Migrate(c.File)
	wantUsers := []auth.User{
		{Username: "RocketMQ", Password: "12345678", Type: auth.Normal, Status: auth.Enabled},
		{Username: "rocketmq2", Password: "12345678", Type: auth.Super, Status: auth.Enabled},
		{Username: "producer1", Password: "producer-secret", Type: auth.Normal, Status: auth.Enabled},
	}
	if !reflect.DeepEqual(users, wantUsers) {
		t.Fatalf("users %+v", users)
	}
	e := func(res string, d auth.Decision, a ...auth.Action) auth.Entry {
		r, err := auth.ParseResource(res)
		if err != nil {
			t.Fatal(err)
		}
		return auth.Entry{Resource: r, Actions: a, Decision: d}
	}
	wantACLs := []auth.ACL{
		{Username: "RocketMQ", Policies: []auth.Policy{
			{Type: auth.Custom, Entries: []auth.Entry{
				e("Topic:topicA", auth.Deny, auth.All), e("Topic:topicB", auth.Allow, auth.Pub, auth.Sub), e("Topic:topicC", auth.Allow, auth.Sub),
				e("Group:groupA", auth.Deny, auth.All), e("Group:groupB", auth.Allow, auth.Pub, auth.Sub), e("Group:groupC", auth.Allow, auth.Sub),
			}},
			{Type: auth.Default, Entries: []auth.Entry{e("Topic:*", auth.Deny, auth.All), e("Group:*", auth.Allow, auth.Sub)}},
		}},
		{Username: "producer1", Policies: []auth.Policy{
			{Type: auth.Default, Entries: []auth.Entry{e("Topic:*", auth.Allow, auth.Pub), e("Group:*", auth.Deny, auth.All)}},
		}},
	}
	if !reflect.DeepEqual(acls, wantACLs) {
		t.Fatalf("acls\n got %+v\nwant %+v", acls, wantACLs)
	}
	// The migrated model decides as ACL 1.0 did on these requests.
	u := &users[0]
	a := &acls[0]
	for _, q := range []struct {
		res   auth.Resource
		act   auth.Action
		allow bool
	}{
		{auth.TopicResource("topicB"), auth.Pub, true},
		{auth.TopicResource("topicC"), auth.Pub, false},
		{auth.TopicResource("topicA"), auth.Sub, false},
		{auth.TopicResource("other"), auth.Pub, false},
		{auth.GroupResource("g9"), auth.Sub, true},
		{auth.GroupResource("groupA"), auth.Sub, false},
	} {
		if v := auth.Authorize(u, a, auth.Request{Username: u.Username, Resource: q.res, Actions: []auth.Action{q.act}}); v.Allowed != q.allow {
			t.Errorf("%s %s: %v (%s)", q.res.Key(), q.act, v.Allowed, v.Reason)
		}
	}
}

func TestMigrateInto(t *testing.T) {
	s, err := auth.OpenStore(vfs.NewMemFS(), "/auth")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateUser(auth.User{Username: "rocketmq2", Password: "kept-password"}); err != nil {
		t.Fatal(err)
	}
	c := mustParse(t, plainACL)
	created, err := MigrateInto(s, c.File)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(created, []string{"RocketMQ", "producer1"}) {
		t.Fatalf("created %v", created)
	}
	if u, _ := s.User("rocketmq2"); u.Password != "kept-password" || u.Type != auth.Normal {
		t.Fatalf("an existing user was changed: %+v", u)
	}
	if a, ok := s.ACL("RocketMQ"); !ok || len(a.Policies) != 2 {
		t.Fatalf("acl %+v %v", a, ok)
	}
	again, err := MigrateInto(s, c.File)
	if err != nil || len(again) != 0 {
		t.Fatalf("second migration created %v %v", again, err)
	}
}
