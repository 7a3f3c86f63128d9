package auth

import (
	"encoding/json"
	"fmt"
)

// Request codes of user and ACL management (RocketMQ 5.3 RequestCode).
const (
	CodeCreateUser int32 = 3001
	CodeUpdateUser int32 = 3002
	CodeDeleteUser int32 = 3003
	CodeGetUser    int32 = 3004
	CodeListUser   int32 = 3005
	CodeCreateACL  int32 = 3006
	CodeUpdateACL  int32 = 3007
	CodeDeleteACL  int32 = 3008
	CodeGetACL     int32 = 3009
	CodeListACL    int32 = 3010
)

// Ext field names of the management requests' headers (RocketMQ 5.3's
// CreateUserRequestHeader ... ListAclsRequestHeader).
const (
	// HeaderUsername is the user of AUTH_CREATE_USER, AUTH_UPDATE_USER,
	// AUTH_DELETE_USER and AUTH_GET_USER.
	HeaderUsername = "username"
	// HeaderFilter is the name filter of AUTH_LIST_USER.
	HeaderFilter = "filter"
	// HeaderSubject is the subject ("User:<name>") of AUTH_CREATE_ACL,
	// AUTH_UPDATE_ACL, AUTH_DELETE_ACL and AUTH_GET_ACL.
	HeaderSubject = "subject"
	// HeaderPolicyType and HeaderResource narrow AUTH_DELETE_ACL to one
	// entry.
	HeaderPolicyType = "policyType"
	HeaderResource   = "resource"
	// HeaderSubjectFilter and HeaderResourceFilter filter AUTH_LIST_ACL.
	HeaderSubjectFilter  = "subjectFilter"
	HeaderResourceFilter = "resourceFilter"
)

// UserInfo is RocketMQ's UserInfo body (AUTH_CREATE_USER and
// AUTH_UPDATE_USER requests, AUTH_GET_USER answers; AUTH_LIST_USER answers
// a JSON array of them). Fields are in the order fastjson writes them
// (alphabetical); absent fields are left out, as fastjson leaves nulls.
type UserInfo struct {
	Password   string `json:"password,omitempty"`
	UserStatus string `json:"userStatus,omitempty"`
	UserType   string `json:"userType,omitempty"`
	Username   string `json:"username,omitempty"`
}

// AclInfo is RocketMQ's AclInfo body (AUTH_CREATE_ACL and AUTH_UPDATE_ACL
// requests, AUTH_GET_ACL answers; AUTH_LIST_ACL answers a JSON array).
type AclInfo struct {
	Policies []PolicyInfo `json:"policies,omitempty"`
	Subject  string       `json:"subject,omitempty"`
}

// PolicyInfo is AclInfo.PolicyInfo.
type PolicyInfo struct {
	Entries    []PolicyEntryInfo `json:"entries,omitempty"`
	PolicyType string            `json:"policyType,omitempty"`
}

// PolicyEntryInfo is AclInfo.PolicyEntryInfo.
type PolicyEntryInfo struct {
	Actions   []string `json:"actions,omitempty"`
	Decision  string   `json:"decision,omitempty"`
	Resource  string   `json:"resource,omitempty"`
	SourceIps []string `json:"sourceIps,omitempty"`
}

// DecodeUserInfo reads a UserInfo body.
func DecodeUserInfo(b []byte) (UserInfo, error) {
	var u UserInfo
	if err := json.Unmarshal(b, &u); err != nil {
		return UserInfo{}, fmt.Errorf("%w: user body: %v", ErrInvalid, err)
	}
	return u, nil
}

// DecodeAclInfo reads an AclInfo body.
func DecodeAclInfo(b []byte) (AclInfo, error) {
	var a AclInfo
	if err := json.Unmarshal(b, &a); err != nil {
		return AclInfo{}, fmt.Errorf("%w: acl body: %v", ErrInvalid, err)
	}
	return a, nil
}

// UserToInfo converts a user for an answer; the password is left out
// unless withPassword (RocketMQ's AUTH_GET_USER answers it).
func UserToInfo(u User, withPassword bool) UserInfo {
	info := UserInfo{Username: u.Username, UserType: string(u.Type), UserStatus: string(u.Status)}
	if withPassword {
		info.Password = u.Password
	}
	return info
}

// InfoToUser converts a request body to a user, checking its type and
// status. username, when not empty, is the header's and wins over the
// body's, as in RocketMQ.
func InfoToUser(info UserInfo, username string) (User, error) {
	if username != "" {
		info.Username = username
	}
	if info.Username == "" {
		return User{}, fmt.Errorf("%w: The username is blank", ErrInvalid)
	}
	t, err := ParseUserType(info.UserType)
	if err != nil {
		return User{}, err
	}
	s, err := ParseUserStatus(info.UserStatus)
	if err != nil {
		return User{}, err
	}
	return User{Username: info.Username, Password: info.Password, Type: t, Status: s}, nil
}

// ACLToInfo converts an ACL for an answer.
func ACLToInfo(a ACL) AclInfo {
	info := AclInfo{Subject: SubjectKey(a.Username)}
	for _, p := range a.Policies {
		pi := PolicyInfo{PolicyType: string(p.Type)}
		for _, e := range p.Entries {
			ei := PolicyEntryInfo{Resource: e.Resource.Key(), Decision: string(e.Decision)}
			for _, act := range e.Actions {
				ei.Actions = append(ei.Actions, string(act))
			}
			ei.SourceIps = append(ei.SourceIps, e.SourceIPs...)
			pi.Entries = append(pi.Entries, ei)
		}
		info.Policies = append(info.Policies, pi)
	}
	return info
}

// InfoToACL converts a request body to an ACL, checking every resource,
// action, decision and source address. subject, when the body has none,
// is the header's. Policies without entries are dropped, as in RocketMQ.
func InfoToACL(info AclInfo, subject string) (ACL, error) {
	if info.Subject == "" {
		info.Subject = subject
	}
	name, err := ParseSubject(info.Subject)
	if err != nil {
		return ACL{}, err
	}
	if len(info.Policies) == 0 {
		return ACL{}, fmt.Errorf("%w: The body of acl is null", ErrInvalid)
	}
	a := ACL{Username: name}
	for _, pi := range info.Policies {
		pt, err := ParsePolicyType(pi.PolicyType)
		if err != nil {
			return ACL{}, err
		}
		if len(pi.Entries) == 0 {
			continue
		}
		p := Policy{Type: pt}
		for _, ei := range pi.Entries {
			e, err := infoToEntry(ei)
			if err != nil {
				return ACL{}, err
			}
			p.Entries = append(p.Entries, e)
		}
		a.Merge([]Policy{p})
	}
	if len(a.Policies) == 0 {
		return ACL{}, fmt.Errorf("%w: the policies of %s have no entries", ErrInvalid, info.Subject)
	}
	return a, nil
}

func infoToEntry(ei PolicyEntryInfo) (Entry, error) {
	r, err := ParseResource(ei.Resource)
	if err != nil {
		return Entry{}, err
	}
	if len(ei.Actions) == 0 {
		return Entry{}, fmt.Errorf("%w: the actions of %s are empty", ErrInvalid, ei.Resource)
	}
	e := Entry{Resource: r}
	for _, s := range ei.Actions {
		act, err := ParseAction(s)
		if err != nil {
			return Entry{}, err
		}
		e.Actions = append(e.Actions, act)
	}
	if e.Decision, err = ParseDecision(ei.Decision); err != nil {
		return Entry{}, err
	}
	for _, ip := range ei.SourceIps {
		if err := ValidSourceIP(ip); err != nil {
			return Entry{}, err
		}
		e.SourceIPs = append(e.SourceIPs, ip)
	}
	return e, nil
}
