package testkit

import (
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/store"
)

func TestStoreConfigShapes(t *testing.T) {
	dir := t.TempDir()
	prev := int64(0)
	for _, s := range []Size{Small, Medium, Large} {
		c := StoreConfig(dir, s)
		if c.StorePathRootDir != dir || c.StorePathCommitLog != dir+"/commitlog" {
			t.Fatalf("size %d: paths %q %q", s, c.StorePathRootDir, c.StorePathCommitLog)
		}
		if int64(c.MappedFileSizeCommitLog) <= prev || c.MappedFileSizeConsumeQueue%store.CQEntrySize != 0 {
			t.Fatalf("size %d: CommitLog %d after %d, consume queue %d", s, c.MappedFileSizeCommitLog, prev, c.MappedFileSizeConsumeQueue)
		}
		prev = int64(c.MappedFileSizeCommitLog)
		if c.MaxMessageSize != store.DefaultConfig().MaxMessageSize {
			t.Fatalf("size %d: not built on the defaults", s)
		}
	}
}

func TestClocks(t *testing.T) {
	if !Clock().Now().Equal(Epoch) {
		t.Fatal("Clock does not start at Epoch")
	}
	if d := ClockAhead(time.Hour).Now().Sub(time.Now()); d < 59*time.Minute || d > time.Hour {
		t.Fatalf("ClockAhead(1h) is %v ahead", d)
	}
}
