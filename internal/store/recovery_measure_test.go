package store

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
)

// TestMeasureAbnormalRecovery writes SPOOL_MEASURE_RECOVERY MiB of 4 KiB
// messages with no checkpoint covering them, kills the store, and reports
// how long the abnormal recovery (full validation and re-dispatch) takes.
// A measurement, not a check.
func TestMeasureAbnormalRecovery(t *testing.T) {
	mib, _ := strconv.Atoi(os.Getenv("SPOOL_MEASURE_RECOVERY"))
	if mib <= 0 {
		t.Skip("set SPOOL_MEASURE_RECOVERY=<MiB> to measure")
	}
	cfg := DefaultConfig()
	cfg.StorePathRootDir = t.TempDir()
	cfg.StorePathCommitLog = filepath.Join(cfg.StorePathRootDir, "commitlog")
	cfg.MappedFileSizeCommitLog = 256 << 20
	cfg.MessageIndexEnable = false
	cfg.FlushIntervalConsumeQueue = 1 << 30 // no checkpoint while writing
	st := openStarted(t, cfg, vfs.OS())
	body := strings.Repeat("r", 4096)
	n := mib << 20 / 4200
	for i := 0; i < n; i++ {
		mustPut(t, st, testMsg("Rec", int32(i%8), body, "t"))
	}
	end := st.MaxPhyOffset()
	crash(st)
	os.Remove(filepath.Join(cfg.StorePathRootDir, "checkpoint"))
	if os.Getenv("SPOOL_MEASURE_COLD") != "" {
		// Drop this store's pages so the scan reads from the disk.
		names, _ := vfs.OS().ReadDir(cfg.StorePathCommitLog)
		for _, nm := range names {
			if f, err := vfs.OS().OpenFile(filepath.Join(cfg.StorePathCommitLog, nm), os.O_RDONLY, 0); err == nil {
				sz, _ := f.Size()
				f.Fadvise(0, sz, vfs.FadvDontNeed)
				f.Close()
			}
		}
	}
	start := time.Now()
	st = openStarted(t, cfg, vfs.OS())
	took := time.Since(start)
	defer st.Shutdown()
	if st.MaxPhyOffset() != end {
		t.Fatalf("recovered end %d, want %d", st.MaxPhyOffset(), end)
	}
	t.Logf("abnormal recovery of %d MiB (%d records, CRC checked, queues rebuilt): %v", end>>20, n, took)
}
