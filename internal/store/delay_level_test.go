package store

import (
	"errors"
	"testing"

	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

// A delayed message's consume-queue entry carries its delivery time: the
// store time plus its level's delay, read with internal/delaylevel's rule,
// the broker's (an empty messageDelayLevel is the default table, not a
// table of none).
func TestScheduleEntryTagsCodeIsDeliveryTime(t *testing.T) {
	for _, c := range []struct {
		levels string
		level  string
		delay  int64
	}{
		{"", "3", 10_000},        // default table: level 3 is 10s
		{"2s 1m", "2", 60_000},   // level 2
		{"2s 1m", "9", 60_000},   // past the table: the last level
		{"1s 5s 10s", "1", 1000}, // level 1
	} {
		cfg := testConfig(t)
		cfg.MessageDelayLevel = c.levels
		st := openStarted(t, cfg, vfs.OS())
		m := testMsg(systopic.Schedule, 0, "x", "")
		m.Properties[message.PropertyDelayTimeLevel] = c.level
		mustPut(t, st, m)
		waitDispatched(t, st, systopic.Schedule, 0, 1)
		e, ok := st.consumeQueue(systopic.Schedule, 0, false).entryAt(0)
		if !ok {
			t.Fatal("no entry")
		}
		if ts := st.storeTimeAt(e.Offset); e.TagsCode != ts+c.delay {
			t.Errorf("levels %q level %s: tags code %d, store time %d, want +%d", c.levels, c.level, e.TagsCode, ts, c.delay)
		}
		st.Shutdown()
	}
	cfg := testConfig(t)
	cfg.MessageDelayLevel = "1s -5s"
	if _, err := Open(cfg, vfs.OS(), nil); !errors.Is(err, ErrConfig) {
		t.Fatalf("Open with a negative level: %v", err)
	}
}
