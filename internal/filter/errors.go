package filter

import (
	"errors"
	"fmt"
)

// Errors of Compile.
var (
	// ErrSyntax: the SQL92 expression does not parse or is ill-typed; the
	// error is a *SyntaxError with the position.
	ErrSyntax = errors.New("filter: invalid SQL92 expression")
	// ErrUnsupportedType: the expression type is neither TAG nor SQL92.
	ErrUnsupportedType = errors.New("filter: unsupported expression type")
	// ErrNoTags: a tag expression holds no tag (e.g. " || ").
	ErrNoTags = errors.New("filter: tag expression holds no tag")
)

// SyntaxError is a parse or type error in a SQL92 expression, with the
// position of the offending token.
type SyntaxError struct {
	Offset int // byte offset in the expression
	Line   int // 1-based
	Column int // 1-based, in characters
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%v: line %d, column %d: %s", ErrSyntax, e.Line, e.Column, e.Msg)
}

// Unwrap makes errors.Is(err, ErrSyntax) hold.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }
