package metadata

import (
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
)

// Data versions are stamped by the clock of the Deps, not the wall clock.
func TestDataVersionReadsTheClock(t *testing.T) {
	start := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clock.NewManual(start)
	m := NewTopicConfigManager(Deps{ConfigDir: t.TempDir(), Clock: clk})
	if _, v := m.Snapshot(); v.Timestamp != start.UnixMilli() {
		t.Fatalf("initial stamp %d, want %d", v.Timestamp, start.UnixMilli())
	}
	clk.Advance(time.Minute)
	m.Put(NewTopicConfig("T", 1, 1, PermRead|PermWrite))
	if _, v := m.Snapshot(); v.Timestamp != start.Add(time.Minute).UnixMilli() || v.Counter == 0 {
		t.Fatalf("stamp after a change %+v, want %d", v, start.Add(time.Minute).UnixMilli())
	}
}

// NextStateVersion stamps the state version and changes the version, so
// a name server both re-applies the registration and can rank it.
func TestNextStateVersion(t *testing.T) {
	m := NewTopicConfigManager(Deps{ConfigDir: t.TempDir()})
	_, before := m.Snapshot()
	m.NextStateVersion(7)
	_, after := m.Snapshot()
	if after.StateVersion != 7 || after.Counter != before.Counter+1 {
		t.Fatalf("after NextStateVersion(7): %+v (before %+v)", after, before)
	}
	m.Put(NewTopicConfig("T", 1, 1, PermRead|PermWrite))
	if _, v := m.Snapshot(); v.StateVersion != 7 {
		t.Fatalf("a topic change dropped the state version: %+v", v)
	}
}
