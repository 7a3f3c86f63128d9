package index

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// An index file takes the disk its slots and entries take, not its full
// size (420 MB with the default maxHashSlotNum and maxIndexNum).
func TestIndexFileSparse(t *testing.T) {
	dir := t.TempDir()
	const slots, num = 500000, 2000000 // a 42 MB file
	s := openTest(t, dir, slots, num)
	mustPut(t, s, "T", []string{"k1"}, "U1", 100, baseTs)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	names, err := os.ReadDir(dir)
	if err != nil || len(names) != 1 {
		t.Fatalf("index directory: %v %v", names, err)
	}
	fi, err := os.Stat(filepath.Join(dir, names[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	alloc := fi.Sys().(*syscall.Stat_t).Blocks * 512
	if fi.Size() != FileSize(slots, num) {
		t.Fatalf("index file is %d bytes, want %d", fi.Size(), FileSize(slots, num))
	}
	if alloc > 256<<10 {
		t.Fatalf("index file of %d bytes with one key takes %d bytes on disk", fi.Size(), alloc)
	}
	if got := query(t, s, "T", "k1"); len(got) != 1 || got[0] != 100 {
		t.Fatalf("query: %v", got)
	}
}
