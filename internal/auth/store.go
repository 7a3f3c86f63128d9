package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/spoolmq/spool/internal/vfs"
)

// File names of the store, in its directory.
const (
	UsersFile = "users.json"
	ACLsFile  = "acls.json"
)

// maxStoreFile bounds what the store reads from one file.
const maxStoreFile = 64 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Store is the durable set of users and ACLs of one directory. Every
// method is safe for concurrent use; a change is durable when it returns
// nil, and a change that fails leaves the store as it was.
type Store struct {
	fs  vfs.FS
	dir string

	mu    sync.RWMutex
	users map[string]User
	acls  map[string]ACL
}

// OpenStore reads the store of dir (created when missing). A file that
// cannot be what Spool wrote fails with an error matching ErrCorrupt and
// corrupt.ErrCorruption.
func OpenStore(fsys vfs.FS, dir string) (*Store, error) {
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("auth store: %w", err)
	}
	s := &Store{fs: fsys, dir: dir, users: map[string]User{}, acls: map[string]ACL{}}
	var users []UserInfo
	if err := s.load(UsersFile, &users); err != nil {
		return nil, err
	}
	for _, info := range users {
		u, err := InfoToUser(info, "")
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, filepath.Join(dir, UsersFile), err)
		}
		s.users[u.Username] = withUserDefaults(u)
	}
	var acls []AclInfo
	if err := s.load(ACLsFile, &acls); err != nil {
		return nil, err
	}
	for _, info := range acls {
		a, err := InfoToACL(info, "")
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, filepath.Join(dir, ACLsFile), err)
		}
		s.acls[a.Username] = a
	}
	return s, nil
}

type envelope struct {
	CRC32 uint32          `json:"crc32"`
	Data  json.RawMessage `json:"data"`
}

func (s *Store) load(name string, into any) error {
	path := filepath.Join(s.dir, name)
	b, err := readFile(s.fs, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("auth store: %w", err)
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil || env.Data == nil {
		return fmt.Errorf("%w: %s: not a store file", ErrCorrupt, path)
	}
	if crc32Checksum(env.Data) != env.CRC32 {
		return fmt.Errorf("%w: %s: checksum mismatch", ErrCorrupt, path)
	}
	if err := json.Unmarshal(env.Data, into); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	return nil
}

func readFile(fsys vfs.FS, path string) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		return nil, err
	}
	if n > maxStoreFile {
		return nil, fmt.Errorf("%w: %s: %d bytes", ErrCorrupt, path, n)
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil && int64(len(b)) != n {
		return nil, err
	}
	return b, nil
}

// writeLocked replaces one file with v.
func (s *Store) writeLocked(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	out, err := json.Marshal(envelope{CRC32: crc32Checksum(data), Data: data})
	if err != nil {
		return err
	}
	return vfs.WriteFileAtomic(s.fs, filepath.Join(s.dir, name), out, nil)
}

func (s *Store) saveUsersLocked(users map[string]User) error {
	list := make([]UserInfo, 0, len(users))
	for _, u := range sortedUsers(users, "") {
		list = append(list, UserToInfo(u, true))
	}
	return s.writeLocked(UsersFile, list)
}

func (s *Store) saveACLsLocked(acls map[string]ACL) error {
	list := make([]AclInfo, 0, len(acls))
	for _, a := range sortedACLs(acls, "", "") {
		list = append(list, ACLToInfo(a))
	}
	return s.writeLocked(ACLsFile, list)
}

func withUserDefaults(u User) User {
	if u.Type == "" {
		u.Type = Normal
	}
	if u.Status == "" {
		u.Status = Enabled
	}
	return u
}

// User returns the user named name.
func (s *Store) User(name string) (User, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	u, ok := s.users[name]
	return u, ok
}

// Lookup returns the user named name or nil, for Authenticate.
func (s *Store) Lookup(name string) *User {
	if u, ok := s.User(name); ok {
		return &u
	}
	return nil
}

// Users lists the users whose name contains filter ("" is all), by name.
func (s *Store) Users(filter string) []User {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return sortedUsers(s.users, filter)
}

func sortedUsers(users map[string]User, filter string) []User {
	out := make([]User, 0, len(users))
	for _, u := range users {
		if strings.Contains(u.Username, filter) {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Username < out[j].Username })
	return out
}

// CreateUser adds a user (type Normal and status enabled unless given);
// it fails with ErrExists when the name is taken.
func (s *Store) CreateUser(u User) error {
	if u.Username == "" {
		return fmt.Errorf("%w: The username is blank", ErrInvalid)
	}
	if u.Password == "" {
		return fmt.Errorf("%w: password can not be blank", ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[u.Username]; ok {
		return fmt.Errorf("%w: The user is existed", ErrExists)
	}
	next := copyMap(s.users)
	next[u.Username] = withUserDefaults(u)
	if err := s.saveUsersLocked(next); err != nil {
		return err
	}
	s.users = next
	return nil
}

// UpdateUser changes a user as RocketMQ does: a non-empty password, type
// or status replaces the old one, an empty one keeps it. It fails with
// ErrNotFound for an unknown user.
func (s *Store) UpdateUser(u User) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.users[u.Username]
	if !ok {
		return fmt.Errorf("%w: The user is not exist", ErrNotFound)
	}
	if u.Password != "" {
		old.Password = u.Password
	}
	if u.Type != "" {
		old.Type = u.Type
	}
	if u.Status != "" {
		old.Status = u.Status
	}
	next := copyMap(s.users)
	next[u.Username] = old
	if err := s.saveUsersLocked(next); err != nil {
		return err
	}
	s.users = next
	return nil
}

// DeleteUser removes a user and its ACL; an unknown user is no error, as
// in RocketMQ.
func (s *Store) DeleteUser(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, hasUser := s.users[name]
	_, hasACL := s.acls[name]
	if hasACL {
		next := copyMap(s.acls)
		delete(next, name)
		if err := s.saveACLsLocked(next); err != nil {
			return err
		}
		s.acls = next
	}
	if hasUser {
		next := copyMap(s.users)
		delete(next, name)
		if err := s.saveUsersLocked(next); err != nil {
			return err
		}
		s.users = next
	}
	return nil
}

// ACL returns the ACL of user name.
func (s *Store) ACL(name string) (ACL, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, ok := s.acls[name]
	if !ok {
		return ACL{}, false
	}
	return a.Clone(), true
}

// ACLs lists the ACLs whose subject contains subjectFilter and that have
// an entry whose resource key contains resourceFilter ("" matches all),
// by user name.
func (s *Store) ACLs(subjectFilter, resourceFilter string) []ACL {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return sortedACLs(s.acls, subjectFilter, resourceFilter)
}

func sortedACLs(acls map[string]ACL, subjectFilter, resourceFilter string) []ACL {
	out := make([]ACL, 0, len(acls))
	for _, a := range acls {
		if !strings.Contains(SubjectKey(a.Username), subjectFilter) {
			continue
		}
		if resourceFilter != "" && !hasResource(a, resourceFilter) {
			continue
		}
		out = append(out, a.Clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Username < out[j].Username })
	return out
}

func hasResource(a ACL, filter string) bool {
	for _, p := range a.Policies {
		for _, e := range p.Entries {
			if strings.Contains(e.Resource.Key(), filter) {
				return true
			}
		}
	}
	return false
}

// PutACL creates the ACL of a user or merges a into it (RocketMQ's
// createAcl and updateAcl both do so: an entry replaces the entry of the
// same resource in the policy of the same type). The user must exist
// (ErrNotFound).
func (s *Store) PutACL(a ACL) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[a.Username]; !ok {
		return fmt.Errorf("%w: The subject of %s is not exist.", ErrNotFound, SubjectKey(a.Username))
	}
	merged := ACL{Username: a.Username}
	if old, ok := s.acls[a.Username]; ok {
		merged = old.Clone()
	}
	merged.Merge(a.Clone().Policies)
	next := copyMap(s.acls)
	next[a.Username] = merged
	if err := s.saveACLsLocked(next); err != nil {
		return err
	}
	s.acls = next
	return nil
}

// DeleteACL removes the ACL of a user (r nil) or the entry of resource r
// from its policy of type t ("" is Custom), and the ACL when no policy is
// left. It fails with ErrNotFound when the user or the ACL is missing.
func (s *Store) DeleteACL(name string, t PolicyType, r *Resource) error {
	if t == "" {
		t = Custom
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[name]; !ok {
		return fmt.Errorf("%w: The subject is not exist.", ErrNotFound)
	}
	old, ok := s.acls[name]
	if !ok {
		return fmt.Errorf("%w: The acl is not exist.", ErrNotFound)
	}
	next := copyMap(s.acls)
	if r == nil {
		delete(next, name)
	} else {
		a := old.Clone()
		a.Remove(t, *r)
		if len(a.Policies) == 0 {
			delete(next, name)
		} else {
			next[name] = a
		}
	}
	if err := s.saveACLsLocked(next); err != nil {
		return err
	}
	s.acls = next
	return nil
}

func copyMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}
