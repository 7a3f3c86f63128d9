package store

import (
	"sync/atomic"

	"github.com/spoolmq/spool/internal/store/stats"
)

// storeStats holds the store's live figures.
type storeStats struct {
	rt         *stats.StoreStats // put latency, PAGECACHERT, TPS, day totals
	lockHold   stats.Histogram   // put lock hold
	flush      stats.Histogram   // one msync / fdatasync
	fileCreate stats.Histogram
	dispatch   stats.Histogram // one dispatch pass
	indexLag   stats.Histogram // index lag behind the CommitLog (1 µs = 1 byte), sampled

	puts              atomic.Int64
	getWouldWait      atomic.Int64 // pulls GetMessageNoWait turned back
	putBytes          atomic.Int64
	putFailures       atomic.Int64
	putWaitedOnCreate atomic.Int64
	spillWrites       atomic.Int64
	spills            atomic.Int64
	spillFull         atomic.Int64
	poolExhausted     atomic.Int64
	allocFailures     atomic.Int64
	filesCreated      atomic.Int64
	flushes           atomic.Int64
	loopFlushes       atomic.Int64
	flushTimeouts     atomic.Int64
	syncErrors        atomic.Int64
	skippedCorrupt    atomic.Int64
	skippedBytes      atomic.Int64
	truncatedBytes    atomic.Int64
	dispatched        atomic.Int64
	filesDeleted      atomic.Int64
	diskFullRefusals  atomic.Int64
	syncUnderLock     atomic.Int64
	spillHeld         atomic.Int64
	noSpaceRefusals   atomic.Int64
	noSpaceEvents     atomic.Int64
	allocRetries      atomic.Int64

	forcedDeletions       atomic.Int64
	forcedDeletedBytes    atomic.Int64
	forcedDeletedOldestMs atomic.Int64
}

// Histogram is a latency histogram snapshot (microsecond buckets).
type Histogram = stats.HistogramSnapshot

// Stats is what MessageStore.Stats reports.
type Stats struct {
	Put            Histogram // put latency (encode to completion registration)
	PutLockHold    Histogram
	Flush          Histogram // one msync / fdatasync
	FileCreate     Histogram // create + allocate + pre-fault of a CommitLog file
	Dispatch       Histogram // one dispatch pass
	IndexLag       Histogram // index lag (bytes as microseconds: 1 unit = 1 byte), sampled
	PutTPS         string    // RocketMQ's putTps figure (10 s, 60 s, 600 s)
	Puts, PutBytes int64
	PutFailures    int64

	// Fallbacks and events.
	PutWaitedOnCreate int64 // rolls (a put's, or a slave's replicated append's) that found no ready file and waited for its creation
	Spills            int64 // rolls that found no ready file and continued into the in-memory spill
	SpillWrites       int64 // records written to the in-memory spill
	SpillFull         int64 // puts refused because the spill was full
	PoolExhausted     int64 // puts refused because every transient-pool buffer was in use
	AllocFailures     int64
	FilesCreated      int64
	ReadyFiles        int // CommitLog files allocated ahead right now
	Flushes           int64
	LoopFlushes       int64 // flushes an event loop made for its pass (syncFlushOnEventLoop)
	FlushTimeouts     int64 // SYNC puts answered FLUSH_DISK_TIMEOUT
	SyncErrors        int64
	SyncUnderPutLock  int64 // msync/fsync calls that ran while the put lock was held (must stay 0)
	SkippedCorrupt    int64 // records skipped by recovery (skipCorruptedRecords)
	SkippedBytes      int64
	TruncatedBytes    int64 // unflushed tail bytes cut by recovery
	Dispatched        int64
	FilesDeleted      int64
	DiskFullRefusals  int64
	// Full disk: puts whose answer waited for the spill's file, puts
	// refused because a write or allocation found no space, such
	// conditions begun, and allocation retries.
	SpillHeld, NoSpaceRefusals, NoSpaceEvents, AllocRetries int64
	NoSpace                                                 string // the current out-of-space refusal, "" when none
	DiskStoredRatio                                         float64
	DiskReservedBytes                                       int64 // allocated ahead, not counted as used
	// Forced deletions of unexpired CommitLog files (disk above
	// diskSpaceCleanForciblyRatio): files, bytes, and the store time of
	// the oldest message the last cleaning pass removed (unix ms).
	ForcedDeletions, ForcedDeletedBytes, ForcedDeletedOldestMs int64
	DispatchBehind                                             int64 // bytes
	CommitLogMin                                               int64
	CommitLogMax                                               int64
	CommitLogFlushed                                           int64
	ReadOnly                                                   bool
	ReadOnlyReason                                             string
	PageCacheRT                                                stats.PageCacheRTCounts // cumulative, RocketMQ PAGECACHERT buckets
	IndexLagBytes                                              int64
	IndexError                                                 string
}

// PageCacheRTLine is the cumulative PAGECACHERT distribution in RocketMQ's
// log format (the per-minute line is logged by the store itself).
func (s Stats) PageCacheRTLine() string { return s.PageCacheRT.PageCacheRTLine() }
