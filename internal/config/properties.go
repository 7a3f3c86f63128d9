package config

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf16"
)

// ParseProperties reads Java .properties text (java.util.Properties.load
// rules, see the package doc) into a map; a repeated key keeps its last
// value. Input is read as UTF-8.
func ParseProperties(r io.Reader) (map[string]string, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read properties: %w", err)
	}
	props := make(map[string]string)
	lines := splitNaturalLines(data)
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		line := trimLeftSpace(lines[i])
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// Join continuation lines: an odd number of trailing backslashes.
		var logical strings.Builder
		for {
			if endsWithOddBackslashes(line) {
				logical.WriteString(line[:len(line)-1])
				i++
				if i >= len(lines) {
					break
				}
				line = trimLeftSpace(lines[i])
				continue
			}
			logical.WriteString(line)
			break
		}
		k, v, err := parseLogicalLine(logical.String())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		props[k] = v
	}
	return props, nil
}

// LoadFile reads a .properties file.
func LoadFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open config: %w", err)
	}
	defer f.Close()
	props, err := ParseProperties(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return props, nil
}

// splitNaturalLines splits on \n, \r and \r\n.
func splitNaturalLines(data []byte) []string {
	var out []string
	for len(data) > 0 {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			out = append(out, string(data))
			break
		}
		out = append(out, string(data[:i]))
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return out
}

func isPropSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeftSpace(s string) string {
	i := 0
	for i < len(s) && isPropSpace(s[i]) {
		i++
	}
	return s[i:]
}

func endsWithOddBackslashes(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// parseLogicalLine splits "key = value" (separator '=', ':' or whitespace,
// the first one not escaped) and unescapes both halves. Unescaped trailing
// whitespace of the value is trimmed, as RocketMQ trims string values.
func parseLogicalLine(line string) (string, string, error) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || isPropSpace(c) {
			break
		}
		i++
	}
	if i > len(line) {
		i = len(line)
	}
	rawKey := line[:i]
	rest := line[i:]
	rest = trimLeftSpace(rest)
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = trimLeftSpace(rest[1:])
	}
	key, _, err := unescape(rawKey)
	if err != nil {
		return "", "", fmt.Errorf("key %q: %w", rawKey, err)
	}
	val, keep, err := unescape(rest)
	if err != nil {
		return "", "", fmt.Errorf("value of %q: %w", key, err)
	}
	return key, val[:keep], nil
}

// unescape resolves \t \n \r \f \uXXXX and \<c> -> c. It also returns the
// length of the result without its unescaped trailing whitespace.
func unescape(s string) (string, int, error) {
	if !strings.Contains(s, "\\") {
		t := strings.TrimRight(s, " \t\f")
		return s, len(t), nil
	}
	var b strings.Builder
	keep := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			if !isPropSpace(c) {
				keep = b.Len()
			}
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash (end of input) is dropped, as Java does
		}
		switch e := s[i]; e {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", 0, fmt.Errorf("%w: \\u needs 4 hex digits", ErrBadEscape)
			}
			r, ok := hex4(s[i+1 : i+5])
			if !ok {
				return "", 0, fmt.Errorf("%w: \\u%s", ErrBadEscape, s[i+1:i+5])
			}
			i += 4
			// A surrogate pair arrives as two escapes: \uD83D\uDE00.
			if utf16.IsSurrogate(r) && i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if lo, ok := hex4(s[i+3 : i+7]); ok {
					if pr := utf16.DecodeRune(r, lo); pr != unicode.ReplacementChar {
						r = pr
						i += 6
					}
				}
			}
			b.WriteRune(r)
		default:
			b.WriteByte(e)
		}
		keep = b.Len()
	}
	return b.String(), keep, nil
}

// hex4 parses exactly four hex digits.
func hex4(h string) (rune, bool) {
	if len(h) != 4 {
		return 0, false
	}
	var r rune
	for i := 0; i < 4; i++ {
		c := h[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}
