package index

import (
	"strings"
	"unicode/utf8"
)

// javaStringHash is Java's String.hashCode: s[0]*31^(n-1) + ... over the
// UTF-16 code units of s (invalid UTF-8 bytes count as U+FFFD, as Java's
// decoder turns them).
func javaStringHash(s string) int32 { return javaStringHashFrom(0, s) }

// javaStringHashFrom continues h, Java's String.hashCode of a prefix, over
// s. Split at an ASCII byte, javaStringHash(a+b) is
// javaStringHashFrom(javaStringHash(a), b): an ASCII byte never joins the
// bytes around it into one character, valid or not.
func javaStringHashFrom(h int32, s string) int32 {
	// Four ASCII bytes at a time (h*31^4 + c0*31^3 + c1*31^2 + c2*31 +
	// c3, wrapping as Java's int does), so that the multiplications do
	// not wait on each other; the rest one character at a time.
	for len(s) >= 4 && s[0]|s[1]|s[2]|s[3] < utf8.RuneSelf {
		h = h*923521 + int32(s[0])*29791 + int32(s[1])*961 + int32(s[2])*31 + int32(s[3])
		s = s[4:]
	}
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
func KeyHash(key string) int32 { return absKeyHash(javaStringHash(key)) }

// absKeyHash is RocketMQ's Math.abs of a key's hashCode, with
// Integer.MIN_VALUE mapped to 0.
func absKeyHash(h int32) int32 {
	if h < 0 {
		h = -h
		if h < 0 { // math.MinInt32
			h = 0
		}
	}
	return h
}

// TopicKeyHash is the KeyHash of a message key's index key in a topic,
// "topic#key", computed without building the key.
func TopicKeyHash(topic, key string) int32 {
	return absKeyHash(javaStringHashFrom(topicPrefixHash(topic), key))
}

// topicPrefixHash is Java's String.hashCode of "topic#", from which
// TopicKeyHash continues over each key.
func topicPrefixHash(topic string) int32 { return 31*javaStringHash(topic) + '#' }

// SplitKeys splits a KEYS property value on spaces, dropping empty parts,
// as RocketMQ does before indexing.
func SplitKeys(keys string) []string {
	if keys == "" {
		return nil
	}
	return AppendKeys(nil, keys)
}

// AppendKeys is SplitKeys appending to dst: the parts are substrings of
// keys, and nothing is allocated while dst has room.
func AppendKeys(dst []string, keys string) []string {
	for keys != "" {
		part := keys
		if i := strings.IndexByte(keys, ' '); i >= 0 {
			part, keys = keys[:i], keys[i+1:]
		} else {
			keys = ""
		}
		if part != "" {
			dst = append(dst, part)
		}
	}
	return dst
}
