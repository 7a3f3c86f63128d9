package filter

import (
	"errors"
	"strings"
	"testing"

	"github.com/spoolmq/spool/message"
)

var testProps = map[string]string{
	"a":    "10",
	"b":    "abc",
	"c":    "3.5",
	"big":  "3000000000",
	"t":    "true",
	"neg":  "-5",
	"q":    "it's",
	"TAGS": "TagA",
	"ws":   " 7 ",
}

func TestSQLMatch(t *testing.T) {
	tests := []struct {
		expr string
		want bool
	}{
		// Numbers against string values.
		{"a > 5", true},
		{"a > 10", false},
		{"a >= 10", true},
		{"a < 11", true},
		{"a <= 9", false},
		{"a = 10", true},
		{"a <> 10", false},
		{"a <> 11", true},
		{"a = 10L", true},
		{"a = 10.0", true},
		{"a > 9.99", true},
		{"a > -5", true},
		{"neg = -5", true},
		{"neg < -4", true},
		{"neg > -4.5", false},
		{"c > 3.0", true},
		{"c = 3.50", true},
		{"c BETWEEN 3.4 AND 3.6", true},
		// An integer literal parses the value as a Java Integer: "3.5" and
		// "3000000000" do not parse, so the expression does not match.
		{"c > 3", false},
		{"NOT (c > 3)", false},
		{"big > 5", false},
		{"NOT (big > 5)", false},
		{"big < 5000000000", true},
		{"big > 2.0", true},
		{"b > 5", false},
		{"NOT (b > 5)", false},
		{"b = 5", false},
		{"b <> 5", false},
		// Double.valueOf trims white space; Integer.valueOf does not.
		{"ws = 7.0", true},
		{"ws = 7", false},
		// Strings.
		{"a = '10'", true},
		{"a = '10.0'", false},
		{"b = 'abc'", true},
		{"'abc' = b", true},
		{"b <> 'abd'", true},
		{"q = 'it''s'", true},
		{"TAGS = 'TagA'", true},
		{"TAGS IN ('TagA', 'TagB')", true},
		// Two properties: ordered comparisons parse both as doubles.
		{"a > c", true},
		{"c > a", false},
		{"a > b", false},
		{"NOT (a > b)", false},
		{"a = a", true},
		// Booleans.
		{"TRUE", true},
		{"FALSE", false},
		{"NOT FALSE", true},
		{"t = TRUE", true},
		{"a = TRUE", false},
		{"TRUE = t", false}, // RocketMQ raises an error here
		{"NOT (TRUE = t)", false},
		{"5 = TRUE", false},
		{"t", false}, // a property is a string, never a boolean
		{"NOT t", true},
		// BETWEEN, IN, string operators.
		{"a BETWEEN 5 AND 10", true},
		{"a BETWEEN 10 AND 10", true},
		{"a BETWEEN 11 AND 20", false},
		{"a NOT BETWEEN 11 AND 20", true},
		{"a NOT BETWEEN 5 AND 10", false},
		{"b IN ('abc', 'def')", true},
		{"b IN ('x', 'y', 'z', 'w', 'v', 'abc')", true},
		{"b NOT IN ('abc')", false},
		{"b NOT IN ('x')", true},
		{"a IN ('10')", true},
		{"b CONTAINS 'bc'", true},
		{"b NOT CONTAINS 'bc'", false},
		{"b STARTSWITH 'ab'", true},
		{"b NOT STARTSWITH 'ab'", false},
		{"b ENDSWITH 'bc'", true},
		{"b ENDSWITH 'ab'", false},
		{"b NOT ENDSWITH 'ab'", true},
		{"b CONTAINS ''", false},
		{"b NOT CONTAINS ''", false},
		{"(a > 5) CONTAINS 'x'", false},
		// Keywords in any case, comments, white space.
		{"a between 5 and 10 and b in ('abc') or false", true},
		{"a > 5 -- trailing comment\n AND b = 'abc'", true},
		{"/* leading */ a > 5 /* inner */ AND /**/ b = 'abc'", true},
		{"\ta\n>\r5\f", true},
		{"((((a > 5))))", true},
		{"+a > 5", true},
		{"- -a > 5", false}, // negating a string is NULL
		// Logic with definite values.
		{"a > 5 AND b = 'abc'", true},
		{"a > 5 AND b = 'abd'", false},
		{"a > 50 OR b = 'abc'", true},
		{"a > 50 OR b = 'abd'", false},
		{"NOT (a > 50) AND NOT (b = 'abd')", true},
	}
	for _, tt := range tests {
		f, err := CompileSQL(tt.expr)
		if err != nil {
			t.Errorf("CompileSQL(%q): %v", tt.expr, err)
			continue
		}
		if got := f.Match(testProps); got != tt.want {
			t.Errorf("%q = %v, want %v (parsed as %s)", tt.expr, got, tt.want, f)
		}
		checkSameOnRecord(t, f, tt.want)
	}
}

// TestSQLNull covers every operator with a missing property (x, y) and
// the three-valued logic of AND, OR and NOT.
func TestSQLNull(t *testing.T) {
	tests := []struct {
		expr string
		want bool
	}{
		{"x > 5", false},
		{"NOT (x > 5)", false},
		{"x >= 5", false},
		{"x < 5", false},
		{"x <= 5", false},
		{"NOT (x <= 5)", false},
		{"x = 5", false},
		{"NOT (x = 5)", false},
		{"x <> 5", false},
		{"NOT (x <> 5)", false},
		{"x = 'abc'", false},
		{"x <> 'abc'", false},
		{"x = TRUE", false},
		{"x IS NULL", true},
		{"NOT (x IS NULL)", false},
		{"x IS NOT NULL", false},
		{"NOT (x IS NOT NULL)", true},
		{"a IS NULL", false},
		{"a IS NOT NULL", true},
		{"(x > 5) IS NULL", true},
		{"(a > 5) IS NULL", false},
		{"x BETWEEN 1 AND 20", false},
		{"x NOT BETWEEN 1 AND 20", false},
		{"NOT (x BETWEEN 1 AND 20)", false},
		{"x IN ('a')", false},
		{"x NOT IN ('a')", false},
		{"NOT (x IN ('a'))", false},
		{"x CONTAINS 'a'", false},
		{"x NOT CONTAINS 'a'", false},
		{"NOT (x CONTAINS 'a')", false},
		{"x STARTSWITH 'a'", false},
		{"x NOT STARTSWITH 'a'", false},
		{"NOT (x STARTSWITH 'a')", false},
		{"x ENDSWITH 'a'", false},
		{"x NOT ENDSWITH 'a'", false},
		{"NOT (x ENDSWITH 'a')", false},
		{"x", false},
		{"NOT x", false},
		{"NULL", false},
		{"NOT NULL", false},
		{"NULL IS NULL", true},
		{"-x > 5", false},
		{"x > a", false},
		{"a > x", false},
		// RocketMQ's equality: UNKNOWN when the left is missing, FALSE when
		// only the right is, TRUE when both are.
		{"x = a", false},
		{"NOT (x = a)", false},
		{"a = x", false},
		{"NOT (a = x)", true},
		{"x = y", true},
		{"x <> y", false},
		// AND: FALSE wins over UNKNOWN; OR: TRUE wins over UNKNOWN.
		{"x > 5 AND a = 10", false},
		{"NOT (x > 5 AND a = 10)", false},
		{"x > 5 AND a = 11", false},
		{"NOT (x > 5 AND a = 11)", true},
		{"NOT (a = 11 AND x > 5)", true},
		{"x > 5 OR a = 10", true},
		{"a = 10 OR x > 5", true},
		{"x > 5 OR a = 11", false},
		{"NOT (x > 5 OR a = 11)", false},
		{"x > 5 OR TRUE", true},
		{"FALSE AND x > 5", false},
		{"NOT (FALSE AND x > 5)", true},
		{"NOT (x > 5 OR y > 5)", false},
		{"NOT (x > 5 AND y > 5)", false},
		// An evaluation error ends the evaluation, unless AND or OR decided
		// first (left to right), as in RocketMQ.
		{"b > 5 OR TRUE", false},
		{"TRUE OR b > 5", true},
		{"NOT (FALSE AND b > 5)", true},
		{"NOT (b > 5 AND FALSE)", false},
		{"x > 5 OR b > 5", false},
		{"(b > 5) IS NULL", false},
	}
	for _, tt := range tests {
		f, err := CompileSQL(tt.expr)
		if err != nil {
			t.Errorf("CompileSQL(%q): %v", tt.expr, err)
			continue
		}
		if got := f.Match(testProps); got != tt.want {
			t.Errorf("%q = %v, want %v (parsed as %s)", tt.expr, got, tt.want, f)
		}
		checkSameOnRecord(t, f, tt.want)
	}
}

// checkSameOnRecord evaluates f on a stored record carrying testProps.
func checkSameOnRecord(t *testing.T, f *SQLFilter, want bool) {
	t.Helper()
	m := &message.Inner{Topic: "T", Body: []byte("b"), Properties: testProps}
	rec := message.EncodeRecord(nil, m, "")
	if got := f.MatchRecord(rec); got != want {
		t.Errorf("%q on a record = %v, want %v", f.Expression(), got, want)
	}
	if !f.MatchTagsCode(12345) {
		t.Errorf("SQL filter refused a tag code")
	}
	// The printed form compiles to an equivalent filter.
	again, err := CompileSQL(f.String())
	if err != nil {
		t.Errorf("%q printed as %q, which does not compile: %v", f.Expression(), f.String(), err)
		return
	}
	if got := again.Match(testProps); got != want {
		t.Errorf("%q printed as %q evaluates to %v", f.Expression(), f.String(), got)
	}
}

func TestSQLSyntaxErrors(t *testing.T) {
	tests := []struct {
		expr      string
		msg       string
		line, col int
	}{
		{"", "empty expression", 1, 1},
		{"   -- only a comment", "empty expression", 1, 21},
		{"a >", "ends where an operand was expected", 1, 4},
		{"a > 'x'", "only numbers can", 1, 5},
		{"'x' < a", "only numbers can", 1, 1},
		{"a > TRUE", "only numbers can", 1, 5},
		{"a > NULL", "only numbers can", 1, 5},
		{"a = NULL", "use IS NULL", 1, 3},
		{"NULL <> a", "use IS NULL", 1, 6},
		{"TRUE = 5", "cannot be compared with 5", 1, 6},
		{"a BETWEEN 10 AND 5", "out of order", 1, 11},
		{"a BETWEEN 'a' AND 'b'", "only numbers can", 1, 11},
		{"a BETWEEN 1 OR 2", "expected AND", 1, 13},
		{"5", "not a condition", 1, 1},
		{"'abc'", "not a condition", 1, 1},
		{"-a", "not a condition", 1, 1},
		{"a > 5 AND 7", "not a condition", 1, 11},
		{"NOT 5", "not a condition", 1, 5},
		{"a IN (1, 2)", "expected a string literal in the IN list", 1, 7},
		{"a IN ()", "expected a string literal in the IN list", 1, 7},
		{"a IN ('x'", "expected ')'", 1, 10},
		{"'a' IN ('x')", "IN needs a property", 1, 1},
		{"a CONTAINS 5", "expected a string literal after CONTAINS", 1, 12},
		{"NOT a > 5", "cannot be compared with >", 1, 1},
		{"(a > 1) > 2", "cannot be compared with >", 1, 1},
		{"a > 5 b", "unexpected property b after a complete expression", 1, 7},
		{"a > 5 NOT", "unexpected NOT after a complete expression", 1, 7},
		{"a = 'abc", "unterminated string literal", 1, 5},
		{"a # 5", "unexpected character '#'", 1, 3},
		{"a != 5", "unexpected character '!'", 1, 3},
		{"a == 5", "expected an operand", 1, 4},
		{"a.b = 1", "unexpected character '.'", 1, 2},
		{"(a > 5", "expected ')' to close '(' at column 1", 1, 7},
		{"a > 99999999999999999999", "does not fit in 64 bits", 1, 5},
		{"a > 1e999", "out of the range of a double", 1, 5},
		{"a > 007", "unexpected number 0", 1, 6},
		{"a IS 5", "expected NULL after IS", 1, 6},
		{"a IS NOT 5", "expected NULL after IS NOT", 1, 10},
		{"a LIKE 'x%'", "unexpected property LIKE", 1, 3},
		{"/* open", "unterminated comment", 1, 1},
		{"a > 5\nAND b >", "ends where an operand was expected", 2, 8},
		{"é = 'x'", "unexpected character 'é'", 1, 1},
		{"b = 'é' AND #", "unexpected character '#'", 1, 13},
		{strings.Repeat("(", 300) + "TRUE" + strings.Repeat(")", 300), "nested deeper than", 1, 201},
	}
	for _, tt := range tests {
		_, err := Compile(TypeSQL92, tt.expr)
		var se *SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) {
			t.Errorf("Compile(%q) = %v, want a SyntaxError", tt.expr, err)
			continue
		}
		if !strings.Contains(se.Msg, tt.msg) || se.Line != tt.line || se.Column != tt.col {
			t.Errorf("Compile(%q) = %q at %d:%d, want %q at %d:%d", tt.expr, se.Msg, se.Line, se.Column, tt.msg, tt.line, tt.col)
		}
		if !strings.Contains(err.Error(), "line ") {
			t.Errorf("error text %q lacks the position", err)
		}
	}
}

func TestSQLFilterRecord(t *testing.T) {
	f, err := Compile("sql92", "TAGS = 'TagA' AND price > 100")
	if err != nil {
		t.Fatal(err)
	}
	if f.Expression() != "TAGS = 'TagA' AND price > 100" {
		t.Fatalf("Expression = %q", f.Expression())
	}
	rec := func(props map[string]string) []byte {
		return message.EncodeRecord(nil, &message.Inner{Topic: "T", Properties: props,
			BornHost: message.Addr{IP: make([]byte, 16), Port: 1}}, "")
	}
	if !f.MatchRecord(rec(map[string]string{"TAGS": "TagA", "price": "150"})) {
		t.Fatal("matching record refused")
	}
	if f.MatchRecord(rec(map[string]string{"TAGS": "TagB", "price": "150"})) {
		t.Fatal("other tag matched")
	}
	if f.MatchRecord(rec(map[string]string{"TAGS": "TagA"})) {
		t.Fatal("record without price matched")
	}
	good := rec(map[string]string{"TAGS": "TagA", "price": "150"})
	if f.MatchRecord(good[:len(good)-1]) || f.MatchRecord(nil) {
		t.Fatal("broken record matched")
	}
	// Java property rule: a later duplicate wins, empty values are dropped.
	s := f.(*SQLFilter)
	if !s.MatchPropertiesString("price\x0150\x02TAGS\x01TagA\x02price\x01200\x02") {
		t.Fatal("duplicate: the later value must win")
	}
	if s.MatchPropertiesString("price\x01\x02TAGS\x01TagA\x02") {
		t.Fatal("empty value counted as present")
	}
	if got := s.Properties(); len(got) != 2 || got[0] != "TAGS" || got[1] != "price" {
		t.Fatalf("Properties = %q", got)
	}
	// More properties than the on-stack buffer holds.
	var parts []string
	props := map[string]string{}
	for i := range 12 {
		name := "p" + string(rune('a'+i))
		parts = append(parts, name+" = 'v'")
		props[name] = "v"
	}
	many, err := CompileSQL(strings.Join(parts, " AND "))
	if err != nil {
		t.Fatal(err)
	}
	if !many.Match(props) || !many.MatchRecord(rec(props)) {
		t.Fatal("12-property expression did not match")
	}
	delete(props, "pl")
	if many.Match(props) || many.MatchRecord(rec(props)) {
		t.Fatal("12-property expression matched without pl")
	}
}

func TestParseJavaNumbers(t *testing.T) {
	ints := []struct {
		s    string
		bits int
		want int64
		ok   bool
	}{
		{"5", 32, 5, true}, {"+5", 32, 5, true}, {"-5", 32, -5, true}, {"007", 32, 7, true},
		{"2147483647", 32, 2147483647, true}, {"2147483648", 32, 0, false}, {"2147483648", 64, 2147483648, true},
		{"", 32, 0, false}, {"+", 32, 0, false}, {" 5", 32, 0, false}, {"5.0", 32, 0, false},
		{"1_000", 64, 0, false}, {"0x10", 64, 0, false},
	}
	for _, tt := range ints {
		got, ok := parseJavaInt(tt.s, tt.bits)
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseJavaInt(%q, %d) = %d, %v", tt.s, tt.bits, got, ok)
		}
	}
	doubles := []struct {
		s    string
		want float64
		ok   bool
	}{
		{"3.5", 3.5, true}, {" 3.5\t", 3.5, true}, {"-2", -2, true}, {"1e3", 1000, true}, {".5", 0.5, true},
		{"5.", 5, true}, {"2d", 2, true}, {"2F", 2, true}, {"0x1p3", 8, true}, {"0x1p3d", 8, true},
		{"Infinity", 0, true}, {"inf", 0, false}, {"nan", 0, false}, {"1_0", 0, false}, {"", 0, false},
		{"abc", 0, false}, {"0x10", 0, false}, {"1e999", 0, true},
	}
	for _, tt := range doubles {
		got, ok := parseJavaDouble(tt.s)
		if ok != tt.ok || ok && tt.want != 0 && got != tt.want {
			t.Errorf("parseJavaDouble(%q) = %v, %v", tt.s, got, ok)
		}
	}
	if v, ok := parseJavaDouble("NaN"); !ok || v == v {
		t.Errorf("NaN")
	}
}
