package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"equals", "a=b", map[string]string{"a": "b"}},
		{"colon", "a: b", map[string]string{"a": "b"}},
		{"space separator", "a   b c", map[string]string{"a": "b c"}},
		{"spaces around equals", "  listenPort  =  10911  ", map[string]string{"listenPort": "10911"}},
		{"hash comment", "# a=b\nc=d", map[string]string{"c": "d"}},
		{"bang comment", "  ! a=b\nc=d", map[string]string{"c": "d"}},
		{"hash inside value", "a=b#c", map[string]string{"a": "b#c"}},
		{"blank lines", "\n\n   \na=1\n\n", map[string]string{"a": "1"}},
		{"empty value", "a=\nb", map[string]string{"a": "", "b": ""}},
		{"crlf and cr", "a=1\r\nb=2\rc=3", map[string]string{"a": "1", "b": "2", "c": "3"}},
		{"continuation", "a=one \\\n    two \\\n\tthree", map[string]string{"a": "one two three"}},
		{"even backslashes do not continue", "a=x\\\\\nb=y", map[string]string{"a": "x\\", "b": "y"}},
		{"comment does not continue", "# c \\\na=1", map[string]string{"a": "1"}},
		{"escapes", `a=t\tn\nr\rf\f`, map[string]string{"a": "t\tn\nr\rf\f"}},
		{"unicode escape", `a=caf\u00e9 \u4e2d`, map[string]string{"a": "café 中"}},
		{"surrogate pair", `a=\uD83D\uDE00`, map[string]string{"a": "😀"}},
		{"escaped separator in key", `my\=key=v`, map[string]string{"my=key": "v"}},
		{"escaped space in key", `my\ key v`, map[string]string{"my key": "v"}},
		{"second equals is value", "a==b", map[string]string{"a": "=b"}},
		{"windows path", `storePathRootDir=C:\\data\\store`, map[string]string{"storePathRootDir": `C:\data\store`}},
		{"trailing blanks trimmed", "a=v \t ", map[string]string{"a": "v"}},
		{"escaped trailing blank kept", `a=v\ `, map[string]string{"a": "v "}},
		{"last wins", "a=1\na=2", map[string]string{"a": "2"}},
		{"key only", "flag", map[string]string{"flag": ""}},
		{"other escape", `a=\q`, map[string]string{"a": "q"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProperties(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParsePropertiesBadEscape(t *testing.T) {
	for _, in := range []string{`a=\u12`, `a=\u12zz`, "x=1\nb=\\uXYZW"} {
		_, err := ParseProperties(strings.NewReader(in))
		if !errors.Is(err, ErrBadEscape) {
			t.Errorf("%q: err = %v, want ErrBadEscape", in, err)
		}
	}
	_, err := ParseProperties(strings.NewReader("x=1\nb=\\u12"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error should name line 2: %v", err)
	}
}

func TestLoadFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "broker.conf")
	conf := "brokerClusterName = DefaultCluster\nbrokerName=broker-a\nflushDiskType=ASYNC_FLUSH\n"
	if err := os.WriteFile(p, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"brokerClusterName": "DefaultCluster", "brokerName": "broker-a", "flushDiskType": "ASYNC_FLUSH"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing.conf")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
