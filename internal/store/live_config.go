package store

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
)

// liveConfig is the store's configuration as it changes at run time: a
// copy-on-write pointer (readers on the put and pull paths pay one atomic
// load) and a channel closed at every change, which wakes the background
// loops sleeping on an interval that just changed.
//
// Keys tagged live:"true" are read through DefaultMessageStore.live();
// DefaultMessageStore.cfg keeps the start-up values of the others (a test
// fails when a live key is read through cfg).
type liveConfig struct {
	cur atomic.Pointer[Config]

	mu      sync.Mutex // serialises updates
	changed chan struct{}
}

func (l *liveConfig) init(cfg Config) {
	l.cur.Store(&cfg)
	l.changed = make(chan struct{})
}

// live returns the current configuration; never modify it.
func (st *DefaultMessageStore) live() *Config { return st.liveCfg.cur.Load() }

// liveChanged returns a channel closed at the next configuration change.
func (st *DefaultMessageStore) liveChanged() <-chan struct{} {
	st.liveCfg.mu.Lock()
	defer st.liveCfg.mu.Unlock()
	return st.liveCfg.changed
}

// UpdateConfig replaces the live keys with next's. next must equal the
// current configuration (Config) in every key not tagged live:"true";
// otherwise nothing changes and the error names the keys. Each change
// takes effect without a restart: limits at the next put or pull,
// intervals at once (the loops waiting on them are woken), retention at
// the next cleaning pass.
func (st *DefaultMessageStore) UpdateConfig(next Config) error {
	l := &st.liveCfg
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.cur.Load()
	if fixed := fixedChanges(cur, &next); len(fixed) > 0 {
		return fmt.Errorf("%w: %s cannot be changed at run time (restart with the new value)", ErrConfig, strings.Join(fixed, ", "))
	}
	if next.MaxMessageSize <= 0 {
		return fmt.Errorf("%w: maxMessageSize=%d must be positive", ErrConfig, next.MaxMessageSize)
	}
	l.cur.Store(&next)
	close(l.changed)
	l.changed = make(chan struct{})
	return nil
}

// fixedChanges lists the prop keys not tagged live whose values differ.
func fixedChanges(a, b *Config) []string {
	av, bv := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	t := av.Type()
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Tag.Get("live") == "true" {
			continue
		}
		if !reflect.DeepEqual(av.Field(i).Interface(), bv.Field(i).Interface()) {
			name := f.Tag.Get("prop")
			if name == "" {
				name = f.Name
			}
			out = append(out, name)
		}
	}
	return out
}
