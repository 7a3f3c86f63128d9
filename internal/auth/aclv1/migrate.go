package aclv1

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spoolmq/spool/internal/auth"
)

// Migrate converts the accounts of a plain_acl.yml into ACL 2.0 users and
// ACLs, as RocketMQ 5.3's AuthMigrator does: the access key is the user
// name, the secret key the password, an admin account a super user; each
// topicPerms and groupPerms entry becomes a Custom entry on the literal
// topic or group, defaultTopicPerm and defaultGroupPerm Default entries
// on Topic:* and Group:*. A permission maps to actions PUB -> Pub, SUB ->
// Sub, PUB|SUB -> Pub and Sub, DENY (and anything else) -> All, and to
// the decision Deny for DENY, Allow otherwise. White addresses are not
// migrated (RocketMQ does not either). An account with no permissions
// gets no ACL.
func Migrate(f File) ([]auth.User, []auth.ACL) {
	var users []auth.User
	var acls []auth.ACL
	for _, a := range f.Accounts {
		u := auth.User{Username: a.AccessKey, Password: a.SecretKey, Type: auth.Normal, Status: auth.Enabled}
		if a.Admin {
			u.Type = auth.Super
		}
		users = append(users, u)
		var custom, def []auth.Entry
		for _, kind := range []struct {
			list []string
			res  func(string) auth.Resource
		}{{a.TopicPerms, auth.TopicResource}, {a.GroupPerms, auth.GroupResource}} {
			for _, p := range kind.list {
				name, perm, ok := strings.Cut(p, "=")
				if !ok || strings.Contains(perm, "=") {
					continue
				}
				custom = append(custom, entryFor(kind.res(strings.TrimSpace(name)), perm))
			}
		}
		if strings.TrimSpace(a.DefaultTopicPerm) != "" {
			def = append(def, entryFor(auth.Resource{Type: auth.Topic, Pattern: auth.AnyPattern}, a.DefaultTopicPerm))
		}
		if strings.TrimSpace(a.DefaultGroupPerm) != "" {
			def = append(def, entryFor(auth.Resource{Type: auth.Group, Pattern: auth.AnyPattern}, a.DefaultGroupPerm))
		}
		acl := auth.ACL{Username: a.AccessKey}
		if len(custom) > 0 {
			acl.Policies = append(acl.Policies, auth.Policy{Type: auth.Custom, Entries: custom})
		}
		if len(def) > 0 {
			acl.Policies = append(acl.Policies, auth.Policy{Type: auth.Default, Entries: def})
		}
		if len(acl.Policies) > 0 {
			acls = append(acls, acl)
		}
	}
	return users, acls
}

func entryFor(r auth.Resource, perm string) auth.Entry {
	perm = strings.TrimSpace(perm)
	e := auth.Entry{Resource: r, Decision: auth.Allow}
	switch perm {
	case "PUB":
		e.Actions = []auth.Action{auth.Pub}
	case "SUB":
		e.Actions = []auth.Action{auth.Sub}
	case "PUB|SUB", "SUB|PUB":
		e.Actions = []auth.Action{auth.Pub, auth.Sub}
	default:
		e.Actions = []auth.Action{auth.All}
	}
	if perm == "DENY" || perm == "" {
		e.Decision = auth.Deny
	}
	return e
}

// MigrateInto writes the migration of f into the store, skipping every
// account whose user already exists (RocketMQ migrates an account once).
// It returns the names of the users it created.
func MigrateInto(s *auth.Store, f File) ([]string, error) {
	users, acls := Migrate(f)
	byName := map[string]auth.ACL{}
	for _, a := range acls {
		byName[a.Username] = a
	}
	var created []string
	for _, u := range users {
		if err := s.CreateUser(u); err != nil {
			if errors.Is(err, auth.ErrExists) {
				continue
			}
			return created, fmt.Errorf("migrate %s: %w", u.Username, err)
		}
		created = append(created, u.Username)
		if a, ok := byName[u.Username]; ok {
			if err := s.PutACL(a); err != nil {
				return created, fmt.Errorf("migrate the ACL of %s: %w", u.Username, err)
			}
		}
	}
	return created, nil
}
