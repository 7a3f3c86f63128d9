package metadata

import (
	"reflect"
	"testing"
)

func TestOffsetsToPush(t *testing.T) {
	k := func(q int32) OffsetKey { return OffsetKey{Topic: "T", Group: "g", QueueID: q} }
	local := map[OffsetKey]int64{k(0): 10, k(1): 20, k(2): 30, k(3): 5}
	master := map[OffsetKey]int64{k(0): 4, k(1): 20, k(2): 31}
	push, settled := OffsetsToPush(local, master)
	if want := map[OffsetKey]int64{k(0): 10, k(3): 5}; !reflect.DeepEqual(push, want) {
		t.Errorf("push = %v, want %v (ahead of the master, or unknown to it)", push, want)
	}
	if want := map[OffsetKey]int64{k(1): 20, k(2): 30}; !reflect.DeepEqual(settled, want) {
		t.Errorf("settled = %v, want %v (the master holds as much or more)", settled, want)
	}
	if push, settled := OffsetsToPush(nil, master); len(push)+len(settled) != 0 {
		t.Errorf("no local commits: push %v settled %v", push, settled)
	}
}

func TestLocalCommitLedger(t *testing.T) {
	m := NewConsumerOffsetManager(Deps{ConfigDir: t.TempDir()})
	m.Commit("g", "T", 0, 3) // before tracking: not noted
	m.TrackLocalCommits()
	if !m.Advance("g", "T", 0, 8) || m.Advance("g", "T", 0, 7) {
		t.Fatal("Advance must move forward only")
	}
	if got := m.Query("g", "T", 0); got != 8 {
		t.Fatalf("offset %d after Advance, want 8", got)
	}
	if n := len(m.LocalCommits()); n != 0 {
		t.Fatalf("Advance noted %d local commits, want none", n)
	}
	m.Commit("g", "T", 0, 12)
	m.Commit("g", "T", 1, 2)
	k0 := OffsetKey{Topic: "T", Group: "g", QueueID: 0}
	if got := m.LocalCommits(); len(got) != 2 || got[k0] != 12 {
		t.Fatalf("ledger %v, want queue 0 at 12 and queue 1", got)
	}
	m.SettleLocal(k0, 11) // a different offset: kept
	if _, ok := m.LocalCommits()[k0]; !ok {
		t.Fatal("settling another offset removed the entry")
	}
	m.SettleLocal(k0, 12)
	if _, ok := m.LocalCommits()[k0]; ok {
		t.Fatal("settled entry still in the ledger")
	}
	m.RemoveGroup("g")
	if n := len(m.LocalCommits()); n != 0 {
		t.Fatalf("RemoveGroup left %d ledger entries", n)
	}
}
