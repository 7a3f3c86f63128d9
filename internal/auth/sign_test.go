package auth

import (
	"errors"
	"testing"
)

// The expected signatures were computed independently (Python's hmac
// module, HMAC-SHA1, standard Base64) from the content written out here.
func TestSignKnownVectors(t *testing.T) {
	ext := map[string]string{"c": "TopicA", "AccessKey": "rocketmq2", "b": "PID_A", "a": "0", "Signature": "ignored"}
	if got := string(Content(ext, []byte("hello"), 479)); got != "rocketmq20PID_ATopicAhello" {
		t.Fatalf("content %q", got)
	}
	if got := Sign(Content(ext, []byte("hello"), 479), "12345678"); got != "iYq2XrAsIG1kuphgUUD0kZZoytE=" {
		t.Fatalf("signature %q", got)
	}
	tok := map[string]string{"topic": "TopicA", "AccessKey": "rocketmq2", "SecurityToken": "tok"}
	if got := Sign(Content(tok, nil, 479), "12345678"); got != "6qzUBBxpGi/W/wHdgWOeuLycNCs=" {
		t.Fatalf("signature with a security token %q", got)
	}
}

func TestContentLeavesOutUniqueKeyQueryForOldClients(t *testing.T) {
	ext := map[string]string{"AccessKey": "ak", "_UNIQUE_KEY_QUERY": "true", "topic": "T"}
	if got := string(Content(ext, nil, 399)); got != "akT" {
		t.Fatalf("V4_9_3 content %q", got)
	}
	if got := string(Content(ext, nil, 400)); got != "aktrueT" {
		t.Fatalf("newer content %q", got)
	}
}

func TestVerify(t *testing.T) {
	ext := map[string]string{"AccessKey": "alice", "topic": "T", "queueId": "3"}
	body := []byte("payload")
	ext[SignatureField] = Sign(Content(ext, body, 479), "s3cret")
	if err := Verify(ext, body, 479, "s3cret"); err != nil {
		t.Fatalf("good signature: %v", err)
	}
	cases := map[string]func(map[string]string) ([]byte, string){
		"wrong secret": func(m map[string]string) ([]byte, string) { return body, "other" },
		"changed body": func(m map[string]string) ([]byte, string) { return []byte("payloaD"), "s3cret" },
		"changed field": func(m map[string]string) ([]byte, string) {
			m["queueId"] = "4"
			return body, "s3cret"
		},
		"added field": func(m map[string]string) ([]byte, string) {
			m["x"] = "1"
			return body, "s3cret"
		},
		"no signature": func(m map[string]string) ([]byte, string) {
			delete(m, SignatureField)
			return body, "s3cret"
		},
		"truncated signature": func(m map[string]string) ([]byte, string) {
			m[SignatureField] = m[SignatureField][:10]
			return body, "s3cret"
		},
	}
	for name, mutate := range cases {
		m := map[string]string{}
		for k, v := range ext {
			m[k] = v
		}
		b, secret := mutate(m)
		err := Verify(m, b, 479, secret)
		if !errors.Is(err, ErrSignature) {
			t.Errorf("%s: err %v, want ErrSignature", name, err)
		}
	}
}

func TestAuthenticate(t *testing.T) {
	users := map[string]*User{
		"alice": {Username: "alice", Password: "pw", Type: Normal, Status: Enabled},
		"bob":   {Username: "bob", Password: "pw", Type: Normal, Status: Disabled},
	}
	lookup := func(n string) *User { return users[n] }
	sign := func(ak, secret string) map[string]string {
		m := map[string]string{"topic": "T"}
		if ak != "" {
			m[AccessKeyField] = ak
		}
		m[SignatureField] = Sign(Content(m, nil, 479), secret)
		return m
	}
	if u, err := Authenticate(sign("alice", "pw"), nil, 479, lookup); err != nil || u.Username != "alice" {
		t.Fatalf("alice: %v %v", u, err)
	}
	for _, c := range []struct {
		ak, secret string
		want       error
		text       string
	}{
		{"", "pw", ErrUnauthenticated, "auth: not authenticated: username cannot be null."},
		{"carol", "pw", ErrUnknownUser, "auth: unknown user: User:carol is not found."},
		{"bob", "pw", ErrDisabledUser, "auth: user disabled: User:bob is disabled."},
		{"alice", "wrong", ErrSignature, "auth: bad signature: check signature failed."},
	} {
		_, err := Authenticate(sign(c.ak, c.secret), nil, 479, lookup)
		if !errors.Is(err, c.want) || err.Error() != c.text {
			t.Errorf("%s/%s: %v, want %q", c.ak, c.secret, err, c.text)
		}
	}
}

// FuzzVerify: a signature made by Sign verifies; a changed body, a
// changed field or any other signature does not; nothing panics.
func FuzzVerify(f *testing.F) {
	f.Add("alice", "s3cret", "topic", "TopicA", []byte("body"), "")
	f.Add("", "", "", "", []byte{}, "AAAA")
	f.Add("ak", "sk", "Signature", "x", []byte{0xff, 0}, "iYq2XrAsIG1kuphgUUD0kZZoytE=")
	f.Add("ak", "sk", "_UNIQUE_KEY_QUERY", "true", []byte(nil), "=")
	f.Fuzz(func(t *testing.T, ak, secret, key, value string, body []byte, forged string) {
		ext := map[string]string{AccessKeyField: ak, key: value}
		ext[SignatureField] = Sign(Content(ext, body, 479), secret)
		if err := Verify(ext, body, 479, secret); err != nil {
			t.Fatalf("a signature made by Sign fails: %v", err)
		}
		tampered := append(append([]byte(nil), body...), 'x')
		if Verify(ext, tampered, 479, secret) == nil {
			t.Fatal("a changed body verifies")
		}
		if key != SignatureField {
			changed := map[string]string{}
			for k, v := range ext {
				changed[k] = v
			}
			changed[key] = value + "x"
			if Verify(changed, body, 479, secret) == nil {
				t.Fatal("a changed field verifies")
			}
		}
		if forged != ext[SignatureField] {
			ext[SignatureField] = forged
			if Verify(ext, body, 479, secret) == nil {
				t.Fatalf("forged signature %q verifies", forged)
			}
		}
	})
}
