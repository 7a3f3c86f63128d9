package auth

import (
	"errors"
	"reflect"
	"testing"

	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/remoting"
)

func TestGate(t *testing.T) {
	s, err := OpenStore(vfs.NewMemFS(), "/auth")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []User{
		{Username: "root", Password: "rootpw", Type: Super},
		{Username: "inner", Password: "innerpw", Type: Super},
		{Username: "pub", Password: "pubpw"},
		{Username: "off", Password: "offpw", Status: Disabled},
	} {
		if err := s.CreateUser(u); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutACL(aclOf("pub", entry("Topic:A", Allow, nil, Pub), entry("Topic:*", Allow, nil, Sub), entry("Topic:S", Deny, nil, Sub))); err != nil {
		t.Fatal(err)
	}
	wl, err := ParseCodeList(" 105, 34 ,")
	if err != nil || !reflect.DeepEqual(wl, map[int32]bool{105: true, 34: true}) {
		t.Fatalf("whitelist %v %v", wl, err)
	}
	on := Settings{AuthenticationEnabled: true, AuthorizationEnabled: true, InnerUser: "inner", ClusterName: "DefaultCluster",
		AuthorizationWhitelist: map[int32]bool{remoting.GetRouteinfoByTopic: true}}
	req := func(user, secret string, code int32, ext map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range ext {
			m[k] = v
		}
		if user != "" {
			SignRequest(m, nil, 479, Credentials{AccessKey: user, SecretKey: secret})
		}
		return m
	}
	send := func(topic string) map[string]string { return map[string]string{"b": topic, "a": "P"} }
	cases := []struct {
		name   string
		set    Settings
		ext    map[string]string
		code   int32
		allow  bool
		stage  Stage
		remark string
	}{
		{"pub sends to A", on, req("pub", "pubpw", 0, send("A")), remoting.SendMessageV2, true, "", ""},
		{"pub cannot send to B", on, req("pub", "pubpw", 0, send("B")), remoting.SendMessageV2, false, Authorization,
			"User:pub has no permission to access Topic:B from 10.0.0.9, no matched policies."},
		{"deny beats allow", on, req("pub", "pubpw", 0, map[string]string{"topic": "S", "consumerGroup": "G"}), remoting.PullMessage, false, Authorization,
			"User:pub has no permission to access Topic:S from 10.0.0.9, the decision is deny."},
		{"pub cannot create topics", on, req("pub", "pubpw", 0, map[string]string{"topic": "A"}), remoting.UpdateAndCreateTopic, false, Authorization,
			"User:pub has no permission to access Topic:A from 10.0.0.9, no matched policies."},
		{"wrong secret", on, req("pub", "nope", 0, send("A")), remoting.SendMessageV2, false, Authentication, "check signature failed."},
		{"missing signature", on, map[string]string{"b": "A", AccessKeyField: "pub"}, remoting.SendMessageV2, false, Authentication, "check signature failed."},
		{"no credentials", on, send("A"), remoting.SendMessageV2, false, Authentication, "username cannot be null."},
		{"unknown user", on, req("ghost", "x", 0, send("A")), remoting.SendMessageV2, false, Authentication, "User:ghost is not found."},
		{"disabled user", on, req("off", "offpw", 0, send("A")), remoting.SendMessageV2, false, Authentication, "User:off is disabled."},
		{"super user creates topics", on, req("root", "rootpw", 0, map[string]string{"topic": "X"}), remoting.UpdateAndCreateTopic, true, "", ""},
		{"super user cannot register a broker", on, req("root", "rootpw", 0, nil), remoting.RegisterBroker, false, Authorization,
			"User:root has no permission to send request code 103 from 10.0.0.9, only the inner credentials may."},
		{"inner user registers a broker", on, req("inner", "innerpw", 0, nil), remoting.RegisterBroker, true, "", ""},
		{"unknown code: super only", on, req("pub", "pubpw", 0, nil), 7777, false, Authorization,
			"User:pub has no permission to send request code 7777 from 10.0.0.9, only super users may."},
		{"unknown code, super user", on, req("root", "rootpw", 0, nil), 7777, true, "", ""},
		{"authorization whitelist", on, req("pub", "pubpw", 0, map[string]string{"topic": "B"}), remoting.GetRouteinfoByTopic, true, "", ""},
		{"authentication whitelist still authorizes", Settings{AuthenticationEnabled: true, AuthorizationEnabled: true, ClusterName: "c",
			AuthenticationWhitelist: map[int32]bool{remoting.SendMessageV2: true}}, map[string]string{"b": "B", AccessKeyField: "pub"}, remoting.SendMessageV2, false, Authorization,
			"User:pub has no permission to access Topic:B from 10.0.0.9, no matched policies."},
		{"both off", Settings{}, send("A"), remoting.SendMessageV2, true, "", ""},
		{"authentication only", Settings{AuthenticationEnabled: true}, req("pub", "pubpw", 0, send("B")), remoting.SendMessageV2, true, "", ""},
		{"authorization only, no AccessKey", Settings{AuthorizationEnabled: true}, send("A"), remoting.SendMessageV2, false, Authorization,
			"Authorization failed: the request has no AccessKey."},
	}
	for _, c := range cases {
		o := Gate(c.set, s, c.code, c.ext, nil, 479, "10.0.0.9")
		if o.Allowed != c.allow || o.Stage != c.stage && !c.allow || o.Remark != c.remark {
			t.Errorf("%s: %+v, want allowed %v stage %q remark %q", c.name, o, c.allow, c.stage, c.remark)
		}
	}
	// A policy change takes effect on the next request.
	if err := s.PutACL(aclOf("pub", entry("Topic:B", Allow, nil, Pub))); err != nil {
		t.Fatal(err)
	}
	if o := Gate(on, s, remoting.SendMessageV2, req("pub", "pubpw", 0, send("B")), nil, 479, "10.0.0.9"); !o.Allowed {
		t.Fatalf("after the change: %+v", o)
	}
}

// The codes a slave copies its master's metadata with pass for the inner
// user, even one that is not a super user and has no ACL; other users
// need their requirements.
func TestGateInnerCopies(t *testing.T) {
	s, err := OpenStore(vfs.NewMemFS(), "/auth")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []User{{Username: "inner", Password: "innerpw"}, {Username: "ops", Password: "opspw"}, {Username: "pub", Password: "pubpw"}} {
		if err := s.CreateUser(u); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutACL(aclOf("ops", entry("Cluster:c", Allow, nil, Get))); err != nil {
		t.Fatal(err)
	}
	on := Settings{AuthenticationEnabled: true, AuthorizationEnabled: true, InnerUser: "inner", ClusterName: "c"}
	gate := func(user, secret string, code int32) Outcome {
		ext := map[string]string{}
		SignRequest(ext, nil, 479, Credentials{AccessKey: user, SecretKey: secret})
		return Gate(on, s, code, ext, nil, 479, "10.0.0.9")
	}
	for _, code := range []int32{remoting.GetAllTopicConfig, remoting.GetAllSubscriptionGroupConfig,
		remoting.GetAllConsumerOffset, remoting.GetAllDelayOffset, remoting.GetTimerCheckPoint} {
		name := remoting.RequestName(code)
		if o := gate("inner", "innerpw", code); !o.Allowed {
			t.Errorf("inner user refused %s: %+v", name, o)
		}
		if o := gate("ops", "opspw", code); !o.Allowed {
			t.Errorf("Cluster Get refused %s: %+v", name, o)
		}
		if o := gate("pub", "pubpw", code); o.Allowed || o.Refused == nil || o.Refused.Resource != ClusterResource("c") {
			t.Errorf("user without Cluster Get allowed %s: %+v", name, o)
		}
		if o := gate("inner", "nope", code); o.Allowed || o.Stage != Authentication {
			t.Errorf("inner user with a wrong secret: %s: %+v", name, o)
		}
	}
	// Only those codes: the inner user needs its ACL for the others.
	if o := gate("inner", "innerpw", remoting.GetBrokerConfig); o.Allowed {
		t.Errorf("inner user without an ACL allowed GET_BROKER_CONFIG: %+v", o)
	}
}

func TestParseCredentialsAndInitUser(t *testing.T) {
	c, err := ParseCredentials(`{"accessKey":"rocketmq2","secretKey":"12345678"}`)
	if err != nil || c != (Credentials{AccessKey: "rocketmq2", SecretKey: "12345678"}) {
		t.Fatalf("%+v %v", c, err)
	}
	u, err := ParseInitUser(`{"username":"rocketmq2","password":"12345678"}`)
	if err != nil || u != (User{Username: "rocketmq2", Password: "12345678", Type: Super, Status: Enabled}) {
		t.Fatalf("%+v %v", u, err)
	}
	for _, bad := range []string{``, `{}`, `{"accessKey":"a"}`, `not json`} {
		if _, err := ParseCredentials(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("credentials %q: %v", bad, err)
		}
		if _, err := ParseInitUser(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("init user %q: %v", bad, err)
		}
	}
	if _, err := ParseCodeList("10,x"); !errors.Is(err, ErrInvalid) {
		t.Errorf("code list: %v", err)
	}
	// SignRequest signs the security token, as Java's client does.
	ext := map[string]string{"topic": "T"}
	SignRequest(ext, []byte("b"), 479, Credentials{AccessKey: "ak", SecretKey: "sk", SecurityToken: "tok"})
	if ext[SecurityTokenField] != "tok" || Verify(ext, []byte("b"), 479, "sk") != nil {
		t.Fatalf("signed %v", ext)
	}
	if string(Content(ext, []byte("b"), 479)) != "aktokTb" {
		t.Fatalf("content %q", Content(ext, []byte("b"), 479))
	}
}
