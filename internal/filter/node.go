package filter

import (
	"strings"
)

// op is the operation of an expression node.
type op uint8

const (
	opConst op = iota // v
	opProp            // property prop (index into the filter's names)
	opNeg             // -l
	opNot             // NOT l
	opCast            // property l used as a condition
	opAnd             // l AND r
	opOr              // l OR r
	opEq              // l = r (also IS NULL with r = NULL)
	opCmp             // l cmp r
	opIn              // l [NOT] IN set
	opStr             // l [NOT] CONTAINS|STARTSWITH|ENDSWITH search
)

// cmpOp is the operator of an opCmp node.
type cmpOp uint8

const (
	cmpGt cmpOp = iota
	cmpGe
	cmpLt
	cmpLe
)

var cmpNames = [...]string{cmpGt: ">", cmpGe: ">=", cmpLt: "<", cmpLe: "<="}

// strOp is the operator of an opStr node.
type strOp uint8

const (
	strContains strOp = iota
	strStartsWith
	strEndsWith
)

var strNames = [...]string{strContains: "CONTAINS", strStartsWith: "STARTSWITH", strEndsWith: "ENDSWITH"}

// node is one node of a compiled SQL92 expression.
type node struct {
	op     op
	cmp    cmpOp
	str    strOp
	not    bool // opIn, opStr: negated form
	l, r   *node
	v      value    // opConst
	prop   int      // opProp
	name   string   // opProp
	set    []string // opIn
	search string   // opStr
}

// boolean reports whether n is what RocketMQ calls a BooleanExpression: a
// condition that may stand alone or be an operand of AND, OR and NOT.
func (n *node) boolean() bool {
	switch n.op {
	case opConst:
		return n.v.k == kBool || n.v.k == kNull
	case opProp, opNeg:
		return false
	}
	return true
}

// eval computes n over the property values vals, indexed by property
// number; "" means missing (the Java property rule never keeps an empty
// value).
func (n *node) eval(vals []string) value {
	switch n.op {
	case opConst:
		return n.v
	case opProp:
		if s := vals[n.prop]; s != "" {
			return value{k: kString, s: s}
		}
		return vNull
	case opNeg:
		v := n.l.eval(vals)
		switch v.k {
		case kError:
			return v
		case kInt:
			return value{k: kInt, i: int64(-int32(v.i))}
		case kLong:
			return value{k: kLong, i: -v.i}
		case kDouble:
			return value{k: kDouble, f: -v.f}
		}
		return vNull
	case opNot:
		v := n.l.eval(vals)
		if v.k != kBool {
			return v // null or error
		}
		return boolValue(!v.b)
	case opCast:
		v := n.l.eval(vals)
		switch v.k {
		case kNull, kError, kBool:
			return v
		}
		return vFalse
	case opAnd:
		lv := n.l.eval(vals)
		if lv.k == kError || lv.k == kBool && !lv.b {
			return lv
		}
		rv := n.r.eval(vals)
		if rv.k == kError || rv.k == kBool && !rv.b {
			return rv
		}
		if lv.k == kNull || rv.k == kNull {
			return vNull
		}
		return vTrue
	case opOr:
		lv := n.l.eval(vals)
		if lv.k == kError || lv.k == kBool && lv.b {
			return lv
		}
		rv := n.r.eval(vals)
		if rv.k == kError || rv.k == kBool && rv.b {
			return rv
		}
		if lv.k == kNull || rv.k == kNull {
			return vNull
		}
		return vFalse
	case opEq:
		lv := n.l.eval(vals)
		if lv.k == kError {
			return lv
		}
		rv := n.r.eval(vals)
		if rv.k == kError {
			return rv
		}
		if (lv.k == kNull) != (rv.k == kNull) {
			if lv.k == kNull {
				return vNull
			}
			return vFalse
		}
		if javaEquals(lv, rv) {
			return vTrue
		}
		c, ok := compareValues(lv, rv)
		if !ok {
			return vError
		}
		return boolValue(c == 0)
	case opCmp:
		lv := n.l.eval(vals)
		if lv.k == kNull || lv.k == kError {
			return lv
		}
		rv := n.r.eval(vals)
		if rv.k == kNull || rv.k == kError {
			return rv
		}
		var c int
		if lv.k == kString && rv.k == kString {
			lf, lok := parseJavaDouble(lv.s)
			rf, rok := parseJavaDouble(rv.s)
			if !lok || !rok {
				return vError
			}
			c = javaDoubleCompare(lf, rf)
		} else {
			var ok bool
			if c, ok = compareValues(lv, rv); !ok {
				return vError
			}
		}
		switch n.cmp {
		case cmpGt:
			return boolValue(c > 0)
		case cmpGe:
			return boolValue(c >= 0)
		case cmpLt:
			return boolValue(c < 0)
		}
		return boolValue(c <= 0)
	case opIn:
		v := n.l.eval(vals)
		if v.k != kString {
			return vNull
		}
		found := false
		for _, s := range n.set {
			if s == v.s {
				found = true
				break
			}
		}
		return boolValue(found != n.not)
	case opStr:
		if n.search == "" {
			return vFalse
		}
		v := n.l.eval(vals)
		switch v.k {
		case kNull, kError:
			return v
		case kString:
		default:
			return vFalse
		}
		var hit bool
		switch n.str {
		case strContains:
			hit = strings.Contains(v.s, n.search)
		case strStartsWith:
			hit = strings.HasPrefix(v.s, n.search)
		default:
			hit = strings.HasSuffix(v.s, n.search)
		}
		return boolValue(hit != n.not)
	}
	return vError
}

// String renders n fully parenthesized; the result compiles to an
// equivalent expression.
func (n *node) String() string {
	var sb strings.Builder
	n.write(&sb)
	return sb.String()
}

func (n *node) write(sb *strings.Builder) {
	switch n.op {
	case opConst:
		sb.WriteString(n.v.String())
	case opProp:
		sb.WriteString(n.name)
	case opNeg:
		sb.WriteString("(-")
		n.l.write(sb)
		sb.WriteString(")")
	case opNot:
		sb.WriteString("(NOT ")
		n.l.write(sb)
		sb.WriteString(")")
	case opCast:
		n.l.write(sb)
	case opAnd, opOr:
		sb.WriteString("(")
		n.l.write(sb)
		if n.op == opAnd {
			sb.WriteString(" AND ")
		} else {
			sb.WriteString(" OR ")
		}
		n.r.write(sb)
		sb.WriteString(")")
	case opEq:
		sb.WriteString("(")
		n.l.write(sb)
		if n.r.op == opConst && n.r.v.k == kNull {
			sb.WriteString(" IS NULL)")
			return
		}
		sb.WriteString(" = ")
		n.r.write(sb)
		sb.WriteString(")")
	case opCmp:
		sb.WriteString("(")
		n.l.write(sb)
		sb.WriteString(" " + cmpNames[n.cmp] + " ")
		n.r.write(sb)
		sb.WriteString(")")
	case opIn:
		sb.WriteString("(")
		n.l.write(sb)
		if n.not {
			sb.WriteString(" NOT")
		}
		sb.WriteString(" IN (")
		for i, s := range n.set {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(value{k: kString, s: s}.String())
		}
		sb.WriteString("))")
	case opStr:
		sb.WriteString("(")
		n.l.write(sb)
		if n.not {
			sb.WriteString(" NOT")
		}
		sb.WriteString(" " + strNames[n.str] + " ")
		sb.WriteString(value{k: kString, s: n.search}.String())
		sb.WriteString(")")
	}
}
