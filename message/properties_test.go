package message

import (
	"maps"
	"testing"
)

func TestDecodePropertiesJavaRule(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"one", "TAGS\x01TagA\x02", map[string]string{"TAGS": "TagA"}},
		{"two", "KEYS\x01k1 k2\x02TAGS\x01TagA\x02", map[string]string{"KEYS": "k1 k2", "TAGS": "TagA"}},
		{"no trailing separator", "a\x01b\x02c\x01d", map[string]string{"a": "b", "c": "d"}},
		{"empty name dropped", "\x01v\x02a\x01b\x02", map[string]string{"a": "b"}},
		{"empty value dropped", "a\x01\x02b\x01c\x02", map[string]string{"b": "c"}},
		{"no name-value separator dropped", "abc\x02b\x01c\x02", map[string]string{"b": "c"}},
		{"value keeps later 0x01", "a\x01b\x01c\x02", map[string]string{"a": "b\x01c"}},
		{"empty segments", "\x02\x02a\x01b\x02\x02", map[string]string{"a": "b"}},
		{"later duplicate wins", "a\x01one\x02a\x01two\x02", map[string]string{"a": "two"}},
		{"separator of next segment not used", "ab\x02\x01c\x02", map[string]string{}},
		{"only separators", "\x01\x02\x01", map[string]string{}},
		{"single char name and value", "a\x01b", map[string]string{"a": "b"}},
		{"utf8", "名\x01值\x02", map[string]string{"名": "值"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecodeProperties(tt.in)
			if !maps.Equal(got, tt.want) {
				t.Fatalf("DecodeProperties(%q) = %q, want %q", tt.in, got, tt.want)
			}
			for k, v := range tt.want {
				if lv, ok := LookupProperty(tt.in, k); !ok || lv != v {
					t.Fatalf("LookupProperty(%q, %q) = %q, %v, want %q", tt.in, k, lv, ok, v)
				}
			}
			if _, ok := LookupProperty(tt.in, "missing"); ok {
				t.Fatalf("LookupProperty found a missing name")
			}
		})
	}
}

func TestEncodePropertiesSortedAndRoundTrip(t *testing.T) {
	m := map[string]string{"TAGS": "TagA", "KEYS": "k1", "UNIQ_KEY": "ABC", "empty": "", "": "x"}
	got := EncodeProperties(m)
	want := "KEYS\x01k1\x02TAGS\x01TagA\x02UNIQ_KEY\x01ABC\x02"
	if got != want {
		t.Fatalf("EncodeProperties = %q, want %q", got, want)
	}
	if n := EncodedPropertiesLen(m); n != len(want) {
		t.Fatalf("EncodedPropertiesLen = %d, want %d", n, len(want))
	}
	back := DecodeProperties(got)
	delete(m, "empty")
	delete(m, "")
	if !maps.Equal(back, m) {
		t.Fatalf("round trip = %q, want %q", back, m)
	}
	if EncodeProperties(nil) != "" {
		t.Fatal("nil map must encode as empty")
	}
	// AppendProperty writes the same pairs, in the order given.
	var b []byte
	for _, k := range []string{"KEYS", "TAGS", "UNIQ_KEY"} {
		b = AppendProperty(b, k, m[k])
	}
	if string(b) != want {
		t.Fatalf("AppendProperty pairs = %q, want %q", b, want)
	}
}

func TestTagsHashCode(t *testing.T) {
	// Values worked by hand with h = 31*h + c over UTF-16 units, int32.
	tests := []struct {
		in   string
		want int64
	}{
		{"", 0},
		{"a", 97},
		// T=84 a=97 g=103 A=65: 84 -> 2701 -> 83834 -> 2598919
		{"TagA", 2598919},
		// ... -> 83834*31 + 66
		{"TagB", 2598920},
		{"hello", 99162322},
		// Overflows exactly to Integer.MIN_VALUE in Java.
		{"polygenelubricants", -2147483648},
		// U+4E2D is one UTF-16 unit.
		{"中", 0x4E2D},
		// U+1F600 is the surrogate pair D83D DE00: 55357*31 + 56832.
		{"😀", 55357*31 + 56832},
		// "TagA || TagC" as a whole string (the stored TAGS value).
		{"TagA || TagC", tagHashRef("TagA || TagC")},
	}
	for _, tt := range tests {
		if got := TagsHashCode(tt.in); got != tt.want {
			t.Errorf("TagsHashCode(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// tagHashRef is a slow reference: UTF-16 encode, then Java's loop.
func tagHashRef(s string) int64 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return int64(h)
}

func TestTransactionValue(t *testing.T) {
	sf := SysFlagCompressed | TransactionPreparedType | SysFlagBornHostV6
	if TransactionValue(sf) != TransactionPreparedType {
		t.Fatalf("TransactionValue = %#x", TransactionValue(sf))
	}
	sf = ResetTransactionValue(sf, TransactionCommitType)
	if TransactionValue(sf) != TransactionCommitType || sf&^0xC != SysFlagCompressed|SysFlagBornHostV6 {
		t.Fatalf("ResetTransactionValue = %#x", sf)
	}
	if ResetTransactionValue(sf, TransactionNotType) != SysFlagCompressed|SysFlagBornHostV6 {
		t.Fatal("reset to not-type kept the bits")
	}
}

func TestRangePropertiesOrder(t *testing.T) {
	var got []string
	RangeProperties("a\x011\x02\x01x\x02b\x012\x02a\x013\x02c\x014", func(k, v string) bool {
		got = append(got, k+"="+v)
		return k != "a" || v != "3"
	})
	want := []string{"a=1", "b=2", "a=3"}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

// TestWaitStoreMsgOK: the WAIT property is true unless it says "false"
// (the last occurrence counts), from the string or the map; once
// SetWaitStoreMsgOK said what it holds, the properties are not read.
func TestWaitStoreMsgOK(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Inner
		want bool
	}{
		{"no properties", Inner{}, true},
		{"no WAIT", Inner{PropertiesString: "TAGS\x01a\x02"}, true},
		{"WAIT false", Inner{PropertiesString: "WAIT\x01false\x02"}, false},
		{"WAIT true", Inner{PropertiesString: "WAIT\x01true\x02"}, true},
		{"WAIT other", Inner{PropertiesString: "WAIT\x01no\x02"}, true},
		{"the last WAIT counts", Inner{PropertiesString: "WAIT\x01false\x02WAIT\x01true\x02"}, true},
		{"the last WAIT counts, false", Inner{PropertiesString: "WAIT\x01true\x02WAIT\x01false\x02"}, false},
		{"map", Inner{Properties: map[string]string{"WAIT": "false"}}, false},
		{"string before map", Inner{PropertiesString: "WAIT\x01true\x02", Properties: map[string]string{"WAIT": "false"}}, true},
	} {
		if got := tc.m.WaitStoreMsgOK(); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		// What a caller that read the properties says stands.
		m := tc.m
		m.SetWaitStoreMsgOK("false", true)
		if m.WaitStoreMsgOK() {
			t.Errorf("%s: set to false, reads true", tc.name)
		}
		m.SetWaitStoreMsgOK("", false)
		if !m.WaitStoreMsgOK() {
			t.Errorf("%s: set to absent, reads false", tc.name)
		}
	}
}
