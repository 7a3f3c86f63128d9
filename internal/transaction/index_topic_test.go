package transaction

import (
	"os"
	"path/filepath"
	"testing"
)

// The index file keeps each half's real topic; a file written without
// topics loads halves with none.
func TestIndexFileKeepsTopics(t *testing.T) {
	hs := []PendingHalf{{QueueOffset: 1, Group: "pg", Topic: "T1"}, {QueueOffset: 2, Group: "pg", Topic: "T2"}, {QueueOffset: 3, Group: "pg", Topic: "T1"}}
	b, err := EncodeIndex(hs, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "transactionIndex.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, got, err := LoadIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	x := NewIndex()
	for i := range got {
		x.Add(&got[i])
	}
	if by := x.HalvesByTopic(); by["T1"] != 2 || by["T2"] != 1 || len(by) != 2 {
		t.Fatalf("HalvesByTopic after a reload: %v", by)
	}
	old := []byte(`{"halfFrom":0,"opFrom":0,"groups":["pg"],"pending":[[1,0,0,0,0,0,0,0,0]]}`)
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, got, err := LoadIndex(path); err != nil || len(got) != 1 || got[0].Topic != "" {
		t.Fatalf("a file without topics: %+v %v", got, err)
	}
}
