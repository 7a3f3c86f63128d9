package filter

import (
	"fmt"
	"strings"
)

// Expression types, as consumers send them (subscription expressionType).
const (
	TypeTag   = "TAG"
	TypeSQL92 = "SQL92"
)

// SubAll is the subscription string that matches every tag.
const SubAll = "*"

// Filter is a compiled subscription expression. It satisfies
// store.MessageFilter.
type Filter interface {
	// MatchTagsCode tests the consume-queue tag code.
	MatchTagsCode(tagsCode int64) bool
	// MatchRecord tests a stored record (only after MatchTagsCode said
	// yes).
	MatchRecord(record []byte) bool
	// Expression is the source expression.
	Expression() string
}

// Compile builds the filter of a subscription. expressionType "" or "TAG"
// gives a *TagFilter, "SQL92" a *SQLFilter (both compared without regard to
// case).
func Compile(expressionType, expr string) (Filter, error) {
	switch {
	case expressionType == "" || strings.EqualFold(expressionType, TypeTag):
		return CompileTags(expr)
	case strings.EqualFold(expressionType, TypeSQL92):
		return CompileSQL(expr)
	}
	return nil, fmt.Errorf("%w: %q (want %s or %s)", ErrUnsupportedType, expressionType, TypeTag, TypeSQL92)
}
