package broker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

func TestTopicConfigManagerCreateInSend(t *testing.T) {
	cfg := testConfig()
	m := newTopicConfigManager(&cfg, t.TempDir(), testLogger(t))
	tc, created := m.CreateInSendMessage("X", "TBW102", 4, 0, true)
	if !created || tc.WriteQueueNums != 4 || tc.Perm != permRead|permWrite {
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
	cfg := testConfig()
	m := newTopicConfigManager(&cfg, dir, testLogger(t))
	m.Put(newTopicConfig("Persisted", 3, 5, 6))
	if err := m.file.flush(); err != nil {
		t.Fatal(err)
	}
	o := newConsumerOffsetManager(dir, testLogger(t))
	o.Commit("g", "Persisted", 4, 99)
	if err := o.file.flush(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "consumerOffset.json"))
	if err != nil || !strings.Contains(string(raw), `"Persisted@g"`) || !strings.Contains(string(raw), `"4": 99`) {
		t.Fatalf("consumerOffset.json: %s %v", raw, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "topics.json.tmp")); !os.IsNotExist(err) {
		t.Errorf("temp file left behind: %v", err)
	}
	m2 := newTopicConfigManager(&cfg, dir, testLogger(t))
	if err := m2.load(); err != nil {
		t.Fatal(err)
	}
	if tc := m2.Find("Persisted"); tc == nil || tc.WriteQueueNums != 5 {
		t.Fatalf("reloaded %+v", tc)
	}
	if m2.Version().Counter != m.Version().Counter {
		t.Errorf("data version %+v, want %+v", m2.Version(), m.Version())
	}
	o2 := newConsumerOffsetManager(dir, testLogger(t))
	if err := o2.load(); err != nil || o2.Query("g", "Persisted", 4) != 99 {
		t.Fatalf("reloaded offset %d, err %v", o2.Query("g", "Persisted", 4), err)
	}
	if err := os.WriteFile(filepath.Join(dir, "topics.json"), []byte("{broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := newTopicConfigManager(&cfg, dir, testLogger(t)).load(); err == nil {
		t.Fatalf("a corrupt topics.json loaded without error")
	}
}

func TestSubscriptionNormalize(t *testing.T) {
	var d SubscriptionData
	if err := json.Unmarshal([]byte(`{"topic":"T","subString":"TagA || TagB","codeSet":["1",2],"expressionType":"TAG"}`), &d); err != nil {
		t.Fatal(err)
	}
	s := normalizeSubscription(d)
	if s.compileErr != nil || s.filter == nil {
		t.Fatalf("compile: %v", s.compileErr)
	}
	want := []int64{message.TagsHashCode("TagA"), message.TagsHashCode("TagB")}
	if len(s.data.CodeSet) != 2 || s.data.CodeSet[0] != want[0] || s.data.CodeSet[1] != want[1] {
		t.Fatalf("codes %v, want %v (recomputed, not the client's)", s.data.CodeSet, want)
	}
	all := normalizeSubscription(SubscriptionData{Topic: "T", SubString: ""})
	if all.filter != nil || all.data.SubString != "*" {
		t.Fatalf("empty expression: %+v", all)
	}
}

func TestRebalanceLockExpiry(t *testing.T) {
	m := newRebalanceLockManager()
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	mq := []MessageQueue{{Topic: "T", BrokerName: "b", QueueID: 0}}
	if got := m.TryLockBatch("g", mq, "c1"); len(got) != 1 {
		t.Fatal("c1 lock")
	}
	if got := m.TryLockBatch("g", mq, "c2"); len(got) != 0 {
		t.Fatal("c2 took a live lock")
	}
	now = now.Add(61 * time.Second)
	if !m.IsLockAllExpired("g") {
		t.Fatal("lock not expired after 61 s")
	}
	if got := m.TryLockBatch("g", mq, "c2"); len(got) != 1 {
		t.Fatal("c2 could not take an expired lock")
	}
}

func TestMalformedBodies(t *testing.T) {
	e := startBroker(t, nil)
	for _, code := range []int32{remoting.HeartBeat, remoting.CheckClientConfig, remoting.LockBatchMQ, remoting.UpdateAndCreateSubscriptionGroup} {
		r := e.invoke(goRequest(code, nil, []byte("{not json")))
		if r.Code == remoting.Success || !strings.Contains(r.Remark, "bad request body") {
			t.Errorf("%s with a broken body: code %d remark %q", remoting.RequestName(code), r.Code, r.Remark)
		}
	}
}

func TestDelayLevels(t *testing.T) {
	l, err := parseDelayLevels("1s 5m 2h 1d")
	if err != nil || len(l) != 4 || l[1] != 5*time.Minute || l[3] != 24*time.Hour {
		t.Fatalf("%v %v", l, err)
	}
	if _, err := parseDelayLevels("1x"); err == nil {
		t.Fatal("bad unit accepted")
	}
}
