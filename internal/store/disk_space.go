package store

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Where a write failed for want of space; each is a condition of its own,
// set by the failing write and cleared by the next one that succeeds.
const (
	condCheckpoint     = "checkpoint write"
	condDispatch       = "consume queue write"
	condIndex          = "index write"
	condCommitLogWrite = "CommitLog write"
)

// noSpaceState is the set of current out-of-space conditions. Puts are
// refused (SERVICE_NOT_AVAILABLE) while any is set; the writes that found
// them are retried by their own loops and clear them.
type noSpaceState struct {
	mu     sync.Mutex
	by     map[string]string // condition -> error text
	remark atomic.Pointer[string]
}

func (n *noSpaceState) set(st *DefaultMessageStore, cond string, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.by == nil {
		n.by = map[string]string{}
	}
	_, had := n.by[cond]
	n.by[cond] = err.Error()
	if !had {
		st.stats.noSpaceEvents.Add(1)
		st.logger.Error("store: out of disk space; puts are refused and the write is retried until space returns",
			"write", cond, "err", err, "disk", st.diskUsageLine())
	}
	n.publishLocked(st)
}

func (n *noSpaceState) clear(st *DefaultMessageStore, cond string) {
	if n.remark.Load() == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, had := n.by[cond]; !had {
		return
	}
	delete(n.by, cond)
	st.logger.Info("store: disk space returned; the write works again", "write", cond, "disk", st.diskUsageLine())
	n.publishLocked(st)
}

func (n *noSpaceState) publishLocked(st *DefaultMessageStore) {
	if len(n.by) == 0 {
		n.remark.Store(nil)
		return
	}
	conds := make([]string, 0, len(n.by))
	for c := range n.by {
		conds = append(conds, c)
	}
	sort.Strings(conds)
	parts := make([]string, len(conds))
	for i, c := range conds {
		parts[i] = c + ": " + n.by[c]
	}
	r := "[NO_SPACE] disk full: " + strings.Join(parts, "; ") + "; disk " + st.diskUsageLine() +
		"; puts are refused until space returns (retried automatically)"
	n.remark.Store(&r)
}

// diskUsage is the disk holding the CommitLog as the store counts it:
// stored bytes, not blocks reserved for CommitLog files allocated ahead
// (or the unwritten rest of the current file).
type diskUsage struct {
	total, free, used uint64 // bytes, from statfs (free: available to the store)
	reserved          int64  // allocated ahead, holding no data yet
}

// storedRatio is the used fraction without the reserved bytes, of the
// space the store can have (used + available, as df and RocketMQ count).
func (u diskUsage) storedRatio() float64 {
	entire := u.used + u.free
	if entire == 0 {
		return 0
	}
	stored := max(int64(u.used)-u.reserved, 0)
	return float64(stored) / float64(entire)
}

// freeWithReserved is what new data can still use: the free bytes plus
// the reserved ones.
func (u diskUsage) freeWithReserved() int64 { return int64(u.free) + u.reserved }

func (u diskUsage) String() string {
	return fmt.Sprintf("%.1f%% used by stored data (%s free, %s more reserved for CommitLog files allocated ahead, %s total)",
		u.storedRatio()*100, fmtBytes(int64(u.free)), fmtBytes(u.reserved), fmtBytes(int64(u.total)))
}

func fmtBytes(n int64) string {
	switch {
	case n >= 10<<30:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 10<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 10<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// reservedBytes is the space CommitLog files hold beyond their data: the
// files allocated ahead and the unwritten rest of the current one.
func (c *CommitLog) reservedBytes() int64 {
	a := c.alloc
	a.mu.Lock()
	n := int64(len(a.ready)) * c.cfg.MappedFileSizeCommitLog
	a.mu.Unlock()
	if mf := c.mfq.last(); mf != nil && mf.spill == nil {
		n += max(mf.size-mf.wrote.Load(), 0)
	}
	return n
}

// usage reads the disk holding the CommitLog.
func (st *DefaultMessageStore) usage() (diskUsage, error) {
	u, err := st.fs.Statfs(st.cfg.commitLogDir())
	if err != nil {
		return diskUsage{}, err
	}
	return diskUsage{total: u.Total, free: u.Free, used: u.UsedBytes(), reserved: st.commitLog.reservedBytes()}, nil
}

// diskUsageLine names the CommitLog disk and its use, for remarks and logs.
func (st *DefaultMessageStore) diskUsageLine() string {
	u, err := st.usage()
	if err != nil {
		return st.cfg.commitLogDir() + " (statfs failed: " + err.Error() + ")"
	}
	return st.cfg.commitLogDir() + " " + u.String()
}

// spaceShort reports whether the allocator should keep only one file
// ahead (set by checkDiskSpace).
func (st *DefaultMessageStore) spaceShort() bool { return st.short.Load() }

// checkDiskSpace updates the disk-full refusal and the space-short state
// from the disk's stored use. It runs on the retention timer and after
// every CommitLog allocation attempt (so at every roll).
func (st *DefaultMessageStore) checkDiskSpace() (diskUsage, retentionPlan) {
	u, err := st.usage()
	if err != nil {
		st.logger.Warn("store: statfs failed", "dir", st.cfg.commitLogDir(), "err", err)
		return u, retentionPlan{}
	}
	used := u.storedRatio()
	p := planRetention(st.fs.Now(), used, st.live())
	if p.refusePuts {
		p.fullRemark += "; disk " + st.cfg.commitLogDir() + " " + u.String()
		if st.diskFull.Swap(&p.fullRemark) == nil {
			st.logger.Error("store: " + p.fullRemark)
		}
	} else if st.diskFull.Swap(nil) != nil {
		st.logger.Info("store: disk space recovered, accepting puts again", "disk", u.String())
	}
	// Preallocating ahead is for speed; when the space left would not
	// hold the files ahead and their data twice over, or the disk is past
	// diskMaxUsedSpaceRatio, one file ahead is enough.
	size := st.cfg.MappedFileSizeCommitLog
	want := int64(max(st.cfg.PreallocateFiles, 1)+1) * size * 2
	short := used*100 > float64(st.live().DiskMaxUsedSpaceRatio) || u.freeWithReserved() < want
	if st.short.Swap(short) != short {
		st.logger.Info("store: CommitLog files allocated ahead", "files", map[bool]int{true: 1, false: max(st.cfg.PreallocateFiles, 1)}[short], "disk", u.String())
	}
	return u, p
}

// forcedDeletion records the forced deletion of a CommitLog file that had
// not expired: its messages may never have been read. It is logged as an
// error and counted (ForcedDeletions, ForcedDeletedBytes,
// ForcedDeletedOldestMs in Stats: the oldest message time the last
// cleaning pass removed).
//
// first is set for the first file of a cleaning pass: its first message is
// the oldest the pass removes.
func (st *DefaultMessageStore) forcedDeletion(mf *MappedFile, reason string, first bool) {
	oldest := st.storeTimeAt(mf.from)
	bytes := mf.size
	if mf == st.commitLog.mfq.last() {
		bytes = mf.wrote.Load()
	}
	st.stats.forcedDeletions.Add(1)
	st.stats.forcedDeletedBytes.Add(bytes)
	if first {
		st.stats.forcedDeletedOldestMs.Store(oldest)
	}
	st.logger.Error("store: forced deletion of unexpired CommitLog data; its messages may not have been consumed",
		"file", mf.path, "bytes", bytes, "oldestMessageTime", time.UnixMilli(oldest).UTC().Format(time.RFC3339Nano),
		"reason", reason, "minOffset", mf.from+mf.size)
}
