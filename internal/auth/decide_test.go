package auth

import (
	"strings"
	"testing"
)

func entry(res string, decision Decision, ips []string, a ...Action) Entry {
	r, err := ParseResource(res)
	if err != nil {
		panic(err)
	}
	return Entry{Resource: r, Actions: a, SourceIPs: ips, Decision: decision}
}

func TestParseResource(t *testing.T) {
	for _, c := range []struct {
		key  string
		want Resource
		back string
	}{
		{"*", Resource{Type: AnyType, Pattern: AnyPattern}, "*"},
		{"Topic:*", Resource{Type: Topic, Pattern: AnyPattern}, "Topic:*"},
		{"Topic:abc*", Resource{Type: Topic, Name: "abc", Pattern: Prefixed}, "Topic:abc*"},
		{"topic:abc", Resource{Type: Topic, Name: "abc", Pattern: Literal}, "Topic:abc"},
		{"Group:g1", Resource{Type: Group, Name: "g1", Pattern: Literal}, "Group:g1"},
		{"Cluster:DefaultCluster", Resource{Type: Cluster, Name: "DefaultCluster", Pattern: Literal}, "Cluster:DefaultCluster"},
		{"Cluster", Resource{Type: Cluster, Name: "", Pattern: Literal}, "Cluster:"},
	} {
		got, err := ParseResource(c.key)
		if err != nil || got != c.want || got.Key() != c.back {
			t.Errorf("%q: %+v %v (key %q), want %+v %q", c.key, got, err, got.Key(), c.want, c.back)
		}
	}
	for _, bad := range []string{"", "Queue:x", "Topics:a"} {
		if _, err := ParseResource(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestAuthorize(t *testing.T) {
	normal := &User{Username: "alice", Password: "pw", Type: Normal, Status: Enabled}
	super := &User{Username: "root", Password: "pw", Type: Super, Status: Enabled}
	disabled := &User{Username: "bob", Password: "pw", Type: Super, Status: Disabled}
	custom := func(es ...Entry) *ACL {
		return &ACL{Username: "alice", Policies: []Policy{{Type: Custom, Entries: es}}}
	}
	topicA, topicB := TopicResource("A"), TopicResource("B")
	req := func(r Resource, ip string, a ...Action) Request {
		return Request{Username: "alice", Resource: r, Actions: a, SourceIP: ip}
	}
	cases := []struct {
		name   string
		user   *User
		acl    *ACL
		req    Request
		allow  bool
		reason string
	}{
		{"unknown user", nil, nil, req(topicA, "1.2.3.4", Pub), false, "User:alice not found."},
		{"disabled user, even super", disabled, nil, req(topicA, "1.2.3.4", Pub), false, "User:bob is disabled."},
		{"super user without an ACL", super, nil, req(topicA, "1.2.3.4", Delete), true, "super user"},
		{"no ACL", normal, nil, req(topicA, "1.2.3.4", Pub), false,
			"User:alice has no permission to access Topic:A from 1.2.3.4, no matched policies."},
		{"literal allow", normal, custom(entry("Topic:A", Allow, nil, Pub)), req(topicA, "1.2.3.4", Pub), true, "allowed by Topic:A"},
		{"other topic", normal, custom(entry("Topic:A", Allow, nil, Pub)), req(topicB, "1.2.3.4", Pub), false,
			"User:alice has no permission to access Topic:B from 1.2.3.4, no matched policies."},
		{"other action", normal, custom(entry("Topic:A", Allow, nil, Pub)), req(topicA, "1.2.3.4", Sub), false,
			"User:alice has no permission to access Topic:A from 1.2.3.4, no matched policies."},
		{"any one action suffices", normal, custom(entry("Topic:A", Allow, nil, Get)), req(topicA, "", Pub, Sub, Get), true, "allowed by Topic:A"},
		{"All grants every action", normal, custom(entry("Topic:A", Allow, nil, All)), req(topicA, "", Delete), true, "allowed by Topic:A"},
		{"Any asked, any action held", normal, custom(entry("Topic:A", Allow, nil, Sub)), req(topicA, "", Any), true, "allowed by Topic:A"},
		{"entry without actions matches nothing", normal, custom(entry("Topic:A", Allow, nil)), req(topicA, "", Any), false,
			"User:alice has no permission to access Topic:A from , no matched policies."},
		{"prefixed", normal, custom(entry("Topic:ab*", Allow, nil, Pub)), req(TopicResource("abc"), "", Pub), true, "allowed by Topic:ab*"},
		{"prefixed, not a prefix", normal, custom(entry("Topic:ab*", Allow, nil, Pub)), req(TopicResource("xab"), "", Pub), false,
			"User:alice has no permission to access Topic:xab from , no matched policies."},
		{"type any", normal, custom(entry("Topic:*", Allow, nil, Pub)), req(topicB, "", Pub), true, "allowed by Topic:*"},
		{"type any does not cross types", normal, custom(entry("Topic:*", Allow, nil, Sub)), req(GroupResource("g"), "", Sub), false,
			"User:alice has no permission to access Group:g from , no matched policies."},
		{"star covers every type", normal, custom(entry("*", Allow, nil, Sub)), req(GroupResource("g"), "", Sub), true, "allowed by *"},
		{"deny literal beats allow prefixed", normal,
			custom(entry("Topic:A*", Allow, nil, Pub), entry("Topic:A", Deny, nil, Pub)), req(topicA, "1.1.1.1", Pub), false,
			"User:alice has no permission to access Topic:A from 1.1.1.1, the decision is deny."},
		{"allow literal beats deny type-any (most specific decides)", normal,
			custom(entry("Topic:*", Deny, nil, Pub), entry("Topic:A", Allow, nil, Pub)), req(topicA, "", Pub), true, "allowed by Topic:A"},
		{"longer prefix decides", normal,
			custom(entry("Topic:a*", Allow, nil, Pub), entry("Topic:abc*", Deny, nil, Pub)), req(TopicResource("abcd"), "", Pub), false,
			"User:alice has no permission to access Topic:abcd from , the decision is deny."},
		{"shorter prefix when the longer does not match", normal,
			custom(entry("Topic:a*", Allow, nil, Pub), entry("Topic:abc*", Deny, nil, Pub)), req(TopicResource("abx"), "", Pub), true, "allowed by Topic:a*"},
		{"typed beats star", normal,
			custom(entry("*", Allow, nil, All), entry("Topic:*", Deny, nil, Pub)), req(topicA, "", Pub), false,
			"User:alice has no permission to access Topic:A from , the decision is deny."},
		{"deny wins between equally specific entries", normal,
			custom(entry("Topic:A", Allow, nil, Pub), entry("Topic:A", Deny, nil, Pub)), req(topicA, "", Pub), false,
			"User:alice has no permission to access Topic:A from , the decision is deny."},
		{"deny wins between equally specific entries, other order", normal,
			custom(entry("Topic:A", Deny, nil, Pub), entry("Topic:A", Allow, nil, Pub)), req(topicA, "", Pub), false,
			"User:alice has no permission to access Topic:A from , the decision is deny."},
		{"deny of another action does not apply", normal,
			custom(entry("Topic:A", Allow, nil, Pub), entry("Topic:A*", Deny, nil, Sub)), req(topicA, "", Pub), true, "allowed by Topic:A"},
		{"source ip in CIDR", normal, custom(entry("Topic:A", Allow, []string{"10.0.0.0/8"}, Pub)), req(topicA, "10.1.2.3", Pub), true, "allowed by Topic:A"},
		{"source ip outside CIDR", normal, custom(entry("Topic:A", Allow, []string{"10.0.0.0/8"}, Pub)), req(topicA, "192.168.0.1", Pub), false,
			"User:alice has no permission to access Topic:A from 192.168.0.1, no matched policies."},
		{"source ip exact", normal, custom(entry("Topic:A", Allow, []string{"192.168.0.1"}, Pub)), req(topicA, "192.168.0.1", Pub), true, "allowed by Topic:A"},
		{"IPv6 CIDR", normal, custom(entry("Topic:A", Allow, []string{"fd00::/8"}, Pub)), req(topicA, "[fd00::1]", Pub), true, "allowed by Topic:A"},
		{"no source ip and a ranged entry", normal, custom(entry("Topic:A", Allow, []string{"10.0.0.0/8"}, Pub)), req(topicA, "", Pub), false,
			"User:alice has no permission to access Topic:A from , no matched policies."},
		{"a deny limited to other addresses does not apply", normal,
			custom(entry("Topic:*", Allow, nil, Pub), entry("Topic:A", Deny, []string{"10.0.0.0/8"}, Pub)), req(topicA, "192.168.0.1", Pub), true, "allowed by Topic:*"},
		{"a deny limited to the address applies", normal,
			custom(entry("Topic:*", Allow, nil, Pub), entry("Topic:A", Deny, []string{"10.0.0.0/8"}, Pub)), req(topicA, "10.0.0.1", Pub), false,
			"User:alice has no permission to access Topic:A from 10.0.0.1, the decision is deny."},
		{"default policy when no custom entry matches", normal,
			&ACL{Username: "alice", Policies: []Policy{
				{Type: Custom, Entries: []Entry{entry("Topic:B", Deny, nil, Pub)}},
				{Type: Default, Entries: []Entry{entry("Topic:*", Allow, nil, Pub)}},
			}}, req(topicA, "", Pub), true, "allowed by Topic:*"},
		{"custom before default, even less specific", normal,
			&ACL{Username: "alice", Policies: []Policy{
				{Type: Default, Entries: []Entry{entry("Topic:A", Deny, nil, Pub)}},
				{Type: Custom, Entries: []Entry{entry("*", Allow, nil, All)}},
			}}, req(topicA, "", Pub), true, "allowed by *"},
		{"cluster resource needs its name", normal, custom(entry("Cluster", Allow, nil, Get)), req(ClusterResource("DefaultCluster"), "", Get), false,
			"User:alice has no permission to access Cluster:DefaultCluster from , no matched policies."},
		{"cluster star", normal, custom(entry("Cluster:*", Allow, nil, Get)), req(ClusterResource("DefaultCluster"), "", Get), true, "allowed by Cluster:*"},
		{"retry group", normal, custom(entry("Group:g1", Allow, nil, Sub)), req(GroupResource("%RETRY%g1"), "", Sub), true, "allowed by Group:g1"},
	}
	for _, c := range cases {
		v := Authorize(c.user, c.acl, c.req)
		if v.Allowed != c.allow || v.Reason != c.reason {
			t.Errorf("%s: allowed %v %q, want %v %q", c.name, v.Allowed, v.Reason, c.allow, c.reason)
		}
		if v.Allowed && c.user.Type != Super && v.Entry == nil {
			t.Errorf("%s: allowed without a deciding entry", c.name)
		}
		if strings.Contains(v.Reason, "pw") {
			t.Errorf("%s: reason names the password", c.name)
		}
	}
}

func TestACLMergeAndRemove(t *testing.T) {
	a := ACL{Username: "u"}
	a.Merge([]Policy{{Type: Custom, Entries: []Entry{entry("Topic:A", Allow, nil, Pub), entry("Topic:B", Allow, nil, Sub)}}})
	a.Merge([]Policy{{Type: Custom, Entries: []Entry{entry("Topic:A", Deny, nil, Pub, Sub)}}, {Type: Default, Entries: []Entry{entry("Topic:*", Allow, nil, Pub)}}})
	info := ACLToInfo(a)
	if len(info.Policies) != 2 || len(info.Policies[0].Entries) != 2 || info.Policies[0].Entries[0].Decision != "Deny" ||
		len(info.Policies[0].Entries[0].Actions) != 2 {
		t.Fatalf("merged %+v", info)
	}
	if a.Remove(Custom, TopicResource("C")) {
		t.Fatal("removed a missing entry")
	}
	if !a.Remove(Default, Resource{Type: Topic, Pattern: AnyPattern}) || a.Policy(Default) != nil {
		t.Fatalf("default policy left: %+v", a.Policies)
	}
}
