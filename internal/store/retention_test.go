package store

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/vfs"
)

func TestPlanRetention(t *testing.T) {
	cfg := DefaultConfig()
	at := func(h int) time.Time { return time.Date(2026, 1, 2, h, 30, 0, 0, time.Local) }
	cases := []struct {
		now                      time.Time
		used                     float64
		expired, unexpired, full bool
	}{
		{at(10), 0.50, false, false, false},
		{at(4), 0.50, true, false, false},
		{at(10), 0.76, true, false, false},
		{at(10), 0.86, true, true, false},
		{at(10), 0.91, true, true, true},
	}
	for _, c := range cases {
		p := planRetention(c.now, c.used, &cfg)
		if p.deleteExpired != c.expired || p.deleteUnexpired != c.unexpired || p.refusePuts != c.full {
			t.Errorf("%v used %.2f: %+v", c.now.Hour(), c.used, p)
		}
	}
	cfg.DeleteWhen = "03;16"
	if !planRetention(at(16), 0.1, &cfg).deleteExpired {
		t.Error("deleteWhen with two hours")
	}
}

func TestRetentionAndDiskFull(t *testing.T) {
	cfg := testConfig(t)
	cfg.FlushDiskType = SyncFlush
	cfg.FileReservedTime = 1
	cfg.DeleteWhen = "04"
	cfg.CleanResourceInterval = 1 << 30 // the test drives cleanOnce
	fs := vfs.NewFaultFS(vfs.OS())
	fs.SkipRealSync(true)
	clk := clock.NewManual(time.Date(2026, 1, 1, 10, 0, 0, 0, time.Local))
	fs.SetClock(clk)
	fs.SetUsage(0.5)
	st := openStarted(t, cfg, fs)
	defer st.Shutdown()
	put := func(n int) int64 {
		var last PutResult
		for i := 0; i < n; i++ {
			last = mustPut(t, st, testMsg("RT", 0, fmt.Sprint("r", i, strings.Repeat("-", 200)), ""))
		}
		waitDispatched(t, st, "RT", 0, last.QueueOffset+1)
		return last.QueueOffset
	}
	put(2000) // several 64 KiB files
	files := st.commitLog.mfq.count()
	if files < 4 {
		t.Fatalf("only %d files", files)
	}
	clk.Set(time.Date(2026, 1, 1, 12, 0, 0, 0, time.Local))
	st.cleanOnce()
	if got := st.commitLog.mfq.count(); got != files {
		t.Fatalf("deleted outside deleteWhen with a quiet disk: %d -> %d", files, got)
	}
	// deleteWhen hour: expired files go, the current one stays.
	clk.Set(time.Date(2026, 1, 2, 4, 0, 0, 0, time.Local))
	st.cleanOnce()
	if got := st.commitLog.mfq.count(); got != 1 || st.MinPhyOffset() == 0 {
		t.Fatalf("at deleteWhen: %d files left, min %d", got, st.MinPhyOffset())
	}
	if r := st.GetMessage("g", "RT", 0, 0, 32, 0, nil); r.Status != OffsetTooSmall || r.NextBeginOffset != st.MinOffsetInQueue("RT", 0) || r.NextBeginOffset == 0 {
		t.Fatalf("old offset after deletion: %v next %d (queue min %d)", r.Status, r.NextBeginOffset, st.MinOffsetInQueue("RT", 0))
	}
	if cqFiles := st.consumeQueue("RT", 0, false).mfq.count(); cqFiles > 2 {
		t.Fatalf("consume-queue files below the CommitLog minimum kept: %d", cqFiles)
	}
	// Fresh files are not expired: above 75 % only expired ones go.
	put(2000)
	files = st.commitLog.mfq.count()
	fs.SetUsage(0.80)
	clk.Set(time.Date(2026, 1, 2, 4, 30, 0, 0, time.Local))
	st.cleanOnce()
	if got := st.commitLog.mfq.count(); got != files {
		t.Fatalf("unexpired files deleted at 80%%: %d -> %d", files, got)
	}
	clk.Set(time.Date(2026, 1, 2, 6, 0, 0, 0, time.Local)) // expired, not deleteWhen
	st.cleanOnce()
	if got := st.commitLog.mfq.count(); got != 1 {
		t.Fatalf("expired files kept at 80%% outside deleteWhen: %d", got)
	}
	// Above 85 %: unexpired files go too.
	put(2000)
	fs.SetUsage(0.86)
	st.cleanOnce()
	if got := st.commitLog.mfq.count(); got != 1 {
		t.Fatalf("forced cleaning kept %d files", got)
	}
	// Above 90 %: puts refused, reads continue; resumption without restart.
	fs.SetUsage(0.93)
	st.cleanOnce()
	r := putSync(t, st, testMsg("RT", 0, "refused", ""))
	if r.Status != ServiceNotAvailable || !strings.Contains(r.Remark, "disk full") || !strings.Contains(r.Remark, "93.0%") {
		t.Fatalf("put on a full disk: %v %q", r.Status, r.Remark)
	}
	min := st.MinOffsetInQueue("RT", 0)
	if g := st.GetMessage("g", "RT", 0, min, 4, 0, nil); g.Status != Found {
		t.Fatalf("read on a full disk: %v", g.Status)
	} else {
		g.Release()
	}
	fs.SetUsage(0.60)
	st.cleanOnce()
	mustPut(t, st, testMsg("RT", 0, "accepted again", ""))
	if s := st.Stats(); s.DiskFullRefusals != 1 || s.FilesDeleted == 0 {
		t.Fatalf("counters: refusals %d deleted %d", s.DiskFullRefusals, s.FilesDeleted)
	}
}
