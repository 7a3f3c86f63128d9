package auth

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"syscall"
	"testing"

	"github.com/spoolmq/spool/internal/corrupt"
	"github.com/spoolmq/spool/internal/vfs"
)

const storeDir = "/store/auth"

func mustOpen(t *testing.T, fsys vfs.FS) *Store {
	t.Helper()
	s, err := OpenStore(fsys, storeDir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func aclOf(name string, es ...Entry) ACL {
	return ACL{Username: name, Policies: []Policy{{Type: Custom, Entries: es}}}
}

func TestStoreUsersAndACLs(t *testing.T) {
	s := mustOpen(t, vfs.NewMemFS())
	if err := s.CreateUser(User{Username: "alice", Password: "pw"}); err != nil {
		t.Fatal(err)
	}
	if u, _ := s.User("alice"); u.Type != Normal || u.Status != Enabled {
		t.Fatalf("defaults %+v", u)
	}
	if err := s.CreateUser(User{Username: "alice", Password: "x"}); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	if err := s.CreateUser(User{Username: "nopw"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("no password: %v", err)
	}
	if err := s.UpdateUser(User{Username: "carol", Password: "x"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update unknown: %v", err)
	}
	if err := s.UpdateUser(User{Username: "alice", Status: Disabled}); err != nil {
		t.Fatal(err)
	}
	if u, _ := s.User("alice"); u.Password != "pw" || u.Status != Disabled || u.Type != Normal {
		t.Fatalf("partial update %+v", u)
	}
	if err := s.PutACL(aclOf("carol", entry("Topic:A", Allow, nil, Pub))); !errors.Is(err, ErrNotFound) {
		t.Fatalf("acl of unknown user: %v", err)
	}
	if err := s.PutACL(aclOf("alice", entry("Topic:A", Allow, nil, Pub), entry("Topic:B", Allow, nil, Sub))); err != nil {
		t.Fatal(err)
	}
	if err := s.PutACL(aclOf("alice", entry("Topic:A", Deny, nil, Pub))); err != nil {
		t.Fatal(err)
	}
	a, _ := s.ACL("alice")
	if len(a.Policies[0].Entries) != 2 || a.Policies[0].Entries[0].Decision != Deny {
		t.Fatalf("merged %+v", a)
	}
	a.Policies[0].Entries[0].Decision = Allow // a copy: the store is unchanged
	if b, _ := s.ACL("alice"); b.Policies[0].Entries[0].Decision != Deny {
		t.Fatal("ACL returned the store's own slices")
	}
	if err := s.CreateUser(User{Username: "bob", Password: "pw", Type: Super}); err != nil {
		t.Fatal(err)
	}
	if got := s.Users("o"); len(got) != 1 || got[0].Username != "bob" {
		t.Fatalf("filter: %+v", got)
	}
	if got := s.ACLs("", "Topic:B"); len(got) != 1 || got[0].Username != "alice" {
		t.Fatalf("resource filter: %+v", got)
	}
	if got := s.ACLs("User:bob", ""); len(got) != 0 {
		t.Fatalf("subject filter: %+v", got)
	}
	rb := TopicResource("B")
	if err := s.DeleteACL("alice", "", &rb); err != nil {
		t.Fatal(err)
	}
	if a, _ := s.ACL("alice"); len(a.Policies[0].Entries) != 1 {
		t.Fatalf("after deleting an entry %+v", a)
	}
	if err := s.DeleteACL("bob", "", nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete missing acl: %v", err)
	}
	if err := s.DeleteUser("alice"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.ACL("alice"); ok {
		t.Fatal("a deleted user's ACL is left")
	}
	if err := s.DeleteUser("nobody"); err != nil {
		t.Fatalf("delete unknown user: %v", err)
	}
}

func snapshot(s *Store) ([]User, []ACL) { return s.Users(""), s.ACLs("", "") }

func TestStoreSurvivesReopenAndCrash(t *testing.T) {
	m := vfs.NewMemFS()
	s := mustOpen(t, m)
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("u%d", i)
		if err := s.CreateUser(User{Username: name, Password: "pw" + name}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutACL(aclOf(name, entry("Topic:T"+name, Allow, []string{"10.0.0.0/8"}, Pub, Sub))); err != nil {
			t.Fatal(err)
		}
	}
	users, acls := snapshot(s)
	m.Crash("/", vfs.CrashOptions{Garbage: true})
	r := mustOpen(t, m)
	gu, ga := snapshot(r)
	if !reflect.DeepEqual(gu, users) || !reflect.DeepEqual(ga, acls) {
		t.Fatalf("after a crash\nusers %+v\nwant  %+v\nacls %+v\nwant %+v", gu, users, ga, acls)
	}
}

// A change whose write fails (a failed fsync, a full disk) is not made,
// in memory or on disk, and a crash afterwards leaves the old content.
func TestStoreFailedWriteChangesNothing(t *testing.T) {
	m := vfs.NewMemFS()
	inj := vfs.NewInjector(m)
	s := mustOpen(t, inj)
	if err := s.CreateUser(User{Username: "a", Password: "pw"}); err != nil {
		t.Fatal(err)
	}
	inj.FailSync(inj.Count(vfs.OpSync)+1, syscall.EIO, false)
	if err := s.CreateUser(User{Username: "b", Password: "pw"}); err == nil {
		t.Fatal("create with a failing fsync succeeded")
	}
	if _, ok := s.User("b"); ok {
		t.Fatal("a failed create is visible")
	}
	inj.SetENOSPC(true, false)
	if err := s.UpdateUser(User{Username: "a", Password: "new"}); err == nil {
		t.Fatal("update on a full disk succeeded")
	}
	if u, _ := s.User("a"); u.Password != "pw" {
		t.Fatalf("a failed update is visible: %+v", u)
	}
	inj.SetENOSPC(false, false)
	m.Crash("/", vfs.CrashOptions{Garbage: true})
	r := mustOpen(t, m)
	if got := r.Users(""); len(got) != 1 || got[0].Username != "a" || got[0].Password != "pw" {
		t.Fatalf("after the crash %+v", got)
	}
	if err := r.CreateUser(User{Username: "b", Password: "pw"}); err != nil {
		t.Fatalf("create after recovery: %v", err)
	}
}

func TestStoreCorruptFiles(t *testing.T) {
	m := vfs.NewMemFS()
	s := mustOpen(t, m)
	if err := s.CreateUser(User{Username: "a", Password: "pw"}); err != nil {
		t.Fatal(err)
	}
	good, err := readFile(m, filepath.Join(storeDir, UsersFile))
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-5] ^= 0x01 // inside the data: the CRC no longer holds
	for name, content := range map[string][]byte{
		"garbage":       {0x00, 0xff, 0x13, 0x37},
		"torn":          good[:len(good)/2],
		"empty":         {},
		"flipped bit":   flipped,
		"other json":    []byte(`{"users":[]}`),
		"bad user type": []byte(`{"crc32":` + fmt.Sprint(crcOf(`[{"username":"a","userType":"Root"}]`)) + `,"data":[{"username":"a","userType":"Root"}]}`),
	} {
		for _, file := range []string{UsersFile, ACLsFile} {
			m := vfs.NewMemFS()
			if err := m.MkdirAll(storeDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := vfs.WriteFileAtomic(m, filepath.Join(storeDir, file), content, nil); err != nil {
				t.Fatal(err)
			}
			_, err := OpenStore(m, storeDir)
			if !errors.Is(err, corrupt.ErrCorruption) || !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s in %s: %v, want a corruption error", name, file, err)
			}
		}
	}
}

func crcOf(s string) uint32 { return crc32Checksum([]byte(s)) }

func TestStoreConcurrent(t *testing.T) {
	m := vfs.NewMemFS()
	s := mustOpen(t, m)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				name := fmt.Sprintf("g%d-%d", g, i)
				if err := s.CreateUser(User{Username: name, Password: "pw"}); err != nil {
					t.Error(err)
					return
				}
				if err := s.PutACL(aclOf(name, entry("Topic:*", Allow, nil, Pub))); err != nil {
					t.Error(err)
					return
				}
				s.Users("")
				s.ACLs("", "Topic")
				if s.Lookup(name) == nil {
					t.Errorf("%s not found after create", name)
				}
			}
		}(g)
	}
	wg.Wait()
	r := mustOpen(t, m)
	if len(r.Users("")) != 80 || len(r.ACLs("", "")) != 80 {
		t.Fatalf("%d users, %d acls after reopen", len(r.Users("")), len(r.ACLs("", "")))
	}
}

func TestStoreOnDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	s, err := OpenStore(vfs.OS(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateUser(User{Username: "a", Password: "pw", Type: Super}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, UsersFile+".tmp")); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
	r, err := OpenStore(vfs.OS(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := r.User("a"); !ok || u.Type != Super {
		t.Fatalf("%+v %v", u, ok)
	}
}
