package broker

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/spoolmq/spool/message"
)

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
