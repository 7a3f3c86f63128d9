package config

import (
	"errors"
	"strings"
	"testing"
)

func FuzzParseProperties(f *testing.F) {
	for _, s := range []string{"a=b\n# c\n! d\n", "k = v \\\n  w", `a=\u00e9\uD83D\uDE00`, `x\=y:z`, "a=\\", `b=\u12`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		props, err := ParseProperties(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrBadEscape) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		// A parsed file binds without panicking: every key is classified.
		var target struct {
			ListenPort int `prop:"listenPort"`
		}
		_, _ = Bind(props, &target)
	})
}
