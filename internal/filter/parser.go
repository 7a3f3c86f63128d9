package filter

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// parser is a recursive-descent parser for RocketMQ's SQL92 selector
// grammar (see the package doc). It checks operand types as RocketMQ does
// when it builds the expression.
type parser struct {
	src   string
	lex   lexer
	tok   token // current token
	props map[string]int
	names []string
	depth int
}

// maxDepth bounds nesting so a hostile expression cannot exhaust the stack.
const maxDepth = 200

func parse(src string) (*node, []string, error) {
	p := &parser{src: src, lex: lexer{src: src}, props: map[string]int{}}
	if err := p.advance(); err != nil {
		return nil, nil, err
	}
	if p.tok.kind == tokEOF {
		return nil, nil, p.errorf(p.tok.pos, "empty expression")
	}
	start := p.tok.pos
	n, err := p.orExpr()
	if err != nil {
		return nil, nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, nil, p.errorf(p.tok.pos, "unexpected %s after a complete expression", p.tok.describe())
	}
	if n, err = p.asBoolean(n, start); err != nil {
		return nil, nil, err
	}
	return n, p.names, nil
}

func (p *parser) advance() error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) errorf(pos int, format string, args ...any) error {
	return errorAt(p.src, pos, fmt.Sprintf(format, args...))
}

func (p *parser) expect(k tokenKind, context string) error {
	if p.tok.kind != k {
		return p.errorf(p.tok.pos, "expected %s %s, found %s", k, context, p.tok.describe())
	}
	return p.advance()
}

// asBoolean makes n usable as a condition: a property becomes a cast, a
// number or string is refused.
func (p *parser) asBoolean(n *node, pos int) (*node, error) {
	if n.boolean() {
		return n, nil
	}
	if n.op == opProp {
		return &node{op: opCast, l: n}, nil
	}
	return nil, p.errorf(pos, "%s is not a condition (it has no boolean value)", n)
}

func (p *parser) orExpr() (*node, error) {
	return p.logical(tokOr, opOr, p.andExpr)
}

func (p *parser) andExpr() (*node, error) {
	return p.logical(tokAnd, opAnd, p.equality)
}

// logical parses operand (tok operand)*, left-associative, into op nodes;
// both sides of each op must be conditions.
func (p *parser) logical(tok tokenKind, kind op, operand func() (*node, error)) (*node, error) {
	start := p.tok.pos
	l, err := operand()
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tok {
		if err := p.advance(); err != nil {
			return nil, err
		}
		rStart := p.tok.pos
		r, err := operand()
		if err != nil {
			return nil, err
		}
		if l, err = p.asBoolean(l, start); err != nil {
			return nil, err
		}
		if r, err = p.asBoolean(r, rStart); err != nil {
			return nil, err
		}
		l = &node{op: kind, l: l, r: r}
	}
	return l, nil
}

var nullConst = &node{op: opConst, v: vNull}

func (p *parser) equality() (*node, error) {
	l, err := p.comparison()
	if err != nil {
		return nil, err
	}
	for {
		opTok := p.tok
		switch opTok.kind {
		case tokEq, tokNe:
			if err := p.advance(); err != nil {
				return nil, err
			}
			r, err := p.comparison()
			if err != nil {
				return nil, err
			}
			if err := p.checkEqualOperands(l, r, opTok); err != nil {
				return nil, err
			}
			l = &node{op: opEq, l: l, r: r}
			if opTok.kind == tokNe {
				l = &node{op: opNot, l: l}
			}
		case tokIs:
			if err := p.advance(); err != nil {
				return nil, err
			}
			not := p.tok.kind == tokNot
			if not {
				if err := p.advance(); err != nil {
					return nil, err
				}
			}
			if err := p.expect(tokNull, "after IS"+map[bool]string{true: " NOT", false: ""}[not]); err != nil {
				return nil, err
			}
			l = &node{op: opEq, l: l, r: nullConst}
			if not {
				l = &node{op: opNot, l: l}
			}
		default:
			return l, nil
		}
	}
}

// checkEqualOperands refuses NULL as an operand of = and <>, and a boolean
// literal compared with a non-boolean literal.
func (p *parser) checkEqualOperands(l, r *node, opTok token) error {
	for _, n := range []*node{l, r} {
		if n.op == opConst && n.v.k == kNull {
			return p.errorf(opTok.pos, "NULL cannot be compared with %s; use IS NULL or IS NOT NULL", opTok.kind)
		}
	}
	if l.op == opConst && r.op == opConst && l.boolean() && !r.boolean() {
		return p.errorf(opTok.pos, "%s cannot be compared with %s", l, r)
	}
	return nil
}

// checkOrderOperand refuses what RocketMQ refuses in <, <=, >, >= and
// BETWEEN: a literal that is not a number, and a condition.
func (p *parser) checkOrderOperand(n *node, pos int, opName string) error {
	if n.op == opConst && !n.v.isNumber() {
		return p.errorf(pos, "%s cannot be compared with %s: only numbers can", n, opName)
	}
	if n.op != opConst && n.boolean() {
		return p.errorf(pos, "the condition %s cannot be compared with %s", n, opName)
	}
	return nil
}

func (p *parser) comparison() (*node, error) {
	lStart := p.tok.pos
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		opTok := p.tok
		var cmp cmpOp
		switch opTok.kind {
		case tokGt:
			cmp = cmpGt
		case tokGe:
			cmp = cmpGe
		case tokLt:
			cmp = cmpLt
		case tokLe:
			cmp = cmpLe
		case tokNot:
			// NOT BETWEEN / NOT IN / NOT CONTAINS ...; a NOT in any other
			// place ends this comparison (and is then an error upstream).
			next, lerr := p.peek()
			if lerr != nil {
				return nil, lerr
			}
			switch next.kind {
			case tokBetween, tokIn, tokContains, tokStartsWith, tokEndsWith:
			default:
				return l, nil
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
			if l, err = p.comparisonTail(l, lStart, true); err != nil {
				return nil, err
			}
			continue
		case tokBetween, tokIn, tokContains, tokStartsWith, tokEndsWith:
			if l, err = p.comparisonTail(l, lStart, false); err != nil {
				return nil, err
			}
			continue
		default:
			return l, nil
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		rStart := p.tok.pos
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		if err := p.checkOrderOperand(l, lStart, cmpNames[cmp]); err != nil {
			return nil, err
		}
		if err := p.checkOrderOperand(r, rStart, cmpNames[cmp]); err != nil {
			return nil, err
		}
		l = &node{op: opCmp, cmp: cmp, l: l, r: r}
	}
}

// peek returns the token after the current one without consuming it.
func (p *parser) peek() (token, error) {
	save := p.lex
	t, err := p.lex.next()
	p.lex = save
	if err != nil {
		return token{}, err
	}
	return t, nil
}

// comparisonTail parses BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH (the
// current token) and its operands, after an optional NOT.
func (p *parser) comparisonTail(l *node, lStart int, not bool) (*node, error) {
	opTok := p.tok
	if err := p.advance(); err != nil {
		return nil, err
	}
	switch opTok.kind {
	case tokBetween:
		lowStart := p.tok.pos
		low, err := p.unary()
		if err != nil {
			return nil, err
		}
		if err := p.expect(tokAnd, "between the bounds of BETWEEN"); err != nil {
			return nil, err
		}
		highStart := p.tok.pos
		high, err := p.unary()
		if err != nil {
			return nil, err
		}
		for _, o := range []struct {
			n   *node
			pos int
		}{{l, lStart}, {low, lowStart}, {high, highStart}} {
			if err := p.checkOrderOperand(o.n, o.pos, "BETWEEN"); err != nil {
				return nil, err
			}
		}
		if low.op == opConst && high.op == opConst {
			if c, ok := compareValues(high.v, low.v); ok && c < 0 {
				return nil, p.errorf(lowStart, "BETWEEN bounds out of order: %s is greater than %s", low, high)
			}
		}
		if not {
			return &node{op: opOr,
				l: &node{op: opCmp, cmp: cmpLt, l: l, r: low},
				r: &node{op: opCmp, cmp: cmpGt, l: l, r: high}}, nil
		}
		return &node{op: opAnd,
			l: &node{op: opCmp, cmp: cmpGe, l: l, r: low},
			r: &node{op: opCmp, cmp: cmpLe, l: l, r: high}}, nil
	case tokIn:
		if l.op != opProp {
			return nil, p.errorf(lStart, "IN needs a property on its left, found %s", l)
		}
		if err := p.expect(tokLParen, "after IN"); err != nil {
			return nil, err
		}
		var set []string
		for {
			if p.tok.kind != tokString {
				return nil, p.errorf(p.tok.pos, "expected a string literal in the IN list, found %s", p.tok.describe())
			}
			set = append(set, p.tok.text)
			if err := p.advance(); err != nil {
				return nil, err
			}
			if p.tok.kind == tokComma {
				if err := p.advance(); err != nil {
					return nil, err
				}
				continue
			}
			if err := p.expect(tokRParen, "to close the IN list"); err != nil {
				return nil, err
			}
			return &node{op: opIn, l: l, set: set, not: not}, nil
		}
	}
	// CONTAINS, STARTSWITH, ENDSWITH.
	if p.tok.kind != tokString {
		return nil, p.errorf(p.tok.pos, "expected a string literal after %s, found %s", opTok.kind, p.tok.describe())
	}
	search := p.tok.text
	if err := p.advance(); err != nil {
		return nil, err
	}
	so := map[tokenKind]strOp{tokContains: strContains, tokStartsWith: strStartsWith, tokEndsWith: strEndsWith}[opTok.kind]
	return &node{op: opStr, str: so, l: l, search: search, not: not}, nil
}

func (p *parser) unary() (*node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, p.errorf(p.tok.pos, "expression nested deeper than %d levels", maxDepth)
	}
	switch p.tok.kind {
	case tokPlus:
		if err := p.advance(); err != nil {
			return nil, err
		}
		return p.unary()
	case tokMinus:
		if err := p.advance(); err != nil {
			return nil, err
		}
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &node{op: opNeg, l: x}, nil
	case tokNot:
		if err := p.advance(); err != nil {
			return nil, err
		}
		start := p.tok.pos
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		if x, err = p.asBoolean(x, start); err != nil {
			return nil, err
		}
		return &node{op: opNot, l: x}, nil
	}
	return p.primary()
}

func (p *parser) primary() (*node, error) {
	t := p.tok
	switch t.kind {
	case tokLParen:
		if err := p.advance(); err != nil {
			return nil, err
		}
		n, err := p.orExpr()
		if err != nil {
			return nil, err
		}
		if err := p.expect(tokRParen, "to close '(' at column "+strconv.Itoa(errorAt(p.src, t.pos, "").Column)); err != nil {
			return nil, err
		}
		return n, nil
	case tokIdent:
		idx, ok := p.props[t.text]
		if !ok {
			idx = len(p.names)
			p.props[t.text] = idx
			p.names = append(p.names, t.text)
		}
		return &node{op: opProp, prop: idx, name: t.text}, p.advance()
	case tokString:
		return &node{op: opConst, v: value{k: kString, s: t.text}}, p.advance()
	case tokTrue:
		return &node{op: opConst, v: vTrue}, p.advance()
	case tokFalse:
		return &node{op: opConst, v: vFalse}, p.advance()
	case tokNull:
		return &node{op: opConst, v: vNull}, p.advance()
	case tokInteger:
		text := strings.TrimRight(t.text, "lL")
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, p.errorf(t.pos, "integer %s does not fit in 64 bits", t.text)
		}
		k := kLong
		if n >= math.MinInt32 && n <= math.MaxInt32 {
			k = kInt
		}
		return &node{op: opConst, v: value{k: k, i: n}}, p.advance()
	case tokDecimal:
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, p.errorf(t.pos, "number %s is out of the range of a double", t.text)
		}
		return &node{op: opConst, v: value{k: kDouble, f: f}}, p.advance()
	case tokEOF:
		return nil, p.errorf(t.pos, "expression ends where an operand was expected")
	}
	return nil, p.errorf(t.pos, "expected an operand (property, literal or '('), found %s", t.describe())
}
