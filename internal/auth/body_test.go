package auth

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// Literal bodies as RocketMQ 5.3 writes them (fastjson: alphabetical
// fields, nulls left out).
const (
	userJSON  = `{"password":"12345678","userStatus":"enable","userType":"Super","username":"rocketmq2"}`
	usersJSON = `[{"password":"pw","userStatus":"disable","userType":"Normal","username":"a"},{"password":"pw","userStatus":"enable","userType":"Super","username":"b"}]`
	aclJSON   = `{"policies":[{"entries":[` +
		`{"actions":["Pub","Sub"],"decision":"Allow","resource":"Topic:A","sourceIps":["10.0.0.0/8","192.168.0.1"]},` +
		`{"actions":["All"],"decision":"Deny","resource":"Topic:sec*"},` +
		`{"actions":["Sub","Get"],"decision":"Allow","resource":"Group:*"}` +
		`],"policyType":"Custom"},{"entries":[{"actions":["Pub"],"decision":"Allow","resource":"*"}],"policyType":"Default"}],"subject":"User:alice"}`
)

func TestUserInfoJSON(t *testing.T) {
	info, err := DecodeUserInfo([]byte(userJSON))
	if err != nil {
		t.Fatal(err)
	}
	u, err := InfoToUser(info, "")
	if err != nil {
		t.Fatal(err)
	}
	if u != (User{Username: "rocketmq2", Password: "12345678", Type: Super, Status: Enabled}) {
		t.Fatalf("user %+v", u)
	}
	out, err := json.Marshal(UserToInfo(u, true))
	if err != nil || string(out) != userJSON {
		t.Fatalf("encoded %s %v\nwant    %s", out, err, userJSON)
	}
	out, _ = json.Marshal(UserToInfo(u, false))
	if string(out) != `{"userStatus":"enable","userType":"Super","username":"rocketmq2"}` {
		t.Fatalf("without password %s", out)
	}
	var list []UserInfo
	if err := json.Unmarshal([]byte(usersJSON), &list); err != nil || len(list) != 2 || list[0].UserStatus != "disable" {
		t.Fatalf("list %+v %v", list, err)
	}
	out, _ = json.Marshal(list)
	if string(out) != usersJSON {
		t.Fatalf("list encoded %s", out)
	}
	// The header's username wins; type and status are read case-insensitively.
	u, err = InfoToUser(UserInfo{Username: "x", Password: "p", UserType: "normal", UserStatus: "DISABLE"}, "hdr")
	if err != nil || u.Username != "hdr" || u.Type != Normal || u.Status != Disabled {
		t.Fatalf("%+v %v", u, err)
	}
	for _, bad := range []UserInfo{{}, {Username: "a", UserType: "Root"}, {Username: "a", UserStatus: "on"}} {
		if _, err := InfoToUser(bad, ""); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if _, err := DecodeUserInfo([]byte(`{"username":`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("torn body: %v", err)
	}
}

func TestAclInfoJSON(t *testing.T) {
	info, err := DecodeAclInfo([]byte(aclJSON))
	if err != nil {
		t.Fatal(err)
	}
	a, err := InfoToACL(info, "")
	if err != nil {
		t.Fatal(err)
	}
	want := ACL{Username: "alice", Policies: []Policy{
		{Type: Custom, Entries: []Entry{
			{Resource: TopicResource("A"), Actions: []Action{Pub, Sub}, SourceIPs: []string{"10.0.0.0/8", "192.168.0.1"}, Decision: Allow},
			{Resource: Resource{Topic, "sec", Prefixed}, Actions: []Action{All}, Decision: Deny},
			{Resource: Resource{Type: Group, Pattern: AnyPattern}, Actions: []Action{Sub, Get}, Decision: Allow},
		}},
		{Type: Default, Entries: []Entry{{Resource: Resource{Type: AnyType, Pattern: AnyPattern}, Actions: []Action{Pub}, Decision: Allow}}},
	}}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("acl\n got %+v\nwant %+v", a, want)
	}
	out, err := json.Marshal(ACLToInfo(a))
	if err != nil || string(out) != aclJSON {
		t.Fatalf("encoded %s\nwant    %s", out, aclJSON)
	}
	// The subject may come from the header; a missing policy type is Custom.
	a, err = InfoToACL(AclInfo{Policies: []PolicyInfo{{Entries: []PolicyEntryInfo{{Resource: "Topic:T", Actions: []string{"pub"}, Decision: "allow"}}}}}, "User:bob")
	if err != nil || a.Username != "bob" || a.Policies[0].Type != Custom || a.Policies[0].Entries[0].Actions[0] != Pub {
		t.Fatalf("%+v %v", a, err)
	}
	for name, bad := range map[string]string{
		"no policies":     `{"subject":"User:a"}`,
		"bad subject":     `{"subject":"Group:a","policies":[{"entries":[{"resource":"*","actions":["Pub"],"decision":"Allow"}]}]}`,
		"bad resource":    `{"subject":"User:a","policies":[{"entries":[{"resource":"Queue:q","actions":["Pub"],"decision":"Allow"}]}]}`,
		"no actions":      `{"subject":"User:a","policies":[{"entries":[{"resource":"*","decision":"Allow"}]}]}`,
		"unknown action":  `{"subject":"User:a","policies":[{"entries":[{"resource":"*","actions":["Publish"],"decision":"Allow"}]}]}`,
		"bad decision":    `{"subject":"User:a","policies":[{"entries":[{"resource":"*","actions":["Pub"],"decision":"Maybe"}]}]}`,
		"bad source ip":   `{"subject":"User:a","policies":[{"entries":[{"resource":"*","actions":["Pub"],"decision":"Allow","sourceIps":["10.0.0.0/33"]}]}]}`,
		"bad policy type": `{"subject":"User:a","policies":[{"policyType":"Mine","entries":[{"resource":"*","actions":["Pub"],"decision":"Allow"}]}]}`,
		"not an acl body": `[1,2]`,
		"torn acl body":   `{"subject":"User:a","policies":[{"entr`,
	} {
		info, err := DecodeAclInfo([]byte(bad))
		if err == nil {
			_, err = InfoToACL(info, "")
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestHeaderFieldNames(t *testing.T) {
	// RocketMQ 5.3's CreateUserRequestHeader ... ListAclsRequestHeader.
	got := []string{HeaderUsername, HeaderFilter, HeaderSubject, HeaderPolicyType, HeaderResource, HeaderSubjectFilter, HeaderResourceFilter}
	want := []string{"username", "filter", "subject", "policyType", "resource", "subjectFilter", "resourceFilter"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%v", got)
	}
	codes := []int32{CodeCreateUser, CodeUpdateUser, CodeDeleteUser, CodeGetUser, CodeListUser, CodeCreateACL, CodeUpdateACL, CodeDeleteACL, CodeGetACL, CodeListACL}
	for i, c := range codes {
		if c != int32(3001+i) {
			t.Fatalf("code %d is %d", i, c)
		}
	}
}
