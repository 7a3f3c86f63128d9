package filter

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
)

// kind is the Java type of an evaluated value.
type kind uint8

const (
	kNull   kind = iota // Java null: SQL UNKNOWN for conditions
	kBool               // Boolean
	kInt                // Integer (32-bit)
	kLong               // Long
	kDouble             // Double
	kString             // String
	kError              // an exception in RocketMQ: the expression does not match
)

// value is an evaluated operand.
type value struct {
	k kind
	b bool
	i int64
	f float64
	s string
}

var (
	vNull  = value{k: kNull}
	vTrue  = value{k: kBool, b: true}
	vFalse = value{k: kBool}
	vError = value{k: kError}
)

func boolValue(b bool) value {
	if b {
		return vTrue
	}
	return vFalse
}

func (v value) isNumber() bool { return v.k == kInt || v.k == kLong || v.k == kDouble }

// String renders v as a literal.
func (v value) String() string {
	switch v.k {
	case kBool:
		if v.b {
			return "TRUE"
		}
		return "FALSE"
	case kInt, kLong:
		return strconv.FormatInt(v.i, 10)
	case kDouble:
		return formatDouble(v.f)
	case kString:
		return "'" + strings.ReplaceAll(v.s, "'", "''") + "'"
	case kError:
		return "<error>"
	}
	return "NULL"
}

func formatDouble(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEIN") {
		s += ".0"
	}
	return s
}

// parseJavaInt parses like Integer.valueOf / Long.valueOf: an optional
// sign and ASCII digits, nothing else.
func parseJavaInt(s string, bits int) (int64, bool) {
	if s == "" || s == "+" || s == "-" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isDigit(c) && !(i == 0 && (c == '+' || c == '-')) {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return 0, false
	}
	return n, true
}

// parseJavaDouble parses like Double.valueOf: surrounding white space
// (characters <= ' ') is ignored, "NaN" and "Infinity" with an optional
// sign are accepted, and a trailing f, F, d or D type suffix is allowed.
func parseJavaDouble(s string) (float64, bool) {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	body := s
	neg := false
	if body != "" && (body[0] == '+' || body[0] == '-') {
		neg = body[0] == '-'
		body = body[1:]
	}
	switch body {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "":
		return 0, false
	}
	if c := s[len(s)-1]; c == 'f' || c == 'F' || c == 'd' || c == 'D' {
		hex := strings.HasPrefix(body, "0x") || strings.HasPrefix(body, "0X")
		if !hex || strings.ContainsAny(body, "pP") {
			s = s[:len(s)-1]
			body = body[:len(body)-1]
		}
	}
	// Refuse what Go accepts and Java does not: "inf", "nan", underscores.
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case isDigit(c), c == '.', c == 'e', c == 'E', c == '+', c == '-', c == 'p', c == 'P',
			c == 'x', c == 'X', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		default:
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	return f, true
}

// javaDoubleCompare is Double.compare: -0.0 < 0.0, NaN equal to itself
// and greater than everything.
func javaDoubleCompare(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	}
	// Equal, or 0.0 versus -0.0.
	as, bs := math.Signbit(a), math.Signbit(b)
	switch {
	case as == bs:
		return 0
	case as:
		return -1
	}
	return 1
}

// javaStringCompare is String.compareTo: UTF-16 code unit order.
func javaStringCompare(a, b string) int {
	if a == b {
		return 0
	}
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return int(ua[i]) - int(ub[i])
		}
	}
	return len(ua) - len(ub)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareValues is RocketMQ's comparison of two non-null operands with
// string conversion on: operands of different types are converted towards
// each other (a string towards the number type of the other side), and a
// string that does not convert is an error (ok false). Pairs that cannot be
// compared give -1, as in RocketMQ.
func compareValues(l, r value) (int, bool) {
	if l.k != r.k {
		switch l.k {
		case kBool:
			// RocketMQ casts the Boolean to String here and fails.
			if r.k == kString {
				return 0, false
			}
			return -1, true
		case kInt, kLong:
			switch r.k {
			case kInt, kLong:
				return cmpInt(l.i, r.i), true
			case kDouble:
				return javaDoubleCompare(float64(l.i), r.f), true
			case kString:
				bits := 64
				if l.k == kInt {
					bits = 32
				}
				n, ok := parseJavaInt(r.s, bits)
				if !ok {
					return 0, false
				}
				return cmpInt(l.i, n), true
			}
			return -1, true
		case kDouble:
			switch r.k {
			case kInt, kLong:
				return javaDoubleCompare(l.f, float64(r.i)), true
			case kString:
				f, ok := parseJavaDouble(r.s)
				if !ok {
					return 0, false
				}
				return javaDoubleCompare(l.f, f), true
			}
			return -1, true
		case kString:
			switch r.k {
			case kBool:
				return compareBool(strings.EqualFold(l.s, "true"), r.b), true
			case kInt, kLong:
				bits := 64
				if r.k == kInt {
					bits = 32
				}
				n, ok := parseJavaInt(l.s, bits)
				if !ok {
					return 0, false
				}
				return cmpInt(n, r.i), true
			case kDouble:
				f, ok := parseJavaDouble(l.s)
				if !ok {
					return 0, false
				}
				return javaDoubleCompare(f, r.f), true
			}
			return -1, true
		}
		return -1, true
	}
	switch l.k {
	case kBool:
		return compareBool(l.b, r.b), true
	case kInt, kLong:
		return cmpInt(l.i, r.i), true
	case kDouble:
		return javaDoubleCompare(l.f, r.f), true
	case kString:
		return javaStringCompare(l.s, r.s), true
	}
	return -1, true
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// javaEquals is Object.equals for two values of the same kind.
func javaEquals(l, r value) bool {
	if l.k != r.k {
		return false
	}
	switch l.k {
	case kNull:
		return true
	case kBool:
		return l.b == r.b
	case kInt, kLong:
		return l.i == r.i
	case kDouble:
		return math.Float64bits(l.f) == math.Float64bits(r.f) || math.IsNaN(l.f) && math.IsNaN(r.f)
	case kString:
		return l.s == r.s
	}
	return false
}
