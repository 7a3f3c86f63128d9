package remoting

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// maxJSONDepth bounds the nesting of values the decoder skips.
const maxJSONDepth = 32

// appendJSONHeader appends cmd's header as compact JSON in the order the Go
// client writes it. Strings are escaped exactly as encoding/json escapes
// them (HTML characters, control characters, U+2028/U+2029, invalid UTF-8
// as U+FFFD); ext fields are written in map order (readers do not care, and
// sorting costs more than the rest of the encoding); an empty ext map is
// written as {}.
func appendJSONHeader(dst []byte, cmd *Command) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(cmd.Code), 10)
	dst = append(dst, `,"language":`...)
	lang := cmd.Language
	if lang == "" {
		lang = "JAVA"
	}
	dst = appendJSONString(dst, lang)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, int64(cmd.Version), 10)
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(cmd.Opaque), 10)
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(cmd.Flag), 10)
	dst = append(dst, `,"remark":`...)
	dst = appendJSONString(dst, cmd.Remark)
	dst = append(dst, `,"extFields":{`...)
	first := true
	for k, v := range cmd.ExtFields {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		dst = appendJSONString(dst, v)
	}
	if t := cmd.ext; t != nil && t.live {
		for i := range int(t.n) {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			e := &t.tab[i]
			dst = appendJSONString(dst, t.src[e.k0:e.k1])
			dst = append(dst, ':')
			dst = appendJSONString(dst, t.value(e))
		}
	}
	return append(dst, "}}"...)
}

// jsonSafe[b] is true for ASCII bytes written as themselves.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = true
	}
	for _, b := range `"\<>&` {
		t[b] = false
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string escaped like encoding/json.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// decodeJSONHeader decodes a JSON header into cmd. The header bytes are
// converted to one string; field values without escapes are substrings of
// it, so a header costs one allocation plus the ext map.
func decodeJSONHeader(hdr []byte, cmd *Command) error {
	return decodeJSONHeaderMode(hdr, cmd, false)
}

// decodeJSONHeaderMode decodes a JSON header; with inline set, the ext
// fields go into the command's inline table when they fit it.
func decodeJSONHeaderMode(hdr []byte, cmd *Command, inline bool) error {
	d := jsonDecoder{s: headerString(hdr, cmd), inline: inline}
	if err := d.header(cmd); err != nil {
		return fmt.Errorf("%w: json at offset %d: %w", ErrBadHeader, d.i, err)
	}
	return nil
}

// jsonError is a decoding failure without its position; decodeJSONHeader
// wraps it.
type jsonError string

func (e jsonError) Error() string { return string(e) }

// extLimitError carries a limit sentinel through the decoder.
type extLimitError struct{ err error }

func (e extLimitError) Error() string { return e.err.Error() }
func (e extLimitError) Unwrap() error { return e.err }

type jsonDecoder struct {
	s    string
	i    int
	nExt int
	// inline asks for the inline ext table; extSeen is set once an
	// extFields key has been read (a second one merges into the map).
	inline  bool
	extSeen bool
}

const (
	fieldUnknown = iota
	fieldCode
	fieldLanguage
	fieldVersion
	fieldOpaque
	fieldFlag
	fieldRemark
	fieldExtFields
)

var fieldNames = [...]string{"", "code", "language", "version", "opaque", "flag", "remark", "extFields"}

// field maps a key to a Command field; like encoding/json it falls back to
// a case-insensitive match.
func field(k string) int {
	switch k {
	case "code":
		return fieldCode
	case "language":
		return fieldLanguage
	case "version":
		return fieldVersion
	case "opaque":
		return fieldOpaque
	case "flag":
		return fieldFlag
	case "remark":
		return fieldRemark
	case "extFields":
		return fieldExtFields
	}
	for f := fieldCode; f <= fieldExtFields; f++ {
		if strings.EqualFold(k, fieldNames[f]) {
			return f
		}
	}
	return fieldUnknown
}

func (d *jsonDecoder) ws() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next byte or 0 at the end.
func (d *jsonDecoder) peek() byte {
	if d.i < len(d.s) {
		return d.s[d.i]
	}
	return 0
}

func (d *jsonDecoder) expect(c byte) error {
	d.ws()
	if d.peek() != c {
		return jsonError(fmt.Sprintf("expected %q", c))
	}
	d.i++
	return nil
}

func (d *jsonDecoder) header(cmd *Command) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	d.ws()
	if d.peek() == '}' {
		d.i++
	} else {
		for {
			d.ws()
			if d.peek() != '"' {
				return jsonError("expected key")
			}
			key, err := d.str()
			if err != nil {
				return err
			}
			if err := d.expect(':'); err != nil {
				return err
			}
			d.ws()
			if err := d.value(field(key), cmd); err != nil {
				return err
			}
			d.ws()
			c := d.peek()
			d.i++
			if c == '}' {
				break
			}
			if c != ',' {
				return jsonError("expected , or }")
			}
		}
	}
	d.ws()
	if d.i != len(d.s) {
		return jsonError("data after the header object")
	}
	return nil
}

func (d *jsonDecoder) value(f int, cmd *Command) error {
	var p *int32
	switch f {
	case fieldCode:
		p = &cmd.Code
	case fieldVersion:
		p = &cmd.Version
	case fieldOpaque:
		p = &cmd.Opaque
	case fieldFlag:
		p = &cmd.Flag
	case fieldLanguage, fieldRemark:
		switch d.peek() {
		case 'n':
			return d.literal("null")
		case '"':
			s, err := d.str()
			if err != nil {
				return err
			}
			if f == fieldLanguage {
				cmd.Language = s
			} else {
				cmd.Remark = s
			}
			return nil
		}
		return jsonError("expected string")
	case fieldExtFields:
		return d.ext(cmd)
	default:
		return d.skip(0)
	}
	return d.int32(p)
}

// int32 reads an integer (or a string holding one, or null) into p.
func (d *jsonDecoder) int32(p *int32) error {
	var text string
	switch c := d.peek(); {
	case c == 'n':
		return d.literal("null")
	case c == '"':
		s, err := d.str()
		if err != nil {
			return err
		}
		text = strings.TrimSpace(s)
	default:
		lit, isInt, err := d.number()
		if err != nil {
			return err
		}
		if !isInt {
			return jsonError("number is not an integer")
		}
		text = lit
	}
	v, err := strconv.ParseInt(text, 10, 32)
	if err != nil {
		return jsonError("integer out of range or malformed")
	}
	*p = int32(v)
	return nil
}

// number scans a JSON number and returns its text.
func (d *jsonDecoder) number() (lit string, isInt bool, err error) {
	s, start, i := d.s, d.i, d.i
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return "", false, jsonError("invalid value")
	}
	isInt = true
	if i < len(s) && s[i] == '.' {
		isInt = false
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return "", false, jsonError("malformed number")
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		isInt = false
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return "", false, jsonError("malformed number")
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	d.i = i
	return s[start:i], isInt, nil
}

func (d *jsonDecoder) literal(lit string) error {
	if !strings.HasPrefix(d.s[d.i:], lit) {
		return jsonError("invalid literal")
	}
	d.i += len(lit)
	return nil
}

// ext reads the extFields value: null clears the map (as encoding/json
// does), an object merges into it. With d.inline, the first extFields
// object of a header of at most 64 KiB goes into the command's inline
// table as spans of the header text, until a field does not fit it (the
// table is full, or a key has escapes): then the table becomes the map and
// the rest of the object goes into the map.
func (d *jsonDecoder) ext(cmd *Command) error {
	switch d.peek() {
	case 'n':
		cmd.ExtMap()
		cmd.ExtFields = nil
		d.extSeen = true
		return d.literal("null")
	case '{':
	default:
		return jsonError("extFields is not an object")
	}
	d.i++
	inline := false
	if cmd.ext != nil && cmd.ext.live {
		cmd.ExtMap() // a second extFields object merges into the map
	} else if d.inline && cmd.ext != nil && !d.extSeen && len(d.s) <= maxTableHeader && cmd.ExtFields == nil {
		inline = true
		*cmd.ext = extTable{src: d.s, live: true}
	}
	d.extSeen = true
	d.ws()
	if d.peek() == '}' {
		d.i++
		return nil
	}
	for {
		d.ws()
		if d.peek() != '"' {
			return jsonError("expected ext key")
		}
		var (
			k      string
			k0, k1 int
			err    error
		)
		if inline {
			var esc bool
			if k0, k1, esc, err = d.strSpan(); err != nil {
				return err
			}
			if esc {
				cmd.ExtMap()
				inline = false
				k = unescapeAt(d.s, k0)
			} else {
				k = d.s[k0:k1]
			}
		} else if k, err = d.str(); err != nil {
			return err
		}
		if len(k) > MaxExtKeyLen {
			return extLimitError{fmt.Errorf("%w: key of %d bytes", ErrExtFieldTooLong, len(k))}
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		d.ws()
		var (
			v      string
			v0, v1 int
			vesc   bool
		)
		v0 = d.i
		switch c := d.peek(); {
		case c == '"':
			if inline {
				v0, v1, vesc, err = d.strSpan()
			} else {
				v, err = d.str()
			}
		case c == 'n':
			err = d.literal("null")
			v1 = v0
		case c == 't':
			v, err = "true", d.literal("true")
			v1 = d.i
		case c == 'f':
			v, err = "false", d.literal("false")
			v1 = d.i
		default:
			v, _, err = d.number()
			v1 = d.i
		}
		if err != nil {
			return err
		}
		vlen := len(v)
		if inline {
			vlen = v1 - v0 // an escaped span is never shorter than its text
		}
		if vlen > MaxExtValueLen {
			return extLimitError{fmt.Errorf("%w: value of %q has %d bytes", ErrExtFieldTooLong, k, vlen)}
		}
		d.nExt++
		if d.nExt > MaxExtFields {
			return extLimitError{fmt.Errorf("%w: more than %d", ErrTooManyExtFields, MaxExtFields)}
		}
		if inline && !cmd.ext.add(k0, k1, v0, v1, vesc) {
			cmd.ExtMap()
			inline = false
			if vesc {
				v = unescapeAt(d.s, v0)
			} else {
				v = d.s[v0:v1]
			}
		}
		if !inline {
			if cmd.ExtFields == nil {
				// Size the map once: every entry has a colon after its key,
				// so the colons left in the header bound the entries (loosely).
				cmd.ExtFields = make(map[string]string, min(strings.Count(d.s[d.i:], ":")+1, MaxExtFields))
			}
			cmd.ExtFields[k] = v
		}
		d.ws()
		c := d.peek()
		d.i++
		if c == '}' {
			return nil
		}
		if c != ',' {
			return jsonError("expected , or } in extFields")
		}
	}
}

// unescapeAt returns the text of the JSON string whose first byte after
// the opening quote is at start; the string has been validated.
func unescapeAt(s string, start int) string {
	d := jsonDecoder{s: s, i: start - 1}
	v, _ := d.str()
	return v
}

// strSpan validates the JSON string at d.i (which holds '"') exactly as str
// does, without unescaping it: its text (escaped when esc) is s[start:end].
func (d *jsonDecoder) strSpan() (start, end int, esc bool, err error) {
	s := d.s
	start = d.i + 1
	i := start
	for i < len(s) {
		c := s[i]
		if c == '"' {
			d.i = i + 1
			return start, i, false, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		i++
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			d.i = i + 1
			return start, i, true, nil
		case c < 0x20:
			return 0, 0, false, jsonError("control character in string")
		case c != '\\':
			i++
			continue
		}
		i++
		if i >= len(s) {
			break
		}
		switch s[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			r, ok := hex4(s, i+1)
			if !ok {
				return 0, 0, false, jsonError("malformed \\u escape")
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					r2, ok = hex4(s, i+3)
				}
				if ok && utf16.DecodeRune(r, r2) != utf8.RuneError {
					i += 6
				}
			}
		default:
			return 0, 0, false, jsonError("invalid escape")
		}
		i++
	}
	return 0, 0, false, jsonError("unterminated string")
}

// skip skips one value of any kind.
func (d *jsonDecoder) skip(depth int) error {
	if depth > maxJSONDepth {
		return jsonError("nesting too deep")
	}
	switch d.peek() {
	case '"':
		_, err := d.str()
		return err
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	case '{', '[':
		open := d.s[d.i]
		closer := byte('}')
		if open == '[' {
			closer = ']'
		}
		d.i++
		d.ws()
		if d.peek() == closer {
			d.i++
			return nil
		}
		for {
			d.ws()
			if open == '{' {
				if d.peek() != '"' {
					return jsonError("expected key")
				}
				if _, err := d.str(); err != nil {
					return err
				}
				if err := d.expect(':'); err != nil {
					return err
				}
				d.ws()
			}
			if err := d.skip(depth + 1); err != nil {
				return err
			}
			d.ws()
			c := d.peek()
			d.i++
			if c == closer {
				return nil
			}
			if c != ',' {
				return jsonError("expected , or closing bracket")
			}
		}
	}
	_, _, err := d.number()
	return err
}

// str reads a JSON string at d.i (which holds '"'). Without escapes the
// result is a substring of the header.
func (d *jsonDecoder) str() (string, error) {
	s := d.s
	start := d.i + 1
	i := start
	for i < len(s) {
		c := s[i]
		if c == '"' {
			d.i = i + 1
			return s[start:i], nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		i++
	}
	// The unescaped text is never longer than the escaped text: find the
	// closing quote and allocate once.
	end := i
	for end < len(s) && s[end] != '"' {
		if s[end] == '\\' {
			end++
		}
		end++
	}
	buf, err := d.appendStr(make([]byte, 0, min(end, len(s))-start), start, i)
	if err != nil {
		return "", err
	}
	// buf is never written again: hand its bytes over as the string.
	return unsafe.String(unsafe.SliceData(buf), len(buf)), nil
}

// appendStr appends to buf the text of the JSON string whose text starts
// at start (after its opening quote), s[start:i] holding no escapes, and
// moves d.i past the closing quote.
func (d *jsonDecoder) appendStr(buf []byte, start, i int) ([]byte, error) {
	s := d.s
	buf = append(buf, s[start:i]...)
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			d.i = i + 1
			return buf, nil
		case c < 0x20:
			return nil, jsonError("control character in string")
		case c != '\\':
			buf = append(buf, c)
			i++
			continue
		}
		i++
		if i >= len(s) {
			break
		}
		switch e := s[i]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := hex4(s, i+1)
			if !ok {
				return nil, jsonError("malformed \\u escape")
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					r2, ok = hex4(s, i+3)
				}
				if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return nil, jsonError("invalid escape")
		}
		i++
	}
	return nil, jsonError("unterminated string")
}

// hex4 parses the four hex digits at s[i:].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
