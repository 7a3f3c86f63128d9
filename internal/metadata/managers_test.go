package metadata

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTopicConfigManagerCreateInSend(t *testing.T) {
	m := NewTopicConfigManager(testDeps(t, t.TempDir()))
	tc, created := m.CreateInSendMessage("X", "TBW102", 4, 0, true)
	if !created || tc.WriteQueueNums != 4 || tc.Perm != PermRead|PermWrite {
		t.Fatalf("created %v %+v", created, tc)
	}
	if _, created := m.CreateInSendMessage("X", "TBW102", 4, 0, true); created {
		t.Fatalf("created twice")
	}
	if tc, _ := m.CreateInSendMessage("Y", "TBW102", 16, 0, true); tc.WriteQueueNums != 8 {
		t.Fatalf("queue count not clamped to TBW102's 8: %+v", tc)
	}
	if tc, _ := m.CreateInSendMessage("Z", "TBW102", 4, 0, false); tc != nil {
		t.Fatalf("created with auto-create off: %+v", tc)
	}
	if tc, _ := m.CreateInSendMessage("Z", "SELF_TEST_TOPIC", 4, 0, true); tc != nil {
		t.Fatalf("created from a template without the inherit bit: %+v", tc)
	}
}

func TestMetadataFilesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	m := NewTopicConfigManager(testDeps(t, dir))
	m.Put(NewTopicConfig("Persisted", 3, 5, 6))
	if err := m.File.Flush(); err != nil {
		t.Fatal(err)
	}
	o := NewConsumerOffsetManager(testDeps(t, dir))
	o.Commit("g", "Persisted", 4, 99)
	if err := o.File.Flush(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "consumerOffset.json"))
	if err != nil || !strings.Contains(string(raw), `"Persisted@g"`) || !strings.Contains(string(raw), `"4": 99`) {
		t.Fatalf("consumerOffset.json: %s %v", raw, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "topics.json.tmp")); !os.IsNotExist(err) {
		t.Errorf("temp file left behind: %v", err)
	}
	m2 := NewTopicConfigManager(testDeps(t, dir))
	if err := m2.Load(); err != nil {
		t.Fatal(err)
	}
	if tc := m2.Find("Persisted"); tc == nil || tc.WriteQueueNums != 5 {
		t.Fatalf("reloaded %+v", tc)
	}
	if m2.Version().Counter != m.Version().Counter {
		t.Errorf("data version %+v, want %+v", m2.Version(), m.Version())
	}
	o2 := NewConsumerOffsetManager(testDeps(t, dir))
	if err := o2.Load(); err != nil || o2.Query("g", "Persisted", 4) != 99 {
		t.Fatalf("reloaded offset %d, err %v", o2.Query("g", "Persisted", 4), err)
	}
	if err := os.WriteFile(filepath.Join(dir, "topics.json"), []byte("{broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := NewTopicConfigManager(testDeps(t, dir)).Load(); err == nil {
		t.Fatalf("a corrupt topics.json loaded without error")
	}
}

// The journal applies changes in version order, skips what topics.json
// already holds and a torn last line, and is emptied once topics.json
// holds everything in it.
func TestTopicJournalReplayAndEmpty(t *testing.T) {
	dir := t.TempDir()
	m := NewTopicConfigManager(testDeps(t, dir))
	j := m.Journal
	v := func(c int64) DataVersion { return DataVersion{Counter: c, Timestamp: c} }
	if err := j.Append([]TopicChange{
		{DataVersion: v(3), TopicConfig: NewTopicConfig("A", 2, 2, 6)},
		{DataVersion: v(5), Deleted: "A"},
		{DataVersion: v(4), TopicConfig: NewTopicConfig("A", 9, 9, 6)},
		{DataVersion: v(6), TopicConfig: NewTopicConfig("B", 1, 1, 6)},
	}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(j.path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"dataVersion":{"counter":7},"topicConf`)
	f.Close()
	j.Close()

	m2 := NewTopicConfigManager(testDeps(t, dir))
	if err := m2.Load(); err != nil {
		t.Fatal(err)
	}
	if m2.Find("A") != nil || m2.Find("B") == nil || m2.Version().Counter != 6 {
		t.Fatalf("replay: A=%+v B=%+v version %d; want A deleted, B present, version 6", m2.Find("A"), m2.Find("B"), m2.Version().Counter)
	}
	if err := m2.File.Flush(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(j.path); err != nil || st.Size() != 0 {
		t.Fatalf("journal after topics.json holds it all: %v size %d; want empty", err, st.Size())
	}
	m3 := NewTopicConfigManager(testDeps(t, dir))
	if err := m3.Load(); err != nil || m3.Find("B") == nil || m3.Version().Counter != 6 {
		t.Fatalf("reload from topics.json: %v B=%+v version %d", err, m3.Find("B"), m3.Version().Counter)
	}
	m2.Journal.Close()
}

// After a replica cuts its log (controller mode), no committed offset
// points past its queue's new end.
func TestConsumerOffsetsClampToQueueEnds(t *testing.T) {
	o := NewConsumerOffsetManager(testDeps(t, t.TempDir()))
	o.Commit("g1", "T", 0, 30)
	o.Commit("g1", "T", 1, 5)
	o.Commit("g2", "T", 0, 12)
	o.Commit("g2", "U", 0, 99)
	ends := map[string]int64{"T/0": 20, "T/1": 20, "U/0": 99}
	n := o.ClampTo(func(topic string, q int32) int64 { return ends[topic+"/"+string(rune('0'+q))] })
	if n != 1 {
		t.Fatalf("lowered %d offsets, want 1", n)
	}
	for _, c := range []struct {
		g, topic string
		q        int32
		want     int64
	}{{"g1", "T", 0, 20}, {"g1", "T", 1, 5}, {"g2", "T", 0, 12}, {"g2", "U", 0, 99}} {
		if got := o.Query(c.g, c.topic, c.q); got != c.want {
			t.Errorf("%s %s/%d: %d, want %d", c.g, c.topic, c.q, got, c.want)
		}
	}
}
