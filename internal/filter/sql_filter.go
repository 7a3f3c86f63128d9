package filter

import (
	"github.com/spoolmq/spool/message"
)

// SQLFilter evaluates a SQL92 expression over message properties.
type SQLFilter struct {
	expr  string
	root  *node
	names []string // property names, indexed by opProp.prop
	index map[string]int
}

// CompileSQL parses a SQL92 expression. Errors are *SyntaxError values
// (errors.Is(err, ErrSyntax)) with the line and column of the problem.
func CompileSQL(expr string) (*SQLFilter, error) {
	root, names, err := parse(expr)
	if err != nil {
		return nil, err
	}
	index := make(map[string]int, len(names))
	for i, n := range names {
		index[n] = i
	}
	return &SQLFilter{expr: expr, root: root, names: names, index: index}, nil
}

// MatchTagsCode is true: a SQL92 filter needs the record.
func (f *SQLFilter) MatchTagsCode(int64) bool { return true }

// MatchRecord evaluates the expression over the properties of a stored
// record. A record that does not parse does not match.
func (f *SQLFilter) MatchRecord(record []byte) bool {
	h, err := message.ParseRecordHeader(record)
	if err != nil {
		return false
	}
	return f.MatchPropertiesString(h.PropertiesString(record))
}

// MatchPropertiesString evaluates the expression over an encoded property
// string (name 0x01 value 0x02 ...), parsed with the Java rule.
func (f *SQLFilter) MatchPropertiesString(props string) bool {
	var buf [8]string
	vals := f.valueSlice(buf[:])
	if len(f.names) > 0 {
		message.RangeProperties(props, func(name, value string) bool {
			if i, ok := f.index[name]; ok {
				vals[i] = value
			}
			return true
		})
	}
	return isTrue(f.root.eval(vals))
}

// Match evaluates the expression over a property map. An empty value
// counts as missing, as it would in a stored record.
func (f *SQLFilter) Match(props map[string]string) bool {
	var buf [8]string
	vals := f.valueSlice(buf[:])
	for i, n := range f.names {
		vals[i] = props[n]
	}
	return isTrue(f.root.eval(vals))
}

// valueSlice returns a zeroed slice for the property values, in buf when
// it is large enough.
func (f *SQLFilter) valueSlice(buf []string) []string {
	if len(f.names) <= len(buf) {
		return buf[:len(f.names)]
	}
	return make([]string, len(f.names))
}

func isTrue(v value) bool { return v.k == kBool && v.b }

// Expression is the source expression.
func (f *SQLFilter) Expression() string { return f.expr }

// String is the expression as parsed, fully parenthesized (BETWEEN, <>,
// and IS NOT NULL appear in their expanded forms).
func (f *SQLFilter) String() string { return f.root.String() }

// Properties lists the property names the expression reads.
func (f *SQLFilter) Properties() []string { return append([]string(nil), f.names...) }
