package auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"hash"
	"slices"
	"strings"
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

// scratch is the pooled field list and value buffer of one check.
type scratch struct {
	fields []field
	vals   []byte
}

// field is one ext field to sign.
type field struct{ k, v string }

// sortFields orders fields by key: an insertion sort for the dozen
// fields of a request (no comparator call, no NaN test on strings), the
// library's sort beyond that.
func sortFields(fs []field) {
	if len(fs) > 32 {
		slices.SortFunc(fs, func(a, b field) int { return strings.Compare(a.k, b.k) })
		return
	}
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].k < fs[j-1].k; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
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
	fields := sc.fields[:0]
	for k, v := range ext {
		if k == SignatureField || (k == uniqueKeyQueryFlag && version <= versionV4_9_3) {
			continue
		}
		fields = append(fields, field{k, v})
	}
	sortFields(fields)
	vals := sc.vals[:0]
	for _, f := range fields {
		vals = append(vals, f.v...)
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
	clear(fields)
	if cap(vals) <= 64<<10 {
		sc.fields, sc.vals = fields[:0], vals[:0]
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
