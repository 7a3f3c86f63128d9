package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Settings are RocketMQ 5.3's authentication and authorization keys, read
// by the caller (authenticationEnabled, authenticationWhitelist,
// authorizationEnabled, authorizationWhitelist, the user of
// innerClientAuthenticationCredentials, the broker's brokerClusterName).
type Settings struct {
	AuthenticationEnabled   bool
	AuthenticationWhitelist map[int32]bool
	AuthorizationEnabled    bool
	AuthorizationWhitelist  map[int32]bool
	InnerUser               string
	ClusterName             string
}

// Directory is where Gate finds users and ACLs (a Store, or a cache of
// one); both return nil for a missing name.
type Directory interface {
	Lookup(username string) *User
	LookupACL(username string) *ACL
}

// LookupACL returns the ACL of user name or nil, for Gate, which only
// reads it. It is not a deep copy: the store never changes an ACL it
// holds (a change clones it and replaces the map), so the policies
// returned stay as they were.
func (s *Store) LookupACL(name string) *ACL {
	s.mu.RLock()
	a, ok := s.acls[name]
	s.mu.RUnlock()
	if !ok {
		return nil
	}
	return &a
}

// Stage names where a request was refused.
type Stage string

// Stages.
const (
	Authentication Stage = "authentication"
	Authorization  Stage = "authorization"
)

// Outcome is Gate's answer. A refusal is answered NO_PERMISSION (16) with
// Remark; Username, Stage and Refused (the requirement refused, if one
// was) are for the refusal counter and the log.
type Outcome struct {
	Allowed  bool
	Remark   string
	Username string
	Stage    Stage
	Refused  *Requirement
	// Authenticated is set when the request's signature was verified
	// (not when authentication is off or the code is whitelisted).
	Authenticated bool
}

// Gate decides one request as RocketMQ 5.3's authentication and
// authorization pipelines do: authentication (unless disabled or the code
// is whitelisted) checks the signature of the user named by AccessKey;
// authorization (unless disabled or the code is whitelisted) asks for
// every requirement of the code (Requirements) and refuses at the first
// one Authorize refuses. An Inner code is allowed to the inner user only;
// an InnerOrChecked code to the inner user and to those its requirements
// allow; a code without a rule to super users only. It is pure: every input is
// an argument. Authorization without authentication trusts the AccessKey
// as named, as RocketMQ does: enable both.
func Gate(s Settings, dir Directory, code int32, ext map[string]string, body []byte, version int32, sourceIP string) Outcome {
	name := ext[AccessKeyField]
	out := Outcome{Username: name}
	var user *User
	if s.AuthenticationEnabled && !s.AuthenticationWhitelist[code] {
		u, err := Authenticate(ext, body, version, dir.Lookup)
		if err != nil {
			out.Stage, out.Remark = Authentication, Remark(err)
			return out
		}
		user = u
		out.Authenticated = true
	}
	if !s.AuthorizationEnabled || s.AuthorizationWhitelist[code] {
		out.Allowed = true
		return out
	}
	out.Stage = Authorization
	if user == nil {
		if name == "" {
			out.Remark = "Authorization failed: the request has no AccessKey."
			return out
		}
		if user = dir.Lookup(name); user == nil {
			out.Remark = fmt.Sprintf("User:%s not found.", name)
			return out
		}
	}
	isInner := s.InnerUser != "" && user.Username == s.InnerUser && user.Status != Disabled
	if isInner && Rules[code].Kind == InnerOrChecked {
		out.Allowed = true
		return out
	}
	reqs, inner, err := Requirements(code, ext, body, s.ClusterName)
	switch {
	case inner:
		if !isInner {
			out.Remark = fmt.Sprintf("%s has no permission to send request code %d from %s, only the inner credentials may.",
				SubjectKey(user.Username), code, sourceIP)
			return out
		}
		out.Allowed = true
		return out
	case err != nil:
		if user.Type == Super && user.Status != Disabled {
			out.Allowed = true
			return out
		}
		out.Remark = fmt.Sprintf("%s has no permission to send request code %d from %s, only super users may.",
			SubjectKey(user.Username), code, sourceIP)
		return out
	}
	acl := dir.LookupACL(user.Username)
	for i := range reqs {
		v := Authorize(user, acl, Request{Username: user.Username, Resource: reqs[i].Resource, Actions: reqs[i].Actions, SourceIP: sourceIP})
		if !v.Allowed {
			out.Remark, out.Refused = v.Reason, &reqs[i]
			return out
		}
	}
	out.Allowed = true
	return out
}

// Remark is the RocketMQ text of an error of Authenticate (what follows
// the package's own prefix), or the error's text.
func Remark(err error) string {
	msg := err.Error()
	for _, e := range []error{ErrUnauthenticated, ErrUnknownUser, ErrDisabledUser, ErrSignature} {
		if errors.Is(err, e) {
			return strings.TrimPrefix(msg, e.Error()+": ")
		}
	}
	return msg
}

// ParseCodeList reads a whitelist key: request codes separated by commas.
func ParseCodeList(s string) (map[int32]bool, error) {
	out := map[int32]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%w: request code %q", ErrInvalid, f)
		}
		out[int32(n)] = true
	}
	return out, nil
}

// Credentials are what a client signs with (RocketMQ's SessionCredentials).
type Credentials struct {
	AccessKey     string `json:"accessKey"`
	SecretKey     string `json:"secretKey"`
	SecurityToken string `json:"securityToken,omitempty"`
}

// ParseCredentials reads innerClientAuthenticationCredentials:
// {"accessKey":"...","secretKey":"..."}.
func ParseCredentials(s string) (Credentials, error) {
	var c Credentials
	if err := json.Unmarshal([]byte(s), &c); err != nil || c.AccessKey == "" || c.SecretKey == "" {
		return Credentials{}, fmt.Errorf("%w: credentials (want {\"accessKey\":...,\"secretKey\":...})", ErrInvalid)
	}
	return c, nil
}

// ParseInitUser reads initAuthenticationUser: {"username":"...",
// "password":"..."}; the user is a super user, as in RocketMQ.
func ParseInitUser(s string) (User, error) {
	var u struct {
		Username string `json:"username"`
		Password string `json:"password"`
	}
	if err := json.Unmarshal([]byte(s), &u); err != nil || u.Username == "" || u.Password == "" {
		return User{}, fmt.Errorf("%w: initAuthenticationUser (want {\"username\":...,\"password\":...})", ErrInvalid)
	}
	return User{Username: u.Username, Password: u.Password, Type: Super, Status: Enabled}, nil
}

// SignRequest adds AccessKey, SecurityToken (when set) and Signature to
// the ext fields of an outgoing request, as Java's AclClientRPCHook does
// (the token is signed).
func SignRequest(ext map[string]string, body []byte, version int32, c Credentials) {
	ext[AccessKeyField] = c.AccessKey
	if c.SecurityToken != "" {
		ext[SecurityTokenField] = c.SecurityToken
	}
	var sig [sigLen]byte
	signature(&sig, ext, body, version, c.SecretKey)
	ext[SignatureField] = string(sig[:])
}
