package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Report says what Bind did with each key it accepted.
type Report struct {
	// Applied are keys set on at least one target, sorted.
	Applied []string
	// Unbuilt are RocketMQ keys no target declares: accepted and ignored.
	// The caller should warn, listing them.
	Unbuilt []string
}

// field is one prop-tagged struct field of a target.
type field struct {
	key  string
	live bool
	v    reflect.Value // settable
}

var durationType = reflect.TypeOf(time.Duration(0))

// fields collects the prop-tagged fields of targets, descending into struct
// fields (embedded or not) that carry no prop tag.
func fields(targets []any) ([]field, error) {
	var out []field
	for i, t := range targets {
		rv := reflect.ValueOf(t)
		if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
			return nil, fmt.Errorf("%w: target %d is %T, want a non-nil pointer to a struct", ErrBadTarget, i, t)
		}
		var err error
		out, err = collect(out, rv.Elem())
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func collect(out []field, sv reflect.Value) ([]field, error) {
	st := sv.Type()
	for i := 0; i < st.NumField(); i++ {
		sf := st.Field(i)
		key, tagged := sf.Tag.Lookup("prop")
		fv := sv.Field(i)
		if !tagged {
			if sf.Type.Kind() == reflect.Struct && sf.IsExported() {
				var err error
				if out, err = collect(out, fv); err != nil {
					return nil, err
				}
			}
			continue
		}
		if key == "" || key == "-" {
			continue
		}
		if !sf.IsExported() {
			return nil, fmt.Errorf("%w: %s.%s (prop %q) is unexported", ErrBadTarget, st.Name(), sf.Name, key)
		}
		if !settable(sf.Type) {
			return nil, fmt.Errorf("%w: %s.%s (prop %q) has type %s; use string, bool, an integer or a float (durations as integer milliseconds)",
				ErrBadTarget, st.Name(), sf.Name, key, sf.Type)
		}
		out = append(out, field{key: key, live: sf.Tag.Get("live") == "true", v: fv})
	}
	return out, nil
}

func settable(t reflect.Type) bool {
	if t == durationType {
		return false
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// parseValue converts s for a field of type t. Strings are trimmed, as
// RocketMQ trims them; booleans accept true/false in any case (RocketMQ
// would read anything else as false, which hides typos).
func parseValue(t reflect.Type, s string) (reflect.Value, error) {
	s = strings.TrimSpace(s)
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		switch strings.ToLower(s) {
		case "true":
			v.SetBool(true)
		case "false":
			v.SetBool(false)
		default:
			return v, fmt.Errorf("%q is not true or false", s)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, t.Bits())
		if err != nil {
			return v, fmt.Errorf("%q is not a %d-bit integer", s, t.Bits())
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(s, 10, t.Bits())
		if err != nil {
			return v, fmt.Errorf("%q is not an unsigned %d-bit integer", s, t.Bits())
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(s, t.Bits())
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return v, fmt.Errorf("%q is not a number", s)
		}
		v.SetFloat(f)
	}
	return v, nil
}

func formatValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'f', -1, v.Type().Bits())
	}
	return ""
}

// assignment is a parsed value waiting to be stored.
type assignment struct {
	dst reflect.Value
	val reflect.Value
}

// Bind applies props to the prop-tagged fields of targets (pointers to
// structs). Every key falls in one class:
//
//   - declared by a target: parsed and applied to every field declaring it;
//   - a RocketMQ key no target declares: accepted, listed in Report.Unbuilt;
//   - a refused value (see refusals): an error wrapping ErrNotBuilt;
//   - anything else: an error wrapping ErrUnknownKey naming the nearest key.
//
// Bind is all or nothing: when it returns an error (one joined error per
// offending key, in key order) no field has been changed.
func Bind(props map[string]string, targets ...any) (Report, error) {
	fs, err := fields(targets)
	if err != nil {
		return Report{}, err
	}
	byKey := make(map[string][]field, len(fs))
	for _, f := range fs {
		byKey[f.key] = append(byKey[f.key], f)
	}
	var rep Report
	var errs []error
	var todo []assignment
	for _, k := range sortedKeys(props) {
		v := props[k]
		bound := byKey[k]
		if r := refusal(k, v, len(bound) > 0, props); r != "" {
			errs = append(errs, fmt.Errorf("%w: %s=%s: %s", ErrNotBuilt, k, strings.TrimSpace(v), r))
			continue
		}
		if len(bound) == 0 {
			if isRocketMQKey(k) {
				rep.Unbuilt = append(rep.Unbuilt, k)
				continue
			}
			errs = append(errs, fmt.Errorf("%w: %s (did you mean %s?)", ErrUnknownKey, k, nearestKey(k, byKey)))
			continue
		}
		ok := true
		for _, f := range bound {
			pv, err := parseValue(f.v.Type(), v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: %s: %v", ErrBadValue, k, err))
				ok = false
				break
			}
			todo = append(todo, assignment{dst: f.v, val: pv})
		}
		if ok {
			rep.Applied = append(rep.Applied, k)
		}
	}
	if len(errs) > 0 {
		return Report{}, errors.Join(errs...)
	}
	for _, a := range todo {
		a.dst.Set(a.val)
	}
	return rep, nil
}

// Dump returns every prop-tagged field of targets as key -> value text (the
// GET_BROKER_CONFIG view). When two targets declare a key, the first wins.
// Invalid targets are skipped.
func Dump(targets ...any) map[string]string {
	out := make(map[string]string)
	for _, t := range targets {
		fs, err := fields([]any{t})
		if err != nil {
			continue
		}
		for _, f := range fs {
			if _, dup := out[f.key]; !dup {
				out[f.key] = formatValue(f.v)
			}
		}
	}
	return out
}

// UpdateLive applies props to fields tagged live:"true" only. A key that no
// target declares, or that a target declares without live:"true", is
// refused by name (ErrUnknownKey / ErrNotLive); so is a live-tagged key that
// names a path, directory or class, which is never changed at run time.
// It is all or nothing, like Bind. The caller serialises it with readers of
// the targets.
func UpdateLive(props map[string]string, targets ...any) error {
	fs, err := fields(targets)
	if err != nil {
		return err
	}
	byKey := make(map[string][]field, len(fs))
	for _, f := range fs {
		byKey[f.key] = append(byKey[f.key], f)
	}
	var errs []error
	var todo []assignment
	for _, k := range sortedKeys(props) {
		v := props[k]
		bound := byKey[k]
		if len(bound) == 0 {
			if isRocketMQKey(k) {
				errs = append(errs, fmt.Errorf("%w: %s is not built", ErrNotLive, k))
			} else {
				errs = append(errs, fmt.Errorf("%w: %s (did you mean %s?)", ErrUnknownKey, k, nearestKey(k, byKey)))
			}
			continue
		}
		if r := refusal(k, v, true, nil); r != "" {
			errs = append(errs, fmt.Errorf("%w: %s=%s: %s", ErrNotBuilt, k, strings.TrimSpace(v), r))
			continue
		}
		for _, f := range bound {
			if !f.live || neverLive(k) {
				errs = append(errs, fmt.Errorf("%w: %s", ErrNotLive, k))
				break
			}
			pv, err := parseValue(f.v.Type(), v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: %s: %v", ErrBadValue, k, err))
				break
			}
			todo = append(todo, assignment{dst: f.v, val: pv})
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, a := range todo {
		a.dst.Set(a.val)
	}
	return nil
}

// neverLive reports keys that name a path, a directory or a class: changing
// them under a running process is never safe, whatever a tag says.
func neverLive(k string) bool {
	l := strings.ToLower(k)
	for _, s := range []string{"path", "dir", "home", "class"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
