package store

import (
	"strconv"

	"github.com/spoolmq/spool/internal/store/stats"
)

// RuntimeInfo returns the store's part of GET_BROKER_RUNTIME_INFO under
// RocketMQ 5.3.3's keys and in its formats:
//
//   - StoreStatsService's figures (stats.StoreStats.RuntimeInfo): boot time,
//     runtime, put counts and sizes, put and get maximum times, the TPS
//     windows, putMessageDistributeTime, putLatency99/999, dispatchMaxBuffer;
//     putMessageFailedTimes is the store's count of refused or failed puts;
//   - DefaultMessageStore's: commitLogDiskRatio (and commitLogDiskRatio_<dir>
//     for the CommitLog directory), consumeQueueDiskRatio,
//     commitLogMinOffset, commitLogMaxOffset;
//   - remainHowManyDataToFlush and remainHowManyDataToCommit (bytes written
//     but not yet flushed, or not yet committed from the transient store
//     pool; "0 B" without the pool, where nothing waits to be committed),
//     as RocketMQ's humanReadableByteCount.
//
// The disk ratios are RocketMQ's getDiskPartitionSpaceUsedPercent: the used
// share rounded up to a hundredth, as a Java double ("0.43"), -1.0 when the
// file system cannot be asked. Spool counts the blocks reserved for root as
// used (RocketMQ leaves them out of both sides of the ratio).
func (st *DefaultMessageStore) RuntimeInfo() map[string]string {
	m := st.stats.rt.RuntimeInfo(st.fs.Now())
	m["putMessageFailedTimes"] = strconv.FormatInt(st.stats.putFailures.Load(), 10)
	clDir := st.cfg.commitLogDir()
	ratio := st.diskUsedRatio(clDir)
	m["commitLogDiskRatio_"+clDir] = ratio
	m["commitLogDiskRatio"] = ratio
	m["consumeQueueDiskRatio"] = st.diskUsedRatio(st.cfg.consumeQueueDir())
	c := st.commitLog
	maxOff := c.maxOffset()
	m["commitLogMinOffset"] = strconv.FormatInt(c.minOffset(), 10)
	m["commitLogMaxOffset"] = strconv.FormatInt(maxOff, 10)
	m["remainHowManyDataToFlush"] = stats.HumanReadableByteCount(max(maxOff-c.flushedWhere.Load(), 0))
	m["remainHowManyDataToCommit"] = stats.HumanReadableByteCount(st.remainToCommit())
	return m
}

// remainToCommit is how many bytes the put path copied into transient-pool
// buffers that the committer has not written to the file yet (0 without
// the pool).
func (st *DefaultMessageStore) remainToCommit() int64 {
	c := st.commitLog
	if c.committer == nil {
		return 0
	}
	mf := c.mfq.last()
	if mf == nil {
		return 0
	}
	return max(mf.from+mf.filled.Load()-c.maxOffset(), 0)
}

// diskUsedRatio formats the used share of dir's file system as RocketMQ's
// UtilAll.getDiskPartitionSpaceUsedPercent: hundredths rounded up.
func (st *DefaultMessageStore) diskUsedRatio(dir string) string {
	u, err := st.fs.Statfs(dir)
	if err != nil || u.Total == 0 {
		return stats.JavaDouble(-1)
	}
	used := u.Total - min(u.Free, u.Total)
	pct := used * 100 / u.Total
	if used*100%u.Total != 0 {
		pct++
	}
	return stats.JavaDouble(float64(pct) / 100)
}
