package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// retentionPlan is what one cleaning pass should do. planRetention is pure:
// the driver (cleanOnce) reads the clock and the disk usage and applies
// the plan to the files.
type retentionPlan struct {
	deleteExpired   bool   // delete files older than fileReservedTime
	deleteUnexpired bool   // also delete files that have not expired
	refusePuts      bool   // disk above diskSpaceWarningLevelRatio
	reason          string // why files go (for the log)
	fullRemark      string // the put refusal remark when refusePuts
}

// planRetention decides from the time, the used ratio of the disk holding
// the CommitLog (0..1) and the configuration.
func planRetention(now time.Time, used float64, cfg *Config) retentionPlan {
	var p retentionPlan
	pct := used * 100
	timeUp := isDeleteHour(now, cfg.DeleteWhen)
	if pct > float64(cfg.DiskSpaceWarningLevelRatio) {
		p.refusePuts = true
		p.fullRemark = fmt.Sprintf("disk full: the CommitLog disk is %.1f%% used, above diskSpaceWarningLevelRatio=%d%%; puts are refused until space is freed (reads continue)",
			pct, cfg.DiskSpaceWarningLevelRatio)
	}
	switch {
	case pct > float64(cfg.DiskSpaceCleanForciblyRatio) && cfg.CleanFileForciblyEnable:
		p.deleteExpired, p.deleteUnexpired = true, true
		p.reason = fmt.Sprintf("disk %.1f%% used, above diskSpaceCleanForciblyRatio=%d%%: deleting the oldest files, expired or not", pct, cfg.DiskSpaceCleanForciblyRatio)
	case pct > float64(cfg.DiskMaxUsedSpaceRatio):
		p.deleteExpired = true
		p.reason = fmt.Sprintf("disk %.1f%% used, above diskMaxUsedSpaceRatio=%d%%: deleting expired files outside deleteWhen", pct, cfg.DiskMaxUsedSpaceRatio)
	case timeUp:
		p.deleteExpired = true
		p.reason = fmt.Sprintf("deleteWhen=%s: deleting files older than fileReservedTime=%dh", cfg.DeleteWhen, cfg.FileReservedTime)
	}
	return p
}

// isDeleteHour reports whether now's hour is one of deleteWhen's
// ";"-separated hours.
func isDeleteHour(now time.Time, deleteWhen string) bool {
	for _, h := range strings.Split(deleteWhen, ";") {
		if n, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && n == now.Hour() {
			return true
		}
	}
	return false
}

// cleanOnce runs one retention pass: disk-full state (stored bytes, not
// the blocks of files allocated ahead), CommitLog files, then
// consume-queue files below the CommitLog minimum, and the pages of the
// CommitLog's read mappings (resident_read.go). It never takes the put
// lock.
func (st *DefaultMessageStore) cleanOnce() {
	now := st.fs.Now()
	st.commitLog.dropReadMappings()
	_, p := st.checkDiskSpace()
	st.retryDoomed(now)
	if p.deleteExpired {
		if n := st.deleteCommitLogFiles(now, p.deleteUnexpired, p.reason); n > 0 {
			st.logger.Info("store: deleted CommitLog files", "files", n, "reason", p.reason, "minOffset", st.commitLog.minOffset())
		}
	}
	st.cleanConsumeQueues()
	if st.index != nil {
		if _, err := st.index.svc.DeleteExpired(st.commitLog.minOffset()); err != nil {
			st.logger.Warn("store: deleting expired index files", "err", err)
		}
	}
}

// deleteCommitLogFiles deletes the oldest files: expired ones, or any when
// force is set. The file being written, and files not yet flushed or
// dispatched, are kept. At most deleteFileBatchMax go per pass.
func (st *DefaultMessageStore) deleteCommitLogFiles(now time.Time, force bool, reason string) int {
	c := st.commitLog
	keepFrom := min(c.flushedWhere.Load(), st.disp.reputFrom.Load())
	lc := st.live()
	reserved := time.Duration(lc.FileReservedTime) * time.Hour
	batch := max(lc.DeleteFileBatchMax, 1)
	deleted := 0
	for deleted < batch {
		files := c.mfq.snapshot()
		if len(files) <= 1 {
			break
		}
		mf := files[0]
		if mf.from+mf.size > keepFrom || mf.spill != nil {
			break
		}
		last := time.UnixMilli(mf.lastStoreTs.Load())
		unexpired := now.Sub(last) < reserved
		if !force && unexpired {
			break
		}
		if unexpired {
			st.forcedDeletion(mf, reason, deleted == 0)
		}
		c.mfq.removeFirst(mf)
		if !mf.destroy(true, now.UnixMilli(), lc.DestroyMapedFileIntervalForcibly) {
			st.doomedMu.Lock()
			st.doomed = append(st.doomed, mf)
			st.doomedMu.Unlock()
		}
		st.stats.filesDeleted.Add(1)
		deleted++
	}
	if deleted > 0 {
		_ = st.fs.SyncDir(c.mfq.dir)
	}
	return deleted
}

// retryDoomed finishes deletions that waited for readers, forcing them
// after destroyMapedFileIntervalForcibly.
func (st *DefaultMessageStore) retryDoomed(now time.Time) {
	st.doomedMu.Lock()
	defer st.doomedMu.Unlock()
	keep := st.doomed[:0]
	for _, mf := range st.doomed {
		if !mf.destroy(true, now.UnixMilli(), st.live().DestroyMapedFileIntervalForcibly) {
			keep = append(keep, mf)
		}
	}
	st.doomed = keep
}

// cleanConsumeQueues deletes consume-queue files whose entries all point
// below the CommitLog minimum and moves each queue's minimum offset.
func (st *DefaultMessageStore) cleanConsumeQueues() {
	minPhy := st.commitLog.minOffset()
	for _, cq := range st.allQueues() {
		cq.mu.Lock()
		for {
			files := cq.mfq.snapshot()
			if len(files) <= 1 {
				break
			}
			mf := files[0]
			if (mf.from+mf.size)/CQEntrySize > cq.written.Load() {
				// Entries of it are still in the tail: written first,
				// so the tail never begins in a removed file.
				if err := cq.writeTailLocked(); err != nil || (mf.from+mf.size)/CQEntrySize > cq.written.Load() {
					break
				}
			}
			e, ok := cq.entryAt((mf.from+mf.size)/CQEntrySize - 1)
			if !ok || e.Offset+int64(e.Size) > minPhy {
				break
			}
			cq.mfq.removeFirst(mf)
			mf.destroy(true, 0, 0)
			if next := (mf.from + mf.size) / CQEntrySize; cq.minOffset.Load() < next {
				cq.minOffset.Store(next)
			}
		}
		cq.mu.Unlock()
		cq.correctMinOffset(minPhy)
	}
}
