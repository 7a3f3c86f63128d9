package filter

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// tokenKind is the kind of a lexical token of a SQL92 expression.
type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokIdent
	tokString
	tokInteger
	tokDecimal
	tokLParen
	tokRParen
	tokComma
	tokPlus
	tokMinus
	tokEq
	tokNe
	tokGt
	tokGe
	tokLt
	tokLe
	// Keywords.
	tokNot
	tokAnd
	tokOr
	tokBetween
	tokIn
	tokTrue
	tokFalse
	tokNull
	tokIs
	tokContains
	tokStartsWith
	tokEndsWith
)

var keywords = map[string]tokenKind{
	"NOT": tokNot, "AND": tokAnd, "OR": tokOr, "BETWEEN": tokBetween, "IN": tokIn,
	"TRUE": tokTrue, "FALSE": tokFalse, "NULL": tokNull, "IS": tokIs,
	"CONTAINS": tokContains, "STARTSWITH": tokStartsWith, "ENDSWITH": tokEndsWith,
}

var tokenNames = [...]string{
	tokEOF: "end of expression", tokIdent: "property name", tokString: "string literal",
	tokInteger: "integer literal", tokDecimal: "decimal literal", tokLParen: "'('", tokRParen: "')'",
	tokComma: "','", tokPlus: "'+'", tokMinus: "'-'", tokEq: "'='", tokNe: "'<>'", tokGt: "'>'",
	tokGe: "'>='", tokLt: "'<'", tokLe: "'<='", tokNot: "NOT", tokAnd: "AND", tokOr: "OR",
	tokBetween: "BETWEEN", tokIn: "IN", tokTrue: "TRUE", tokFalse: "FALSE", tokNull: "NULL",
	tokIs: "IS", tokContains: "CONTAINS", tokStartsWith: "STARTSWITH", tokEndsWith: "ENDSWITH",
}

func (k tokenKind) String() string { return tokenNames[k] }

// token is one lexical token. text is the source text, except for string
// literals where it is the decoded value.
type token struct {
	kind tokenKind
	text string
	pos  int
}

func (t token) describe() string {
	switch t.kind {
	case tokIdent:
		return fmt.Sprintf("property %s", t.text)
	case tokString:
		return fmt.Sprintf("string '%s'", strings.ReplaceAll(t.text, "'", "''"))
	case tokInteger, tokDecimal:
		return fmt.Sprintf("number %s", t.text)
	}
	return t.kind.String()
}

// lexer splits a SQL92 expression into tokens.
type lexer struct {
	src string
	pos int
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
}
func isIdentPart(c byte) bool { return isIdentStart(c) || isDigit(c) }

// skip passes over white space and comments.
func (l *lexer) skip() *SyntaxError {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case isSpace(c):
			l.pos++
		case strings.HasPrefix(l.src[l.pos:], "--"):
			if i := strings.IndexAny(l.src[l.pos:], "\n\r"); i >= 0 {
				l.pos += i + 1
			} else {
				l.pos = len(l.src)
			}
		case strings.HasPrefix(l.src[l.pos:], "/*"):
			i := strings.Index(l.src[l.pos+2:], "*/")
			if i < 0 {
				return errorAt(l.src, l.pos, "unterminated comment")
			}
			l.pos += 2 + i + 2
		default:
			return nil
		}
	}
	return nil
}

func (l *lexer) next() (token, *SyntaxError) {
	if err := l.skip(); err != nil {
		return token{}, err
	}
	start := l.pos
	if l.pos >= len(l.src) {
		return token{kind: tokEOF, pos: start}, nil
	}
	c := l.src[l.pos]
	one := func(k tokenKind) (token, *SyntaxError) {
		l.pos++
		return token{kind: k, text: l.src[start:l.pos], pos: start}, nil
	}
	switch {
	case c == '(':
		return one(tokLParen)
	case c == ')':
		return one(tokRParen)
	case c == ',':
		return one(tokComma)
	case c == '+':
		return one(tokPlus)
	case c == '-':
		return one(tokMinus)
	case c == '=':
		return one(tokEq)
	case c == '>':
		if strings.HasPrefix(l.src[l.pos:], ">=") {
			l.pos++
			return one(tokGe)
		}
		return one(tokGt)
	case c == '<':
		if strings.HasPrefix(l.src[l.pos:], "<>") {
			l.pos++
			return one(tokNe)
		}
		if strings.HasPrefix(l.src[l.pos:], "<=") {
			l.pos++
			return one(tokLe)
		}
		return one(tokLt)
	case c == '\'':
		return l.stringLiteral()
	case isDigit(c) || c == '.' && l.pos+1 < len(l.src) && isDigit(l.src[l.pos+1]):
		return l.number()
	case isIdentStart(c):
		for l.pos < len(l.src) && isIdentPart(l.src[l.pos]) {
			l.pos++
		}
		text := l.src[start:l.pos]
		if k, ok := keywords[strings.ToUpper(text)]; ok {
			return token{kind: k, text: text, pos: start}, nil
		}
		return token{kind: tokIdent, text: text, pos: start}, nil
	}
	r, _ := utf8.DecodeRuneInString(l.src[l.pos:])
	return token{}, errorAt(l.src, start, fmt.Sprintf("unexpected character %q", r))
}

func (l *lexer) stringLiteral() (token, *SyntaxError) {
	start := l.pos
	l.pos++
	var sb strings.Builder
	for {
		i := strings.IndexByte(l.src[l.pos:], '\'')
		if i < 0 {
			return token{}, errorAt(l.src, start, "unterminated string literal")
		}
		sb.WriteString(l.src[l.pos : l.pos+i])
		l.pos += i + 1
		if l.pos < len(l.src) && l.src[l.pos] == '\'' {
			sb.WriteByte('\'')
			l.pos++
			continue
		}
		return token{kind: tokString, text: sb.String(), pos: start}, nil
	}
}

// number reads an integer literal ("0" or [1-9][0-9]* with an optional L)
// or a decimal literal (digits with a '.', an exponent, or both). The token
// ends where RocketMQ's lexer ends it: "007" is three tokens and fails to
// parse.
func (l *lexer) number() (token, *SyntaxError) {
	start := l.pos
	digits := func() int {
		n := 0
		for l.pos < len(l.src) && isDigit(l.src[l.pos]) {
			l.pos++
			n++
		}
		return n
	}
	exponent := func() bool {
		p := l.pos
		if p < len(l.src) && (l.src[p] == 'e' || l.src[p] == 'E') {
			p++
			if p < len(l.src) && (l.src[p] == '+' || l.src[p] == '-') {
				p++
			}
			if p < len(l.src) && isDigit(l.src[p]) {
				l.pos = p
				digits()
				return true
			}
		}
		return false
	}
	intDigits := digits()
	decimal := false
	if l.pos < len(l.src) && l.src[l.pos] == '.' {
		l.pos++
		fracDigits := digits()
		if intDigits == 0 && fracDigits == 0 {
			return token{}, errorAt(l.src, start, "malformed number")
		}
		decimal = true
		exponent()
	} else if exponent() {
		decimal = true
	}
	if decimal {
		return token{kind: tokDecimal, text: l.src[start:l.pos], pos: start}, nil
	}
	// Integer: "0" alone, or no leading zero.
	if l.src[start] == '0' {
		l.pos = start + 1
		return token{kind: tokInteger, text: "0", pos: start}, nil
	}
	if l.pos < len(l.src) && (l.src[l.pos] == 'l' || l.src[l.pos] == 'L') {
		l.pos++
	}
	return token{kind: tokInteger, text: l.src[start:l.pos], pos: start}, nil
}

// errorAt builds a SyntaxError for byte offset pos of src.
func errorAt(src string, pos int, msg string) *SyntaxError {
	pos = min(max(pos, 0), len(src))
	line, col := 1, 1
	for _, r := range src[:pos] {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &SyntaxError{Offset: pos, Line: line, Column: col, Msg: msg}
}
