package auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"sort"
)

// Ext field names of a signed request (RocketMQ's SessionCredentials).
const (
	AccessKeyField     = "AccessKey"
	SignatureField     = "Signature"
	SecurityTokenField = "SecurityToken"
)

// uniqueKeyQueryFlag is left out of the content of requests from clients
// of version V4_9_3 (ordinal 399) or older, as RocketMQ does.
const (
	uniqueKeyQueryFlag = "_UNIQUE_KEY_QUERY"
	versionV4_9_3      = 399
)

// Content is the byte string a client signs: the values of every ext
// field but Signature (AccessKey and SecurityToken included), ordered by
// key, concatenated, followed by the body. For a client of version
// V4_9_3 or older the _UNIQUE_KEY_QUERY field is left out.
func Content(ext map[string]string, body []byte, version int32) []byte {
	keys := make([]string, 0, len(ext))
	n := len(body)
	for k, v := range ext {
		if k == SignatureField || (k == uniqueKeyQueryFlag && version <= versionV4_9_3) {
			continue
		}
		keys = append(keys, k)
		n += len(v)
	}
	sort.Strings(keys)
	out := make([]byte, 0, n)
	for _, k := range keys {
		out = append(out, ext[k]...)
	}
	return append(out, body...)
}

// Sign is RocketMQ's AclSigner.calSignature: HMAC-SHA1 of content with
// the secret, in standard Base64.
func Sign(content []byte, secret string) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write(content)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Verify checks the Signature ext field of a request against the secret,
// in constant time. It fails with ErrSignature, wrapped with RocketMQ's
// text ("check signature failed.").
func Verify(ext map[string]string, body []byte, version int32, secret string) error {
	got, ok := ext[SignatureField]
	if !ok || got == "" {
		return fmt.Errorf("%w: check signature failed.", ErrSignature)
	}
	if !signatureMatches(got, ext, body, version, secret) {
		return fmt.Errorf("%w: check signature failed.", ErrSignature)
	}
	return nil
}

// Authenticate is RocketMQ 5.3's DefaultAuthenticationHandler for one
// request: the request names its user in AccessKey; lookup returns that
// user or nil. It returns the user when the signature holds, or an error
// wrapping ErrUnauthenticated (no AccessKey), ErrUnknownUser,
// ErrDisabledUser or ErrSignature with RocketMQ's text.
func Authenticate(ext map[string]string, body []byte, version int32, lookup func(string) *User) (*User, error) {
	name := ext[AccessKeyField]
	if name == "" {
		return nil, fmt.Errorf("%w: username cannot be null.", ErrUnauthenticated)
	}
	u := lookup(name)
	if u == nil {
		return nil, fmt.Errorf("%w: User:%s is not found.", ErrUnknownUser, name)
	}
	if u.Status == Disabled {
		return nil, fmt.Errorf("%w: User:%s is disabled.", ErrDisabledUser, name)
	}
	if err := Verify(ext, body, version, u.Password); err != nil {
		return nil, err
	}
	return u, nil
}
