package auth

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spoolmq/spool/internal/vfs"
)

// FuzzAclInfo: a body either fails with ErrInvalid or gives an ACL that
// encodes to a body that decodes to the same ACL.
func FuzzAclInfo(f *testing.F) {
	f.Add([]byte(aclJSON))
	f.Add([]byte(`{"subject":"User:a","policies":[{"entries":[{"resource":"Any:x","actions":["any"],"decision":"deny"}]}]}`))
	f.Add([]byte(`{"subject":"User:a","policies":[{"entries":[{"resource":"Topic:a*b*","actions":["Pub"],"decision":"Allow","sourceIps":["::1/128"]}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := DecodeAclInfo(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("decode: %v", err)
			}
			return
		}
		a, err := InfoToACL(info, "User:h")
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("convert: %v", err)
			}
			return
		}
		out, err := json.Marshal(ACLToInfo(a))
		if err != nil {
			t.Fatal(err)
		}
		info2, err := DecodeAclInfo(out)
		if err != nil {
			t.Fatalf("re-decode %s: %v", out, err)
		}
		b2, err := InfoToACL(info2, "")
		if err != nil || !reflect.DeepEqual(a, b2) {
			t.Fatalf("round trip\n %+v\n %+v %v", a, b2, err)
		}
	})
}

// FuzzStoreFile: any bytes in a store file open or fail with a
// corruption error; nothing panics.
func FuzzStoreFile(f *testing.F) {
	f.Add([]byte(`{"crc32":0,"data":[]}`), true)
	f.Add([]byte(`{"crc32":1,"data":[]}`), false)
	f.Add([]byte{0, 1, 2}, true)
	f.Fuzz(func(t *testing.T, b []byte, users bool) {
		m := vfs.NewMemFS()
		if err := m.MkdirAll("/s", 0o755); err != nil {
			t.Fatal(err)
		}
		name := ACLsFile
		if users {
			name = UsersFile
		}
		if err := vfs.WriteFileAtomic(m, filepath.Join("/s", name), b, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenStore(m, "/s"); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("open: %v", err)
		}
	})
}

// FuzzRequirements: any body of a body-reading code gives requirements
// or ErrInvalid.
func FuzzRequirements(f *testing.F) {
	f.Add(int32(34), []byte(`{"consumerDataSet":[{"groupName":"G","subscriptionDataSet":[{"topic":"A"}]}]}`))
	f.Add(int32(41), []byte(`{"consumerGroup":"G","mqSet":[{"topic":"%RETRY%G"}]}`))
	f.Add(int32(200), []byte(`{"groupName":"G"}`))
	f.Fuzz(func(t *testing.T, code int32, body []byte) {
		if _, _, err := Requirements(code, map[string]string{"topic": string(body)}, body, "c"); err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("%v", err)
		}
	})
}

// FuzzSignature: a request signed with a secret verifies with it, and
// fails with ErrSignature once its body or one of its signed fields
// changes, or under another secret; Authenticate on arbitrary fields
// (a forged Signature among them) never panics and lets nothing through
// without the user's secret.
func FuzzSignature(f *testing.F) {
	f.Add("topicA", "producerGroup", []byte("hello"), int32(317), "secret", "forged")
	f.Add("", "_UNIQUE_KEY_QUERY", []byte{}, int32(399), "s", "")
	f.Add("x\x00y", "Signature", []byte{0xff}, int32(-1), "", "AAAA")
	f.Fuzz(func(t *testing.T, value, key string, body []byte, version int32, secret, forged string) {
		ext := map[string]string{"topic": value, key: value}
		SignRequest(ext, body, version, Credentials{AccessKey: "user1", SecretKey: secret})
		if want := Sign(Content(ext, body, version), secret); ext[SignatureField] != want {
			t.Fatalf("SignRequest wrote %q, the content's signature is %q", ext[SignatureField], want)
		}
		if err := Verify(ext, body, version, secret); err != nil {
			t.Fatalf("own signature refused: %v", err)
		}
		if err := Verify(ext, append(append([]byte(nil), body...), 'x'), version, secret); !errors.Is(err, ErrSignature) {
			t.Fatalf("changed body: %v", err)
		}
		changed := map[string]string{}
		for k, v := range ext {
			changed[k] = v
		}
		changed["topic"] = value + "!"
		if err := Verify(changed, body, version, secret); !errors.Is(err, ErrSignature) {
			t.Fatalf("changed field: %v", err)
		}
		if err := Verify(ext, body, version, secret+"!"); !errors.Is(err, ErrSignature) {
			t.Fatalf("other secret: %v", err)
		}
		lookup := func(name string) *User {
			if name != "user1" {
				return nil
			}
			return &User{Username: "user1", Password: secret + "?", Type: Normal, Status: Enabled}
		}
		ext[SignatureField] = forged
		if u, err := Authenticate(ext, body, version, lookup); err == nil {
			t.Fatalf("forged signature %q let %+v through", forged, u)
		}
	})
}
