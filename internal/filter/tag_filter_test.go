package filter

import (
	"errors"
	"slices"
	"testing"

	"github.com/spoolmq/spool/message"
)

func TestTagFilter(t *testing.T) {
	hA, hB, hC := message.TagsHashCode("TagA"), message.TagsHashCode("TagB"), message.TagsHashCode("TagC")
	tests := []struct {
		expr  string
		all   bool
		tags  []string
		match []int64
		miss  []int64
	}{
		{"*", true, nil, []int64{0, hA, -1}, nil},
		{"", true, nil, []int64{0, hA}, nil},
		{"  *  ", true, nil, []int64{0, hA}, nil},
		{"TagA", false, []string{"TagA"}, []int64{hA}, []int64{hB, 0}},
		{"TagA || TagC", false, []string{"TagA", "TagC"}, []int64{hA, hC}, []int64{hB, 0}},
		{"TagA||TagC||TagA", false, []string{"TagA", "TagC"}, []int64{hA, hC}, []int64{hB}},
		{" TagA ||  || TagC ", false, []string{"TagA", "TagC"}, []int64{hA, hC}, []int64{hB}},
		// "*" among tags is an ordinary tag, as in RocketMQ.
		{"TagA || *", false, []string{"TagA", "*"}, []int64{hA, '*'}, []int64{hB}},
		// Java hashes UTF-16 units: U+1F600 is two units.
		{"😀", false, []string{"😀"}, []int64{55357*31 + 56832}, []int64{hA}},
	}
	for _, tt := range tests {
		f, err := Compile(TypeTag, tt.expr)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tt.expr, err)
		}
		tf := f.(*TagFilter)
		if tf.All() != tt.all || !slices.Equal(tf.Tags(), tt.tags) || f.Expression() != tt.expr {
			t.Errorf("%q: all=%v tags=%q expr=%q", tt.expr, tf.All(), tf.Tags(), f.Expression())
		}
		for _, c := range tt.match {
			if !f.MatchTagsCode(c) {
				t.Errorf("%q refused code %d", tt.expr, c)
			}
		}
		for _, c := range tt.miss {
			if f.MatchTagsCode(c) {
				t.Errorf("%q matched code %d", tt.expr, c)
			}
		}
		if !f.MatchRecord(nil) {
			t.Errorf("%q: MatchRecord must be true", tt.expr)
		}
		for _, tag := range tt.tags {
			if !tf.MatchTags(tag) {
				t.Errorf("%q: MatchTags(%q) false", tt.expr, tag)
			}
		}
		if !tt.all && tf.MatchTags("TagB") {
			t.Errorf("%q: MatchTags(TagB) true", tt.expr)
		}
	}
}

func TestTagFilterCodeCutTo32Bits(t *testing.T) {
	f, err := CompileTags("polygenelubricants") // hash = Integer.MIN_VALUE
	if err != nil {
		t.Fatal(err)
	}
	if c := f.Codes(); len(c) != 1 || c[0] != -1<<31 {
		t.Fatalf("codes %v", c)
	}
	// Sign-extended, zero-extended and garbage in the high 32 bits.
	for _, code := range []int64{-1 << 31, 1 << 31, 0x7_8000_0000} {
		if !f.MatchTagsCode(code) {
			t.Errorf("code %#x refused", code)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, expr := range []string{"||", " || ", "|| ||"} {
		if _, err := Compile("", expr); !errors.Is(err, ErrNoTags) {
			t.Errorf("Compile(TAG, %q) = %v", expr, err)
		}
	}
	if _, err := Compile("XPATH", "a"); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("unknown type: %v", err)
	}
	if f, err := Compile("tag", "TagA"); err != nil || f.(*TagFilter).All() {
		t.Errorf("lower-case type: %v", err)
	}
}
