package main

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/spoolmq/spool/internal/broker"
	"github.com/spoolmq/spool/internal/controller"
	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/store"
)

// propKeys lists the prop-tagged keys of a configuration struct, walking
// embedded structs.
func propKeys(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if k := f.Tag.Get("prop"); k != "" {
			out = append(out, k)
		} else if f.Type.Kind() == reflect.Struct {
			out = append(out, propKeys(f.Type)...)
		}
	}
	return out
}

// TestREADMEListsEveryKey keeps the README's configuration section in step
// with the keys Spool applies.
func TestREADMEListsEveryKey(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	for _, cfg := range []any{broker.DefaultConfig(), store.DefaultConfig(), namesrv.DefaultConfig(), controller.DefaultConfig()} {
		for _, k := range propKeys(reflect.TypeOf(cfg)) {
			if !strings.Contains(text, k) {
				t.Errorf("README.md does not mention the supported key %s (%T)", k, cfg)
			}
		}
	}
}
