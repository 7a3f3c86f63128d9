package store

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// histBuckets: bucket i counts values v (µs) with 2^(i-1) <= v < 2^i
// (bucket 0: v == 0); the last bucket takes the rest.
const histBuckets = 32

// hist is a lock-free log2 histogram of durations in microseconds.
type hist struct {
	counts [histBuckets]atomic.Int64
	sumNs  atomic.Int64
	maxNs  atomic.Int64
}

func (h *hist) observe(d time.Duration) { h.observeNs(int64(d)) }

func (h *hist) observeNs(ns int64) {
	if ns < 0 {
		ns = 0
	}
	us := uint64(ns / 1000)
	i := bits.Len64(us)
	if i >= histBuckets {
		i = histBuckets - 1
	}
	h.counts[i].Add(1)
	h.sumNs.Add(ns)
	for {
		m := h.maxNs.Load()
		if ns <= m || h.maxNs.CompareAndSwap(m, ns) {
			break
		}
	}
}

// Histogram is a snapshot of a latency histogram: Counts[i] holds values
// below UpperMicros[i] microseconds (and at least the previous bound).
type Histogram struct {
	Count       int64
	Sum         time.Duration
	Max         time.Duration
	UpperMicros []int64
	Counts      []int64
}

func (h *hist) snapshot() Histogram {
	s := Histogram{Sum: time.Duration(h.sumNs.Load()), Max: time.Duration(h.maxNs.Load()),
		UpperMicros: make([]int64, histBuckets), Counts: make([]int64, histBuckets)}
	for i := range h.counts {
		s.UpperMicros[i] = int64(1) << i
		s.Counts[i] = h.counts[i].Load()
		s.Count += s.Counts[i]
	}
	return s
}

// Quantile returns an upper bound of the q-quantile (0 < q <= 1).
func (h Histogram) Quantile(q float64) time.Duration {
	if h.Count == 0 {
		return 0
	}
	want := int64(q*float64(h.Count) + 0.5)
	if want < 1 {
		want = 1
	}
	var n int64
	for i, c := range h.Counts {
		n += c
		if n >= want {
			return time.Duration(h.UpperMicros[i]) * time.Microsecond
		}
	}
	return h.Max
}

// storeStats holds the store's live figures.
type storeStats struct {
	put        hist // whole put, encode to completion registration
	lockHold   hist // put lock hold
	flush      hist // one msync / fdatasync
	fileCreate hist
	dispatch   hist // one dispatch pass

	puts              atomic.Int64
	putBytes          atomic.Int64
	putFailures       atomic.Int64
	putWaitedOnCreate atomic.Int64
	spillWrites       atomic.Int64
	spills            atomic.Int64
	spillFull         atomic.Int64
	allocFailures     atomic.Int64
	filesCreated      atomic.Int64
	flushes           atomic.Int64
	flushTimeouts     atomic.Int64
	syncErrors        atomic.Int64
	skippedCorrupt    atomic.Int64
	skippedBytes      atomic.Int64
	truncatedBytes    atomic.Int64
	dispatched        atomic.Int64
	filesDeleted      atomic.Int64
	diskFullRefusals  atomic.Int64
	syncUnderLock     atomic.Int64
	pageCacheRT       [13]atomic.Int64 // PAGECACHERT buckets of the current minute
}

// Stats is what MessageStore.Stats reports.
type Stats struct {
	Put            Histogram // put latency (encode to completion registration)
	PutLockHold    Histogram
	Flush          Histogram // one msync / fdatasync
	FileCreate     Histogram // create + allocate + pre-fault of a CommitLog file
	Dispatch       Histogram // one dispatch pass
	Puts, PutBytes int64
	PutFailures    int64

	// Fallbacks and events.
	PutWaitedOnCreate  int64 // rolls that found no ready file and created one under the put lock
	Spills             int64 // rolls that found no ready file and continued into the in-memory spill
	SpillWrites        int64 // records written to the in-memory spill
	SpillFull          int64 // puts refused because the spill was full
	AllocFailures      int64
	FilesCreated       int64
	ReadyFiles         int // CommitLog files allocated ahead right now
	Flushes            int64
	FlushTimeouts      int64 // SYNC puts answered FLUSH_DISK_TIMEOUT
	SyncErrors         int64
	SyncUnderPutLock   int64 // msync/fsync calls that ran while the put lock was held (must stay 0)
	SkippedCorrupt     int64 // records skipped by recovery (skipCorruptedRecords)
	SkippedBytes       int64
	TruncatedBytes     int64 // unflushed tail bytes cut by recovery
	Dispatched         int64
	FilesDeleted       int64
	DiskFullRefusals   int64
	DispatchBehind     int64 // bytes
	CommitLogMin       int64
	CommitLogMax       int64
	CommitLogFlushed   int64
	ReadOnly           bool
	ReadOnlyReason     string
	PageCacheRTBuckets [13]int64 // current minute, RocketMQ PAGECACHERT buckets
}

// pageCacheRTBounds are the upper bounds (ms, exclusive except the first)
// of RocketMQ's PAGECACHERT buckets.
var pageCacheRTNames = [13]string{"[<=0ms]", "[0~10ms]", "[10~50ms]", "[50~100ms]", "[100~200ms]", "[200~500ms]",
	"[500ms~1s]", "[1~2s]", "[2~3s]", "[3~4s]", "[4~5s]", "[5~10s]", "[10s~]"}

func pageCacheRTBucket(ms int64) int {
	switch {
	case ms <= 0:
		return 0
	case ms < 10:
		return 1
	case ms < 50:
		return 2
	case ms < 100:
		return 3
	case ms < 200:
		return 4
	case ms < 500:
		return 5
	case ms < 1000:
		return 6
	case ms < 2000:
		return 7
	case ms < 3000:
		return 8
	case ms < 4000:
		return 9
	case ms < 5000:
		return 10
	case ms < 10000:
		return 11
	default:
		return 12
	}
}
