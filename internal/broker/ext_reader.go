package broker

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spoolmq/spool/remoting"
)

// extReader reads typed ext fields of a request, remembering the first
// problem so a handler can answer it with one clear remark. The *Of
// methods take a value already looked up (a header read in one pass over
// the map); the others look the key up themselves.
type extReader struct {
	cmd *remoting.Command
	// alias maps a long key to the short key of V2 headers.
	alias map[string]string
	err   error
}

func newExtReader(cmd *remoting.Command) *extReader { return &extReader{cmd: cmd} }

func (r *extReader) raw(key string) (string, bool) {
	k := key
	if r.alias != nil {
		if a, ok := r.alias[key]; ok {
			k = a
		}
	}
	if r.cmd.ExtFields == nil {
		return "", false
	}
	v, ok := r.cmd.ExtFields[k]
	return v, ok
}

func (r *extReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrBadHeader}, args...)...)
	}
}

func (r *extReader) shownKey(key string) string {
	if r.alias != nil {
		if a, ok := r.alias[key]; ok {
			return fmt.Sprintf("%s (%s)", key, a)
		}
	}
	return key
}

// str returns a string field; a required field must be present and
// non-empty.
func (r *extReader) str(key string, required bool) string {
	v, ok := r.raw(key)
	return r.strOf(key, v, ok, required)
}

// strOf is str for a value v (present when ok) of field key.
func (r *extReader) strOf(key, v string, ok, required bool) string {
	if required && (!ok || v == "") {
		r.fail("missing ext field %s", r.shownKey(key))
	}
	return v
}

func (r *extReader) i64(key string, required bool, def int64) int64 {
	v, ok := r.raw(key)
	return r.i64Of(key, v, ok, required, def)
}

// i64Of is i64 for a value v (present when ok) of field key.
func (r *extReader) i64Of(key, v string, ok, required bool, def int64) int64 {
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

func (r *extReader) i32(key string, required bool, def int32) int32 {
	v, ok := r.raw(key)
	return r.i32Of(key, v, ok, required, def)
}

// i32Of is i32 for a value v (present when ok) of field key.
func (r *extReader) i32Of(key, v string, ok, required bool, def int32) int32 {
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

// boolean follows Java's Boolean.parseBoolean: "true" in any case is true,
// anything else false.
func (r *extReader) boolean(key string, def bool) bool {
	v, ok := r.raw(key)
	return boolOf(v, ok, def)
}

// boolOf is boolean for a value v (present when ok).
func boolOf(v string, ok, def bool) bool {
	if !ok || v == "" {
		return def
	}
	return strings.EqualFold(strings.TrimSpace(v), "true")
}

// has reports whether the field is present and non-empty.
func (r *extReader) has(key string) bool {
	v, ok := r.raw(key)
	return ok && v != ""
}
