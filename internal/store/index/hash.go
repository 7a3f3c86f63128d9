package index

import (
	"strings"
	"unicode/utf8"
)

// javaStringHash is Java's String.hashCode: s[0]*31^(n-1) + ... over the
// UTF-16 code units of s (invalid UTF-8 bytes count as U+FFFD, as Java's
// decoder turns them).
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 && r <= utf8.MaxRune {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// KeyHash is the keyHash RocketMQ stores for an index key ("topic#key"):
// the absolute value of Java's String.hashCode, 0 for Integer.MIN_VALUE.
func KeyHash(key string) int32 {
	h := javaStringHash(key)
	if h < 0 {
		h = -h
		if h < 0 { // math.MinInt32
			h = 0
		}
	}
	return h
}

// BuildKey returns the index key of a message key in a topic: "topic#key".
func BuildKey(topic, key string) string { return topic + "#" + key }

// SplitKeys splits a KEYS property value on spaces, dropping empty parts,
// as RocketMQ does before indexing.
func SplitKeys(keys string) []string {
	if keys == "" {
		return nil
	}
	parts := strings.Split(keys, " ")
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
