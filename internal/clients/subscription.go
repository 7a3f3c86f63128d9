package clients

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spoolmq/spool/internal/filter"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
)

// Expression types of a subscription.
const (
	ExprTag   = "TAG"
	exprSQL92 = "SQL92"
	subAll    = "*"
)

// SubscriptionData is a consumer's subscription to one topic, in the JSON
// form of heartbeats. CodeSet is accepted as numbers or numeric strings and
// recomputed from SubString with Java's hash.
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	Topic           string   `json:"topic"`
	SubString       string   `json:"subString"`
	TagsSet         []string `json:"tagsSet"`
	CodeSet         codeSet  `json:"codeSet"`
	SubVersion      int64    `json:"subVersion"`
	ExpressionType  string   `json:"expressionType"`
}

// codeSet decodes a JSON array of numbers or numeric strings.
type codeSet []int64

func (c *codeSet) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make([]int64, 0, len(raw))
	for _, r := range raw {
		s := strings.Trim(string(r), `"`)
		if s == "" || s == "null" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("codeSet entry %s: %w", r, err)
		}
		out = append(out, n)
	}
	*c = out
	return nil
}

// Subscription is a registered subscription with its compiled filter.
type Subscription struct {
	Data SubscriptionData
	// filter is nil for "*"; compileErr is set when the expression does
	// not compile (pulls then answer SUBSCRIPTION_PARSE_FAILED).
	Filter     store.MessageFilter
	CompileErr error
}

// NormalizeSubscription recomputes the tag set and codes of a TAG
// subscription from its expression (Java's rule) and compiles its filter.
func NormalizeSubscription(d SubscriptionData) *Subscription {
	if d.ExpressionType == "" {
		d.ExpressionType = ExprTag
	}
	s := &Subscription{Data: d}
	expr := strings.TrimSpace(d.SubString)
	if strings.EqualFold(d.ExpressionType, ExprTag) {
		if expr == "" || expr == subAll {
			s.Data.SubString = subAll
			s.Data.TagsSet = []string{}
			s.Data.CodeSet = codeSet{}
			return s
		}
		tags, codes := tagsAndCodes(expr)
		s.Data.TagsSet = tags
		s.Data.CodeSet = codes
	}
	s.Filter, s.CompileErr = CompileFilter(d.ExpressionType, expr)
	return s
}

// tagsAndCodes splits a TAG expression on "||" and hashes each tag.
func tagsAndCodes(expr string) ([]string, codeSet) {
	var tags []string
	var codes codeSet
	for _, t := range strings.Split(expr, "||") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		tags = append(tags, t)
		codes = append(codes, message.TagsHashCode(t))
	}
	return tags, codes
}

// CompileFilter compiles an expression; "*" and "" of type TAG match all
// and return a nil filter.
func CompileFilter(exprType, expr string) (store.MessageFilter, error) {
	expr = strings.TrimSpace(expr)
	if exprType == "" {
		exprType = ExprTag
	}
	if strings.EqualFold(exprType, ExprTag) && (expr == "" || expr == subAll) {
		return nil, nil
	}
	f, err := filter.Compile(exprType, expr)
	if err != nil {
		return nil, err
	}
	return f, nil
}
