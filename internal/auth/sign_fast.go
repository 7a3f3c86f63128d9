package auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"hash"
	"slices"
	"sync"
	"sync/atomic"
)

// The hot path of signing and verifying: the same bytes as Content and
// Sign, without building the content (the sorted ext values are copied
// into a pooled buffer and the body is fed to the HMAC as it is) and with
// one HMAC state per secret kept in a pool, so a request costs no
// allocation for its check.

// sigLen is the Base64 length of an HMAC-SHA1.
const sigLen = 28

// scratch is the pooled sorted-key list and value buffer of one check.
type scratch struct {
	keys []string
	vals []byte
}

var scratchPool = sync.Pool{New: func() any { return &scratch{} }}

// macPools holds an HMAC pool per secret, up to maxMacPools secrets
// (beyond that a state is built per request).
var (
	macPools    sync.Map // string -> *sync.Pool of hash.Hash
	macPoolsLen atomic.Int32
)

const maxMacPools = 4096

func macFor(secret string) (*sync.Pool, hash.Hash) {
	if p, ok := macPools.Load(secret); ok {
		pool := p.(*sync.Pool)
		return pool, pool.Get().(hash.Hash)
	}
	if macPoolsLen.Load() >= maxMacPools {
		return nil, hmac.New(sha1.New, []byte(secret))
	}
	p, loaded := macPools.LoadOrStore(secret, &sync.Pool{New: func() any { return hmac.New(sha1.New, []byte(secret)) }})
	if !loaded {
		macPoolsLen.Add(1)
	}
	pool := p.(*sync.Pool)
	return pool, pool.Get().(hash.Hash)
}

// signature writes into out the Base64 signature of the request (what
// Sign(Content(ext, body, version), secret) returns).
func signature(out *[sigLen]byte, ext map[string]string, body []byte, version int32, secret string) {
	sc := scratchPool.Get().(*scratch)
	keys := sc.keys[:0]
	for k := range ext {
		if k == SignatureField || (k == uniqueKeyQueryFlag && version <= versionV4_9_3) {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	vals := sc.vals[:0]
	for _, k := range keys {
		vals = append(vals, ext[k]...)
	}
	pool, h := macFor(secret)
	h.Reset()
	h.Write(vals)
	h.Write(body)
	var sum [sha1.Size]byte
	h.Sum(sum[:0])
	if pool != nil {
		pool.Put(h)
	}
	base64.StdEncoding.Encode(out[:], sum[:])
	clear(keys)
	if cap(vals) <= 64<<10 {
		sc.keys, sc.vals = keys[:0], vals[:0]
		scratchPool.Put(sc)
	}
}

// signatureMatches reports, in constant time, whether got is the
// request's signature under secret.
func signatureMatches(got string, ext map[string]string, body []byte, version int32, secret string) bool {
	var want [sigLen]byte
	signature(&want, ext, body, version, secret)
	return len(got) == sigLen && subtle.ConstantTimeCompare(want[:], []byte(got)) == 1
}
