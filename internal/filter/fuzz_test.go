package filter

import (
	"testing"
)

var fuzzPropSets = []map[string]string{
	{},
	testProps,
	{"a": "-3", "b": "x", "c": "NaN", "x": "1e400", "y": "0x1p3"},
}

// FuzzCompile: the parser never panics, and whatever compiles prints to an
// expression that compiles again and evaluates the same.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		"a > 5", "a BETWEEN 1 AND 3 AND b IN ('x', 'y')", "NOT (x IS NULL) OR c CONTAINS 'z'",
		"a NOT STARTSWITH 'p' AND b NOT ENDSWITH 'q'", "-a <= -2.5e3", "TRUE", "x = y", "'it''s' = q",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		flt, err := CompileSQL(expr)
		if err != nil {
			return
		}
		printed := flt.String()
		again, err := CompileSQL(printed)
		if err != nil {
			t.Fatalf("%q printed as %q: %v", expr, printed, err)
		}
		for _, props := range fuzzPropSets {
			if a, b := flt.Match(props), again.Match(props); a != b {
				t.Fatalf("%q = %v but its printed form %q = %v on %v", expr, a, printed, b, props)
			}
		}
	})
}
