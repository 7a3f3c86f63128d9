package clients

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
	s := NormalizeSubscription(d)
	if s.CompileErr != nil || s.Filter == nil {
		t.Fatalf("compile: %v", s.CompileErr)
	}
	want := []int64{message.TagsHashCode("TagA"), message.TagsHashCode("TagB")}
	if len(s.Data.CodeSet) != 2 || s.Data.CodeSet[0] != want[0] || s.Data.CodeSet[1] != want[1] {
		t.Fatalf("codes %v, want %v (recomputed, not the client's)", s.Data.CodeSet, want)
	}
	all := NormalizeSubscription(SubscriptionData{Topic: "T", SubString: ""})
	if all.Filter != nil || all.Data.SubString != "*" {
		t.Fatalf("empty expression: %+v", all)
	}
}

func TestRebalanceLockExpiry(t *testing.T) {
	m := NewRebalanceLockManager(nil)
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

// TestRebalanceLockRenewal: a lock lives 60 s after its last renewal.
func TestRebalanceLockRenewal(t *testing.T) {
	m := NewRebalanceLockManager(nil)
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	mq := []MessageQueue{{Topic: "T", BrokerName: "b", QueueID: 0}}
	m.TryLockBatch("g", mq, "c1")
	now = now.Add(59 * time.Second)
	if got := m.TryLockBatch("g", mq, "c1"); len(got) != 1 {
		t.Fatal("renewal refused")
	}
	now = now.Add(59 * time.Second) // 118 s after the lock, 59 s after the renewal
	if got := m.TryLockBatch("g", mq, "c2"); len(got) != 0 || m.IsLockAllExpired("g") {
		t.Fatal("a renewed lock expired early")
	}
	m.UnlockBatch("g", mq, "c2")
	if m.IsLockAllExpired("g") {
		t.Fatal("a non-owner unlocked")
	}
	now = now.Add(2 * time.Second)
	if !m.IsLockAllExpired("g") {
		t.Fatal("lock alive 61 s after its renewal")
	}
}
