package filter

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spoolmq/spool/message"
)

// TagFilter matches consume-queue tag codes against the Java hash codes of
// the subscribed tags.
type TagFilter struct {
	expr  string
	all   bool
	tags  []string
	codes []int32
}

// CompileTags parses a tag subscription: "*" or "" (after trimming) for
// all tags, otherwise tags separated by "||" (each trimmed; empty parts are
// skipped; a "*" among other tags is an ordinary tag, as in RocketMQ).
func CompileTags(expr string) (*TagFilter, error) {
	f := &TagFilter{expr: expr}
	trimmed := strings.TrimSpace(expr)
	if trimmed == "" || trimmed == SubAll {
		f.all = true
		return f, nil
	}
	for part := range strings.SplitSeq(expr, "||") {
		tag := strings.TrimSpace(part)
		if tag == "" || slices.Contains(f.tags, tag) {
			continue
		}
		f.tags = append(f.tags, tag)
		code := int32(message.TagsHashCode(tag))
		if !slices.Contains(f.codes, code) {
			f.codes = append(f.codes, code)
		}
	}
	if len(f.tags) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrNoTags, expr)
	}
	return f, nil
}

// MatchTagsCode reports whether the tag code, cut to 32 bits, is one of the
// subscribed tags' hash codes; everything matches "*".
func (f *TagFilter) MatchTagsCode(tagsCode int64) bool {
	if f.all {
		return true
	}
	c := int32(tagsCode)
	for _, code := range f.codes {
		if code == c {
			return true
		}
	}
	return false
}

// MatchRecord is true: as in RocketMQ, the broker filters tags by hash
// code only and the client compares the tag strings.
func (f *TagFilter) MatchRecord([]byte) bool { return true }

// MatchTags compares a message's TAGS value with the subscribed tag
// strings (what clients do after the broker's hash filter).
func (f *TagFilter) MatchTags(tags string) bool {
	return f.all || slices.Contains(f.tags, tags)
}

// Expression is the subscription string as given.
func (f *TagFilter) Expression() string { return f.expr }

// All reports whether the filter matches every tag.
func (f *TagFilter) All() bool { return f.all }

// Tags returns the subscribed tags (nil for "*"), in subscription order.
func (f *TagFilter) Tags() []string { return slices.Clone(f.tags) }

// Codes returns the Java hash codes of the subscribed tags (nil for "*").
func (f *TagFilter) Codes() []int32 { return slices.Clone(f.codes) }
