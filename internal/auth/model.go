package auth

import (
	"fmt"
	"net/netip"
	"strings"
)

// UserType is RocketMQ's user type: a super user passes every
// authorization check; a normal user passes only what its ACL allows.
type UserType string

// User types, with RocketMQ's names.
const (
	Super  UserType = "Super"
	Normal UserType = "Normal"
)

// UserStatus is RocketMQ's user status; a disabled user is refused.
type UserStatus string

// User statuses, with RocketMQ's names (lower case, as RocketMQ writes them).
const (
	Enabled  UserStatus = "enable"
	Disabled UserStatus = "disable"
)

// User is one account: its name is the AccessKey a client signs with and
// its password the secret of the signature.
type User struct {
	Username string
	Password string
	Type     UserType
	Status   UserStatus
}

// ParseUserType reads a user type case-insensitively; "" stays "" (Normal
// for a new user, unchanged for an update).
func ParseUserType(s string) (UserType, error) {
	switch {
	case s == "":
		return "", nil
	case strings.EqualFold(s, string(Normal)):
		return Normal, nil
	case strings.EqualFold(s, string(Super)):
		return Super, nil
	}
	return "", fmt.Errorf("%w: user type %q", ErrInvalid, s)
}

// ParseUserStatus reads a user status case-insensitively; "" stays ""
// (enabled for a new user, unchanged for an update).
func ParseUserStatus(s string) (UserStatus, error) {
	switch {
	case s == "":
		return "", nil
	case strings.EqualFold(s, string(Enabled)):
		return Enabled, nil
	case strings.EqualFold(s, string(Disabled)):
		return Disabled, nil
	}
	return "", fmt.Errorf("%w: user status %q", ErrInvalid, s)
}

// SubjectKey is RocketMQ's subject of a user's ACL: "User:<name>".
func SubjectKey(username string) string { return "User:" + username }

// ParseSubject returns the user name of a subject key "User:<name>".
func ParseSubject(key string) (string, error) {
	typ, name, ok := strings.Cut(key, ":")
	if !ok || !strings.EqualFold(typ, "User") || name == "" {
		return "", fmt.Errorf("%w: subject %q (want User:<name>)", ErrInvalid, key)
	}
	return name, nil
}

// ResourceType is the kind of thing a policy entry names.
type ResourceType string

// Resource types, with RocketMQ's names. AnyType is the resource "*".
const (
	AnyType   ResourceType = "Any"
	Cluster   ResourceType = "Cluster"
	Namespace ResourceType = "Namespace"
	Topic     ResourceType = "Topic"
	Group     ResourceType = "Group"
)

// Pattern is how a policy entry's resource name matches a request's.
type Pattern string

// Patterns, with RocketMQ's names.
const (
	AnyPattern Pattern = "ANY"
	Literal    Pattern = "LITERAL"
	Prefixed   Pattern = "PREFIXED"
)

// Resource is a resource of a policy entry or of a request. A request's
// resource is always Literal.
type Resource struct {
	Type    ResourceType
	Name    string
	Pattern Pattern
}

// Retry and dead-letter prefixes of RocketMQ's group topics.
const (
	RetryPrefix = "%RETRY%"
	DLQPrefix   = "%DLQ%"
)

// TopicResource is the literal resource of a topic.
func TopicResource(name string) Resource { return Resource{Topic, name, Literal} }

// GroupResource is the literal resource of a group; a retry topic names
// its group (RocketMQ's Resource.ofGroup strips %RETRY% and %DLQ%).
func GroupResource(name string) Resource {
	if strings.HasPrefix(name, RetryPrefix) {
		name = strings.TrimPrefix(name, RetryPrefix)
	} else if strings.HasPrefix(name, DLQPrefix) {
		name = strings.TrimPrefix(name, DLQPrefix)
	}
	return Resource{Group, name, Literal}
}

// ClusterResource is the literal resource of a cluster.
func ClusterResource(name string) Resource { return Resource{Cluster, name, Literal} }

// ParseResource reads RocketMQ's resource key: "*" (everything),
// "<Type>:*" (every resource of the type), "<Type>:<prefix>*" (prefixed)
// or "<Type>:<name>" (literal). The type is read case-insensitively. As in
// RocketMQ, "Cluster" alone is the literal cluster named "": write
// "Cluster:*" or "Cluster:<name>".
func ParseResource(key string) (Resource, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return Resource{}, fmt.Errorf("%w: empty resource", ErrInvalid)
	}
	if key == "*" {
		return Resource{Type: AnyType, Pattern: AnyPattern}, nil
	}
	typ, name, _ := strings.Cut(key, ":")
	var rt ResourceType
	for _, t := range []ResourceType{AnyType, Cluster, Namespace, Topic, Group} {
		if strings.EqualFold(typ, string(t)) {
			rt = t
		}
	}
	if rt == "" {
		return Resource{}, fmt.Errorf("%w: resource type of %q", ErrInvalid, key)
	}
	if rt == AnyType {
		// RocketMQ matches an Any resource of any name against everything.
		return Resource{Type: AnyType, Pattern: AnyPattern}, nil
	}
	switch {
	case name == "*":
		return Resource{Type: rt, Pattern: AnyPattern}, nil
	case strings.HasSuffix(name, "*"):
		prefix := name[:strings.IndexByte(name, '*')]
		if prefix == "" { // "Type:**" matches what "Type:*" does
			return Resource{Type: rt, Pattern: AnyPattern}, nil
		}
		return Resource{Type: rt, Name: prefix, Pattern: Prefixed}, nil
	}
	return Resource{Type: rt, Name: name, Pattern: Literal}, nil
}

// Key is RocketMQ's resource key, the inverse of ParseResource.
func (r Resource) Key() string {
	if r.Type == AnyType {
		return "*"
	}
	switch r.Pattern {
	case AnyPattern:
		return string(r.Type) + ":*"
	case Prefixed:
		return string(r.Type) + ":" + r.Name + "*"
	}
	return string(r.Type) + ":" + r.Name
}

// Matches reports whether the entry resource r covers the request
// resource q.
func (r Resource) Matches(q Resource) bool {
	if r.Type == AnyType {
		return true
	}
	if r.Type != q.Type {
		return false
	}
	switch r.Pattern {
	case AnyPattern:
		return true
	case Literal:
		return q.Name == r.Name
	case Prefixed:
		return strings.HasPrefix(q.Name, r.Name)
	}
	return false
}

// Action is what a request does to a resource.
type Action string

// Actions, with RocketMQ's names. All in an entry grants every action;
// Any in a request is satisfied by an entry with any action.
const (
	All    Action = "All"
	Any    Action = "Any"
	Pub    Action = "Pub"
	Sub    Action = "Sub"
	Create Action = "Create"
	Update Action = "Update"
	Delete Action = "Delete"
	Get    Action = "Get"
	List   Action = "List"
)

var actions = []Action{All, Any, Pub, Sub, Create, Update, Delete, Get, List}

// ParseAction reads an action name case-insensitively.
func ParseAction(s string) (Action, error) {
	for _, a := range actions {
		if strings.EqualFold(strings.TrimSpace(s), string(a)) {
			return a, nil
		}
	}
	return "", fmt.Errorf("%w: action %q", ErrInvalid, s)
}

// Decision is what a matching policy entry decides.
type Decision string

// Decisions, with RocketMQ's names.
const (
	Allow Decision = "Allow"
	Deny  Decision = "Deny"
)

// ParseDecision reads a decision case-insensitively.
func ParseDecision(s string) (Decision, error) {
	switch {
	case strings.EqualFold(s, string(Allow)):
		return Allow, nil
	case strings.EqualFold(s, string(Deny)):
		return Deny, nil
	}
	return "", fmt.Errorf("%w: decision %q", ErrInvalid, s)
}

// PolicyType tells the operator's policy (Custom) from the one a
// migration writes for default permissions (Default); Default entries
// are consulted only when no Custom entry matches.
type PolicyType string

// Policy types, with RocketMQ's names.
const (
	Custom  PolicyType = "Custom"
	Default PolicyType = "Default"
)

// ParsePolicyType reads a policy type case-insensitively ("" is Custom).
func ParsePolicyType(s string) (PolicyType, error) {
	switch {
	case s == "", strings.EqualFold(s, string(Custom)):
		return Custom, nil
	case strings.EqualFold(s, string(Default)):
		return Default, nil
	}
	return "", fmt.Errorf("%w: policy type %q", ErrInvalid, s)
}

// Entry is one policy entry: a resource, the actions it concerns, the
// source addresses it applies to (none: every address) and its decision.
type Entry struct {
	Resource  Resource
	Actions   []Action
	SourceIPs []string
	Decision  Decision
}

// Policy is the entries of one policy type.
type Policy struct {
	Type    PolicyType
	Entries []Entry
}

// ACL is the policies of one user.
type ACL struct {
	Username string
	Policies []Policy
}

// Policy returns the policy of type t, or nil.
func (a *ACL) Policy(t PolicyType) *Policy {
	for i := range a.Policies {
		if a.Policies[i].Type == t {
			return &a.Policies[i]
		}
	}
	return nil
}

// Merge applies RocketMQ's update of an ACL: each new policy's entries
// replace the entries of the same resource in the policy of the same
// type, or are appended.
func (a *ACL) Merge(policies []Policy) {
	for _, np := range policies {
		p := a.Policy(np.Type)
		if p == nil {
			a.Policies = append(a.Policies, Policy{Type: np.Type, Entries: append([]Entry(nil), np.Entries...)})
			continue
		}
		for _, ne := range np.Entries {
			replaced := false
			for i := range p.Entries {
				if p.Entries[i].Resource == ne.Resource {
					p.Entries[i] = ne
					replaced = true
					break
				}
			}
			if !replaced {
				p.Entries = append(p.Entries, ne)
			}
		}
	}
}

// Remove deletes the entry of resource r from the policy of type t, and
// the policy when it is left empty, as RocketMQ's deletePolicy does. It
// reports whether an entry was removed.
func (a *ACL) Remove(t PolicyType, r Resource) bool {
	for pi := range a.Policies {
		p := &a.Policies[pi]
		if p.Type != t {
			continue
		}
		for i := range p.Entries {
			if p.Entries[i].Resource == r {
				p.Entries = append(p.Entries[:i], p.Entries[i+1:]...)
				if len(p.Entries) == 0 {
					a.Policies = append(a.Policies[:pi], a.Policies[pi+1:]...)
				}
				return true
			}
		}
	}
	return false
}

// Clone returns a deep copy.
func (a ACL) Clone() ACL {
	out := ACL{Username: a.Username}
	for _, p := range a.Policies {
		np := Policy{Type: p.Type}
		for _, e := range p.Entries {
			e.Actions = append([]Action(nil), e.Actions...)
			e.SourceIPs = append([]string(nil), e.SourceIPs...)
			np.Entries = append(np.Entries, e)
		}
		out.Policies = append(out.Policies, np)
	}
	return out
}

// ValidSourceIP checks an entry's source address: an IP or a CIDR range.
func ValidSourceIP(s string) error {
	if strings.Contains(s, "/") {
		if _, err := netip.ParsePrefix(s); err != nil {
			return fmt.Errorf("%w: source ip range %q", ErrInvalid, s)
		}
		return nil
	}
	if _, err := netip.ParseAddr(s); err != nil {
		return fmt.Errorf("%w: source ip %q", ErrInvalid, s)
	}
	return nil
}

// ipInRange is RocketMQ's IPAddressUtils.isIPInRange: an address without
// a "/" matches by equal text, a CIDR range by containment.
func ipInRange(ip, cidr string) bool {
	if !strings.Contains(cidr, "/") {
		return ip == cidr
	}
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	return p.Masked().Contains(a.Unmap()) || p.Masked().Contains(a)
}
