package datapath

import (
	"strconv"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/message"
)

// A delayed message's due time (its tag field in SCHEDULE_TOPIC_XXXX) is
// read from the injected clock.
func TestApplyDelayStampsFromClock(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	d := New(Deps{DelayLevels: []time.Duration{time.Second, 5 * time.Second}, Clock: clk})
	m := &message.Inner{Topic: "T", QueueID: 3, Properties: map[string]string{message.PropertyDelayTimeLevel: "2"}}
	if !d.ApplyDelay(m) {
		t.Fatal("not rewritten")
	}
	if want := clk.Now().UnixMilli() + 5000; m.TagsCode != want {
		t.Fatalf("due %d, want %d", m.TagsCode, want)
	}
	if m.Topic != topicSchedule || m.QueueID != 1 || m.Properties[message.PropertyRealTopic] != "T" ||
		m.Properties[message.PropertyRealQueueID] != strconv.Itoa(3) {
		t.Fatalf("rewritten to %s/%d %v", m.Topic, m.QueueID, m.Properties)
	}
}

// The batch check reads DELAY from the property string as the map would:
// the last occurrence wins, malformed segments are skipped.
func TestDelayLevelOfStringMatchesTheMap(t *testing.T) {
	for _, s := range []string{"", "DELAY\x013\x02", "TAGS\x01a\x02DELAY\x01 2 \x02", "DELAY\x013\x02DELAY\x010\x02",
		"DELAY\x010\x02DELAY\x014\x02", "DELAY\x01x\x02", "DELAY\x01\x02", "\x01DELAY\x02DELAY\x015", "KEYS\x01DELAY\x02"} {
		if got, want := delayLevelOfString(s), DelayLevelOf(message.DecodeProperties(s)); got != want {
			t.Errorf("%q: %d, the map gives %d", s, got, want)
		}
	}
}
