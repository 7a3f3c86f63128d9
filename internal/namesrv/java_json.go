package namesrv

import (
	"encoding/json"
	"errors"
)

// unmarshalJavaJSON decodes JSON written by a Java peer. fastjson writes maps
// with non-string keys with bare keys ({0:"a"}), which encoding/json refuses;
// on a syntax error the document is re-read with bare keys quoted.
func unmarshalJavaJSON(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err
	}
	fixed, ok := quoteBareKeys(data)
	if !ok {
		return err
	}
	return json.Unmarshal(fixed, v)
}

// quoteBareKeys returns data with every bare object key (a run of letters,
// digits, '-', '_', '.', '+') wrapped in quotes. It reports false when it
// found nothing to fix.
func quoteBareKeys(data []byte) ([]byte, bool) {
	out := make([]byte, 0, len(data)+16)
	var stack []byte // '{' or '['
	expectKey := false
	fixed := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(data) && data[j] != '"' {
				if data[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(data) {
				return nil, false
			}
			out = append(out, data[i:j+1]...)
			i = j
			expectKey = false
			continue
		case c == '{':
			stack = append(stack, c)
			expectKey = true
		case c == '[':
			stack = append(stack, c)
			expectKey = false
		case c == '}' || c == ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expectKey = false
		case c == ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1] == '{'
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		case expectKey && isBareKeyByte(c):
			j := i
			for j < len(data) && isBareKeyByte(data[j]) {
				j++
			}
			out = append(out, '"')
			out = append(out, data[i:j]...)
			out = append(out, '"')
			i = j - 1
			expectKey = false
			fixed = true
			continue
		default:
			expectKey = false
		}
		out = append(out, c)
	}
	return out, fixed
}

func isBareKeyByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' ||
		c == '-' || c == '_' || c == '.' || c == '+'
}
