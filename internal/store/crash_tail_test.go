package store

import (
	"fmt"
	"testing"

	"github.com/spoolmq/spool/internal/vfs"
)

// DropUnflushedTail cuts a killed store back to its checkpoint's flushed
// offset: what a clean stop made durable survives recovery, what was put
// after the last checkpoint is gone, and the store takes puts again.
func TestDropUnflushedTail(t *testing.T) {
	cfg := testConfig(t)
	// No checkpoint while running but the one Start writes: the second
	// run's puts are all past it.
	cfg.FlushIntervalConsumeQueue = 3600_000
	st := openStarted(t, cfg, vfs.OS())
	want := map[int64]string{}
	for i := 0; i < 150; i++ {
		r := mustPut(t, st, testMsg("T", 0, fmt.Sprint("durable", i), ""))
		want[r.QueueOffset] = fmt.Sprint("durable", i)
	}
	if err := st.Shutdown(); err != nil {
		t.Fatal(err)
	}
	st = openStarted(t, cfg, vfs.OS())
	durableEnd := st.MaxPhyOffset()
	for i := 0; i < 1500; i++ { // crosses CommitLog files (64 KiB)
		mustPut(t, st, testMsg("T", 0, fmt.Sprint("unflushed", i), ""))
	}
	if st.MaxPhyOffset() <= durableEnd+int64(cfg.MappedFileSizeCommitLog) {
		t.Fatalf("the second run wrote too little: %d -> %d", durableEnd, st.MaxPhyOffset())
	}
	crash(st)

	d, err := DropUnflushedTail(nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d.From != durableEnd {
		t.Fatalf("dropped from %d, the checkpoint of the clean stop flushed %d", d.From, durableEnd)
	}
	if d.Bytes == 0 {
		t.Fatal("nothing dropped")
	}
	st = openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	if got := st.MaxPhyOffset(); got != durableEnd {
		t.Fatalf("recovered CommitLog end %d, want the flushed offset %d", got, durableEnd)
	}
	if got := st.MaxOffsetInQueue("T", 0); got != 150 {
		t.Fatalf("queue max %d after the drop, want 150", got)
	}
	checkAll(t, st, "T", 0, want)
	if r := mustPut(t, st, testMsg("T", 0, "next", "")); r.QueueOffset != 150 {
		t.Fatalf("next queue offset %d", r.QueueOffset)
	}

	// A second drop of the cleanly stopped store finds nothing.
	if err := st.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if d, err := DropUnflushedTail(nil, cfg); err != nil || d.Bytes != 0 {
		t.Fatalf("after a clean stop: dropped %d bytes, err %v", d.Bytes, err)
	}
}

func TestDropUnflushedTailNeedsACheckpoint(t *testing.T) {
	cfg := testConfig(t)
	if _, err := DropUnflushedTail(nil, cfg); err == nil {
		t.Fatal("a directory without a checkpoint was accepted")
	}
}
