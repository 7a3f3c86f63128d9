package adminbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/spoolmq/spool/internal/store/stats"
)

// rawKeyMark opens the text of a map key that is to be written bare (a
// MessageQueue's object, an IntKey's number) rather than as a JSON string.
// encoding/json writes it as the escape sequence rawKeyEscaped, which
// Marshal's final pass finds and replaces. No RocketMQ name starts with
// these control characters.
const rawKeyMark = "\x00\x1f"

var rawKeyEscaped = []byte(`"\u0000\u001f`)

// ErrSyntax is wrapped by every error Unmarshal returns for bytes that are
// not JSON, even in fastjson's extended form.
var ErrSyntax = errors.New("adminbody: malformed body")

// Marshal writes v as RocketMQ's fastjson writes the Java object it
// stands for: compact, HTML characters unescaped, MessageQueue and IntKey
// map keys bare.
func Marshal(v any) ([]byte, error) {
	b, err := marshalStd(v)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(b, rawKeyEscaped) {
		return b, nil
	}
	return unmarkRawKeys(b)
}

// marshalStd is json.Marshal without HTML escaping and without the
// encoder's trailing newline.
func marshalStd(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// unmarkRawKeys replaces every JSON string that starts with rawKeyMark by
// the string's content after the mark, unquoted.
func unmarkRawKeys(b []byte) ([]byte, error) {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		if b[i] != '"' {
			out = append(out, b[i])
			i++
			continue
		}
		end, err := stringEnd(b, i)
		if err != nil {
			return nil, err
		}
		tok := b[i:end]
		if bytes.HasPrefix(tok, rawKeyEscaped) {
			var s string
			if err := json.Unmarshal(tok, &s); err != nil {
				return nil, err
			}
			out = append(out, s[len(rawKeyMark):]...)
		} else {
			out = append(out, tok...)
		}
		i = end
	}
	return out, nil
}

// stringEnd returns the index just past the JSON string opening at b[i].
func stringEnd(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("%w: unterminated string at %d", ErrSyntax, i)
}

// Unmarshal reads a body RocketMQ wrote (fastjson's extended JSON, or
// standard JSON) into v.
func Unmarshal(data []byte, v any) error {
	norm, err := Normalize(data)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(norm, v); err != nil {
		return fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return nil
}

// Normalize rewrites fastjson's extended JSON as standard JSON: every
// object key that is not a string (an object, an array, a number, a
// literal) becomes a string holding the key's compact text. Whitespace
// between tokens is dropped.
func Normalize(data []byte) ([]byte, error) {
	p := &normalizer{in: data, out: make([]byte, 0, len(data)+16)}
	p.ws()
	if err := p.value(0); err != nil {
		return nil, err
	}
	p.ws()
	if p.i != len(p.in) {
		return nil, p.errf("trailing bytes")
	}
	return p.out, nil
}

// maxDepth bounds the nesting Normalize follows, so a hostile body cannot
// exhaust the stack.
const maxDepth = 200

type normalizer struct {
	in  []byte
	i   int
	out []byte
}

func (p *normalizer) errf(what string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrSyntax, what, p.i)
}

func (p *normalizer) ws() {
	for p.i < len(p.in) {
		switch p.in[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *normalizer) value(depth int) error {
	if depth > maxDepth {
		return p.errf("nesting too deep")
	}
	if p.i >= len(p.in) {
		return p.errf("unexpected end")
	}
	switch c := p.in[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		end, err := stringEnd(p.in, p.i)
		if err != nil {
			return err
		}
		p.out = append(p.out, p.in[p.i:end]...)
		p.i = end
		return nil
	case c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'):
		start := p.i
		for p.i < len(p.in) && isScalarByte(p.in[p.i]) {
			p.i++
		}
		p.out = append(p.out, p.in[start:p.i]...)
		return nil
	default:
		return p.errf(fmt.Sprintf("unexpected %q", c))
	}
}

func isScalarByte(c byte) bool {
	return c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func (p *normalizer) object(depth int) error {
	p.out = append(p.out, '{')
	p.i++
	p.ws()
	if p.i < len(p.in) && p.in[p.i] == '}' {
		p.out = append(p.out, '}')
		p.i++
		return nil
	}
	for {
		p.ws()
		if p.i >= len(p.in) {
			return p.errf("unexpected end in object")
		}
		if p.in[p.i] == '"' {
			if err := p.value(depth + 1); err != nil {
				return err
			}
		} else {
			// A non-string key: normalize it on its own, then write its
			// text as a string key.
			saved := p.out
			p.out = nil
			if err := p.value(depth + 1); err != nil {
				return err
			}
			key := p.out
			p.out = saved
			q, err := marshalStd(string(key))
			if err != nil {
				return err
			}
			p.out = append(p.out, q...)
		}
		p.ws()
		if p.i >= len(p.in) || p.in[p.i] != ':' {
			return p.errf("expected ':'")
		}
		p.out = append(p.out, ':')
		p.i++
		p.ws()
		if err := p.value(depth + 1); err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.in) {
			return p.errf("unexpected end in object")
		}
		switch p.in[p.i] {
		case ',':
			p.out = append(p.out, ',')
			p.i++
		case '}':
			p.out = append(p.out, '}')
			p.i++
			return nil
		default:
			return p.errf("expected ',' or '}'")
		}
	}
}

func (p *normalizer) array(depth int) error {
	p.out = append(p.out, '[')
	p.i++
	p.ws()
	if p.i < len(p.in) && p.in[p.i] == ']' {
		p.out = append(p.out, ']')
		p.i++
		return nil
	}
	for {
		p.ws()
		if err := p.value(depth + 1); err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.in) {
			return p.errf("unexpected end in array")
		}
		switch p.in[p.i] {
		case ',':
			p.out = append(p.out, ',')
			p.i++
		case ']':
			p.out = append(p.out, ']')
			p.i++
			return nil
		default:
			return p.errf("expected ',' or ']'")
		}
	}
}

// Double is a Java double: written as Double.toString writes it ("0.0",
// "12.5", "1.0E7"), NaN and infinities as null, as fastjson does; read
// from any JSON number, null reading as zero.
type Double float64

// MarshalJSON writes d as fastjson writes a double.
func (d Double) MarshalJSON() ([]byte, error) {
	f := float64(d)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return []byte(stats.JavaDouble(f)), nil
}

// UnmarshalJSON reads a JSON number or null.
func (d *Double) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*d = 0
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("%w: double %s", ErrSyntax, b)
	}
	*d = Double(f)
	return nil
}

// Map is a map written as {} when nil, as a Java map field that starts
// empty is written.
type Map[K comparable, V any] map[K]V

// MarshalJSON writes m, {} when nil.
func (m Map[K, V]) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("{}"), nil
	}
	return marshalStd(map[K]V(m))
}

// List is a list or set written as [] when nil, as a Java collection field
// that starts empty is written.
type List[T any] []T

// MarshalJSON writes l, [] when nil.
func (l List[T]) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("[]"), nil
	}
	return marshalStd([]T(l))
}
