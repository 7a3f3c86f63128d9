package processor

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spoolmq/spool/remoting"
)

// Header reads typed ext fields of a request, remembering the first
// problem so a handler can answer it with one clear remark. The *Of
// methods take a value already looked up (a header read in one pass over
// the map); the others look the key up themselves.
type Header struct {
	cmd *remoting.Command
	// alias maps a long key to the short key of V2 headers.
	alias map[string]string
	err   error
}

// NewHeader reads cmd's ext fields.
func NewHeader(cmd *remoting.Command) *Header { return &Header{cmd: cmd} }

// Alias makes the reader look a long key up under its short key (the V2
// send header); error remarks name both.
func (r *Header) Alias(alias map[string]string) { r.alias = alias }

// Err is the first problem met, wrapping ErrBadHeader; nil if none.
func (r *Header) Err() error { return r.err }

func (r *Header) raw(key string) (string, bool) {
	k := key
	if r.alias != nil {
		if a, ok := r.alias[key]; ok {
			k = a
		}
	}
	return r.cmd.LookupExt(k)
}

func (r *Header) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrBadHeader}, args...)...)
	}
}

func (r *Header) shownKey(key string) string {
	if r.alias != nil {
		if a, ok := r.alias[key]; ok {
			return fmt.Sprintf("%s (%s)", key, a)
		}
	}
	return key
}

// Str returns a string field; a required field must be present and
// non-empty.
func (r *Header) Str(key string, required bool) string {
	v, ok := r.raw(key)
	return r.StrOf(key, v, ok, required)
}

// StrOf is Str for a value v (present when ok) of field key.
func (r *Header) StrOf(key, v string, ok, required bool) string {
	if required && (!ok || v == "") {
		r.fail("missing ext field %s", r.shownKey(key))
	}
	return v
}

// I64 returns an integer field; a missing optional field is def.
func (r *Header) I64(key string, required bool, def int64) int64 {
	v, ok := r.raw(key)
	return r.I64Of(key, v, ok, required, def)
}

// I64Of is I64 for a value v (present when ok) of field key.
func (r *Header) I64Of(key, v string, ok, required bool, def int64) int64 {
	if n, plain := plainDecimal(v); plain {
		return n
	}
	v = strings.TrimSpace(v)
	if !ok || v == "" {
		if required {
			r.fail("missing ext field %s", r.shownKey(key))
		}
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		r.fail("ext field %s=%q is not an integer", r.shownKey(key), v)
		return def
	}
	return n
}

// I32 returns a 32-bit integer field; a missing optional field is def.
func (r *Header) I32(key string, required bool, def int32) int32 {
	v, ok := r.raw(key)
	return r.I32Of(key, v, ok, required, def)
}

// I32Of is I32 for a value v (present when ok) of field key.
func (r *Header) I32Of(key, v string, ok, required bool, def int32) int32 {
	if n, plain := plainDecimal(v); plain && n >= math.MinInt32 && n <= math.MaxInt32 {
		return int32(n)
	}
	v = strings.TrimSpace(v)
	if !ok || v == "" {
		if required {
			r.fail("missing ext field %s", r.shownKey(key))
		}
		return def
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		r.fail("ext field %s=%q is not a 32-bit integer", r.shownKey(key), v)
		return def
	}
	return int32(n)
}

// plainDecimal parses the common form of an integer field, an optional
// '-' and 1 to 18 ASCII digits, without the general parser; false sends
// every other form (spaces, '+', longer, invalid) to strconv.
func plainDecimal(s string) (int64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	d := s
	if neg {
		d = s[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(d); i++ {
		c := d[i] - '0'
		if c > 9 {
			return 0, false
		}
		n = n*10 + int64(c)
	}
	if neg {
		n = -n
	}
	return n, true
}

// Bool follows Java's Boolean.parseBoolean: "true" in any case is true,
// anything else false.
func (r *Header) Bool(key string, def bool) bool {
	v, ok := r.raw(key)
	return BoolOf(v, ok, def)
}

// BoolOf is Bool for a value v (present when ok).
func BoolOf(v string, ok, def bool) bool {
	if !ok || v == "" {
		return def
	}
	return strings.EqualFold(strings.TrimSpace(v), "true")
}

// Has reports whether the field is present and non-empty.
func (r *Header) Has(key string) bool {
	v, ok := r.raw(key)
	return ok && v != ""
}
