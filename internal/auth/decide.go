package auth

import (
	"fmt"
	"sort"
	"strings"
)

// Request is one authorization question: may this user do these actions
// (any one of them suffices, as in RocketMQ) on this resource from this
// source address?
type Request struct {
	Username string // the AccessKey of the request
	Resource Resource
	Actions  []Action
	SourceIP string
}

// Verdict is the answer to a Request. Reason is RocketMQ's text for a
// refusal (the remark of the NO_PERMISSION answer) or a short note for a
// grant; Entry is the deciding entry, if one decided.
type Verdict struct {
	Allowed bool
	Reason  string
	Entry   *Entry
}

// Authorize decides a Request for user u (nil: unknown) with its ACL acl
// (nil: none), as RocketMQ 5.3's UserAuthorizationHandler and
// AclAuthorizationHandler do:
//
//   - an unknown user is refused, a disabled user is refused;
//   - a super user is allowed everything;
//   - the entries of the Custom policy that match the resource, one of the
//     actions and the source address are collected; only when none
//     matches are the Default policy's entries collected;
//   - no matching entry: refused ("no matched policies");
//   - otherwise the most specific entry decides: an entry of a typed
//     resource before "*", a literal before a prefixed before a "Type:*",
//     a longer prefix before a shorter one; between entries equally
//     specific, Deny wins;
//   - a Deny entry refuses ("the decision is deny"), an Allow entry allows.
//
// It is pure: no I/O, no clock, no state.
func Authorize(u *User, acl *ACL, r Request) Verdict {
	if u == nil {
		return Verdict{Reason: fmt.Sprintf("User:%s not found.", r.Username)}
	}
	if u.Status == Disabled {
		return Verdict{Reason: fmt.Sprintf("User:%s is disabled.", u.Username)}
	}
	if u.Type == Super {
		return Verdict{Allowed: true, Reason: "super user"}
	}
	if acl == nil {
		return refuse(u, r, "no matched policies.")
	}
	matched := matching(acl.Policy(Custom), r)
	if len(matched) == 0 {
		matched = matching(acl.Policy(Default), r)
	}
	if len(matched) == 0 {
		return refuse(u, r, "no matched policies.")
	}
	if len(matched) > 1 {
		sort.SliceStable(matched, func(i, j int) bool { return precedes(matched[i], matched[j]) })
	}
	e := matched[0]
	if e.Decision != Allow {
		v := refuse(u, r, "the decision is deny.")
		v.Entry = e
		return v
	}
	return Verdict{Allowed: true, Reason: "allowed by " + e.Resource.Key(), Entry: e}
}

func refuse(u *User, r Request, detail string) Verdict {
	return Verdict{Reason: fmt.Sprintf("%s has no permission to access %s from %s, %s",
		SubjectKey(u.Username), r.Resource.Key(), r.SourceIP, detail)}
}

func matching(p *Policy, r Request) []*Entry {
	if p == nil {
		return nil
	}
	var out []*Entry
	for i := range p.Entries {
		e := &p.Entries[i]
		if e.Resource.Matches(r.Resource) && actionMatches(e.Actions, r.Actions) && sourceMatches(e.SourceIPs, r.SourceIP) {
			out = append(out, e)
		}
	}
	return out
}

// actionMatches is RocketMQ's PolicyEntry.isMatchAction.
func actionMatches(have, want []Action) bool {
	if len(have) == 0 {
		return false
	}
	for _, w := range want {
		if w == Any {
			return true
		}
	}
	for _, w := range want {
		for _, h := range have {
			if h == w || h == All {
				return true
			}
		}
	}
	return false
}

// sourceMatches is RocketMQ's Environment.isMatch: an entry without
// source addresses applies everywhere; with them, a request without an
// address never matches.
func sourceMatches(ranges []string, ip string) bool {
	if len(ranges) == 0 {
		return true
	}
	if ip == "" {
		return false
	}
	ip = strings.TrimPrefix(strings.TrimSuffix(ip, "]"), "[")
	for _, c := range ranges {
		if ipInRange(ip, c) {
			return true
		}
	}
	return false
}

// precedes orders matching entries, most specific first (RocketMQ's
// comparePolicyEntries), Deny first between equally specific entries.
func precedes(a, b *Entry) bool {
	if c := specificity(a.Resource, b.Resource); c != 0 {
		return c < 0
	}
	return a.Decision == Deny && b.Decision != Deny
}

// specificity compares two entry resources that match the same request:
// negative when a is more specific.
func specificity(a, b Resource) int {
	if a.Type != b.Type {
		switch {
		case b.Type == AnyType:
			return -1
		case a.Type == AnyType:
			return 1
		}
		return 0
	}
	if a.Pattern == b.Pattern {
		if a.Pattern == Prefixed {
			return len(b.Name) - len(a.Name)
		}
		return 0
	}
	rank := map[Pattern]int{Literal: 0, Prefixed: 1, AnyPattern: 2}
	return rank[a.Pattern] - rank[b.Pattern]
}
