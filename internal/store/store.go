package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/delaylevel"
	"github.com/spoolmq/spool/internal/store/stats"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

const (
	stateNew int32 = iota
	stateRunning
	stateStopped
)

// DefaultMessageStore is the MessageStore over CommitLog and consume
// queues in storePathRootDir.
type DefaultMessageStore struct {
	cfg     Config     // start-up values; live keys are read through live()
	liveCfg liveConfig // the live keys (live_config.go)
	fs      vfs.FS
	logger  *slog.Logger

	lock      io.Closer
	commitLog *CommitLog
	disp      *dispatcher
	index     *indexDispatcher // nil when messageIndexEnable=false
	statsStop context.CancelFunc

	cqMu sync.RWMutex
	cqs  map[queueKey]*ConsumeQueue
	// cqTailBytes is the size of the consume queues' tails (entries not
	// yet written to their files).
	cqTailBytes atomic.Int64
	// cqFiles bounds the descriptors of consume-queue files.
	cqFiles *fileCache

	state     atomic.Int32
	readOnly  atomic.Pointer[string]
	diskFull  atomic.Pointer[string]
	noSpace   noSpaceState // writes that failed with ENOSPC, retried
	short     atomic.Bool  // space is short: one CommitLog file ahead, not preallocateFiles
	callbacks atomic.Pointer[[]func(string, int32, int64)]
	// refusal, when set, is why puts are refused (controller mode: the
	// broker is a slave, or its log is being cut).
	refusal atomic.Pointer[string]
	epochs  *EpochFile // storePathRootDir/epochFileCheckpoint, opened by Start
	cutMu   sync.Mutex // one truncation at a time
	onCut   atomic.Pointer[[]func(int64)]

	stats storeStats

	// Dispatcher-goroutine caches (parseDispatch): the last topic and tags
	// seen, so a run of one topic allocates nothing.
	lastTopic, lastTags string
	lastTagsCode        int64
	delayLevels         []time.Duration
	memTotal            int64

	ckMu sync.Mutex // one checkpoint writer at a time

	doomedMu sync.Mutex
	doomed   []*MappedFile // deleted files still held by readers
	bgStop   chan struct{}
	bgWG     sync.WaitGroup

	// Failpoint, when set (tests), is called at named points: "roll",
	// "dispatch", "checkpoint-written", "checkpoint-renamed", and the
	// steps of TruncateTo: "truncate-checkpoint", "truncate-commitlog",
	// "truncate-queues", "truncate-epochs".
	Failpoint func(name string)
}

var _ MessageStore = (*DefaultMessageStore)(nil)

// Open checks the configuration, creates the directories and takes the
// store lock. Start recovers and starts the services.
func Open(cfg Config, fs vfs.FS, logger *slog.Logger) (*DefaultMessageStore, error) {
	if fs == nil {
		fs = vfs.Default
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	levels, err := delaylevel.Parse(cfg.MessageDelayLevel)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := fs.MkdirAll(cfg.StorePathRootDir, 0o755); err != nil {
		return nil, fmt.Errorf("store: mkdir %s: %w", cfg.StorePathRootDir, err)
	}
	lk, err := fs.Lock(cfg.lockPath())
	if err != nil {
		if errors.Is(err, vfs.ErrLocked) {
			return nil, fmt.Errorf("%w: %s is in use by another broker (lock file %s)", ErrLocked, cfg.StorePathRootDir, cfg.lockPath())
		}
		return nil, fmt.Errorf("store: lock %s: %w", cfg.lockPath(), err)
	}
	st := &DefaultMessageStore{cfg: cfg, fs: fs, logger: logger, lock: lk, cqs: map[queueKey]*ConsumeQueue{},
		delayLevels: levels, memTotal: physicalMemory(), bgStop: make(chan struct{})}
	st.liveCfg.init(cfg)
	st.stats.rt = stats.NewStoreStats(fs.Now())
	nofile, _, _ := NofileLimit()
	st.cqFiles = newFileCache(fs, cqFileLimit(nofile))
	logger.Info("store: consume-queue descriptors", "limit", st.cqFiles.limit, "nofileSoft", nofile)
	st.commitLog = newCommitLog(st)
	st.disp = newDispatcher(st)
	if cfg.TransientStorePoolEnable && !cfg.transient() {
		logger.Warn("store: transientStorePoolEnable has no effect with SYNC_FLUSH or on a slave (as in RocketMQ)")
	}
	return st, nil
}

func (c *Config) validate() error {
	switch {
	case c.StorePathRootDir == "":
		return fmt.Errorf("%w: storePathRootDir is empty", ErrConfig)
	case c.MappedFileSizeCommitLog < 4096 || c.MappedFileSizeCommitLog%osPageSize != 0:
		return fmt.Errorf("%w: mappedFileSizeCommitLog=%d must be a positive multiple of %d", ErrConfig, c.MappedFileSizeCommitLog, osPageSize)
	case c.MappedFileSizeConsumeQueue < CQEntrySize:
		return fmt.Errorf("%w: mappedFileSizeConsumeQueue=%d", ErrConfig, c.MappedFileSizeConsumeQueue)
	case c.FlushDiskType != AsyncFlush && c.FlushDiskType != SyncFlush:
		return fmt.Errorf("%w: flushDiskType=%q (want ASYNC_FLUSH or SYNC_FLUSH)", ErrConfig, c.FlushDiskType)
	case c.BrokerRole != "" && c.BrokerRole != AsyncMaster && c.BrokerRole != SyncMaster && c.BrokerRole != Slave:
		return fmt.Errorf("%w: brokerRole=%q (want ASYNC_MASTER, SYNC_MASTER or SLAVE)", ErrConfig, c.BrokerRole)
	case c.transient() && c.TransientStorePoolSize < 1:
		return fmt.Errorf("%w: transientStorePoolSize=%d", ErrConfig, c.TransientStorePoolSize)
	case c.FileAllocation != AllocZeros && c.FileAllocation != AllocFallocate && c.FileAllocation != AllocZeroRange:
		return fmt.Errorf("%w: fileAllocation=%q (want zeros, fallocate or zero-range)", ErrConfig, c.FileAllocation)
	}
	return nil
}

// Config returns the store's current configuration (live keys included).
func (st *DefaultMessageStore) Config() Config { return *st.live() }

// Start recovers the store and starts its services.
func (st *DefaultMessageStore) Start() error {
	if !st.state.CompareAndSwap(stateNew, stateRunning) {
		return fmt.Errorf("store: Start called twice or after Shutdown: %w", ErrClosed)
	}
	if err := st.recover(); err != nil {
		st.state.Store(stateStopped)
		st.closeFiles()
		return err
	}
	if err := st.openEpochs(); err != nil {
		st.state.Store(stateStopped)
		st.closeFiles()
		return err
	}
	// abort is present while running: found at start, the last stop was a
	// crash.
	f, err := st.fs.Create(st.cfg.abortPath())
	if err != nil {
		st.state.Store(stateStopped)
		st.closeFiles()
		return fmt.Errorf("store: create %s: %w", st.cfg.abortPath(), err)
	}
	f.Close()
	if err := st.fs.SyncDir(st.cfg.StorePathRootDir); err != nil {
		st.state.Store(stateStopped)
		st.closeFiles()
		return fmt.Errorf("store: sync %s: %w", st.cfg.StorePathRootDir, err)
	}
	// A checkpoint file exists from the start, so a shutdown on a full
	// disk can overwrite it in place (writeCheckpoint).
	if err := st.checkpointWith(st.disp.reputFrom.Load(), cqFlushAll, true); err != nil {
		if !isNoSpace(err) {
			st.state.Store(stateStopped)
			st.closeFiles()
			return err
		}
		st.logger.Error("store: no space for the checkpoint at start; retried while running", "err", err)
	}
	c := st.commitLog
	c.alloc.start()
	c.flusher.start()
	if c.committer != nil {
		c.committer.start()
	}
	st.disp.start()
	if st.index != nil {
		st.index.start()
	}
	ctx, cancel := context.WithCancel(context.Background())
	st.statsStop = cancel
	st.bgWG.Add(1)
	go func() {
		defer st.bgWG.Done()
		st.stats.rt.Run(ctx, st.logger, st.fs.Now)
	}()
	st.bgWG.Add(2)
	go st.backgroundLoop()
	go st.cleanLoop()
	// Files are allocated ahead from the start.
	c.alloc.kick()
	c.alloc.kickPrefault()
	return nil
}

// Shutdown stops the services, flushes everything, writes the checkpoint,
// removes the abort file and releases the lock.
func (st *DefaultMessageStore) Shutdown() error {
	if !st.state.CompareAndSwap(stateRunning, stateStopped) {
		if st.state.CompareAndSwap(stateNew, stateStopped) {
			return st.lock.Close()
		}
		return nil
	}
	c := st.commitLog
	// Let in-flight puts finish: take the put lock once after the state
	// change (new puts see stateStopped).
	c.lock.Lock()
	c.lock.Unlock()
	close(st.bgStop)
	st.statsStop()
	st.bgWG.Wait()
	c.alloc.stop()
	if c.committer != nil {
		c.committer.stop()
	}
	c.writeGroups() // staged records still waiting for a writer
	c.failVisibleWaiters("store shut down before an earlier write finished")
	c.flusher.stop()
	st.disp.stop()
	if st.index != nil {
		st.index.stop()
	}
	var errs []error
	clean := st.readOnly.Load() == nil
	if clean {
		if err := st.flushConsumeQueues(); errors.Is(err, errCQWrite) {
			// The checkpoint does not claim the unwritten entries: the
			// next start dispatches them again.
			st.logger.Warn("store: consume-queue entries not written at shutdown", "err", err)
		} else if err != nil {
			errs = append(errs, err)
			clean = false
		}
	}
	if clean {
		if err := st.writeCheckpoint(); err != nil {
			errs = append(errs, err)
			clean = false
		}
	}
	if clean {
		if err := st.fs.Remove(st.cfg.abortPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		} else if err := st.fs.SyncDir(st.cfg.StorePathRootDir); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, st.closeFiles())
	return errors.Join(errs...)
}

func (st *DefaultMessageStore) closeFiles() error {
	var errs []error
	errs = append(errs, st.commitLog.mfq.close())
	if st.commitLog.pool != nil {
		st.commitLog.pool.release()
	}
	st.cqMu.Lock()
	for _, cq := range st.cqs {
		errs = append(errs, cq.close())
	}
	st.cqMu.Unlock()
	if st.index != nil {
		errs = append(errs, st.index.svc.Close())
	}
	errs = append(errs, st.lock.Close())
	return errors.Join(errs...)
}

// setReadOnly turns the store read-only after a failed write or sync.
func (st *DefaultMessageStore) setReadOnly(err error) {
	msg := err.Error()
	if st.readOnly.CompareAndSwap(nil, &msg) {
		st.stats.syncErrors.Add(1)
		st.logger.Error("store: read-only until restart", "err", err)
	}
}

func (st *DefaultMessageStore) readOnlyRemark() string {
	if p := st.readOnly.Load(); p != nil {
		return "store is read-only until restart after a failed disk write or sync: " + *p
	}
	return "store is read-only"
}

// writable reports why a put must be refused, or PutOK.
func (st *DefaultMessageStore) writable() (PutStatus, string) {
	if st.state.Load() != stateRunning {
		return ServiceNotAvailable, "message store is not running"
	}
	if st.readOnly.Load() != nil {
		return ServiceNotAvailable, st.readOnlyRemark()
	}
	if st.live().BrokerRole == Slave {
		// A slave's log holds only its master's bytes (ReplicaLog).
		return ServiceNotAvailable, "message store is slave mode, so putMessage is forbidden"
	}
	if p := st.refusal.Load(); p != nil {
		return ServiceNotAvailable, *p
	}
	if p := st.diskFull.Load(); p != nil {
		st.stats.diskFullRefusals.Add(1)
		return ServiceNotAvailable, *p
	}
	if p := st.noSpace.remark.Load(); p != nil {
		st.stats.noSpaceRefusals.Add(1)
		return ServiceNotAvailable, *p
	}
	if p := st.disp.failing.Load(); p != nil {
		return ServiceNotAvailable, *p
	}
	if held, limit := st.commitLog.lockHeldFor(), st.live().OSPageCacheBusyTimeOutMills; held > time.Duration(limit)*time.Millisecond {
		return OSPageCacheBusy, fmt.Sprintf("put lock held for %dms, limit osPageCacheBusyTimeOutMills=%dms", held.Milliseconds(), limit)
	}
	return PutOK, ""
}

// PutMessage appends one message.
func (st *DefaultMessageStore) PutMessage(msg *message.Inner, done func(PutResult)) {
	start := st.commitLog.monoNs()
	if s, r := st.writable(); s != PutOK {
		st.stats.putFailures.Add(1)
		done(PutResult{Status: s, Remark: r})
		return
	}
	maxSize := st.live().MaxMessageSize
	if len(msg.Body) > maxSize {
		st.stats.putFailures.Add(1)
		done(PutResult{Status: MessageIllegal, Remark: fmt.Sprintf("message body is %d bytes, maxMessageSize is %d", len(msg.Body), maxSize)})
		return
	}
	if err := message.CheckInner(msg, ""); err != nil {
		st.stats.putFailures.Add(1)
		status := MessageIllegal
		if errors.Is(err, message.ErrPropertiesTooLong) {
			status = PropertiesSizeExceeded
		}
		done(PutResult{Status: status, Remark: err.Error()})
		return
	}
	c := st.commitLog
	bp := c.getBuf()
	buf := message.EncodeRecord((*bp)[:0], msg, "")
	if len(buf) > maxSize+64<<10 {
		*bp = buf
		c.putBuf(bp)
		st.stats.putFailures.Add(1)
		done(PutResult{Status: MessageIllegal, Remark: fmt.Sprintf("stored record is %d bytes, limit maxMessageSize+64KiB=%d", len(buf), maxSize+64<<10)})
		return
	}
	sizes := [1]int{len(buf)}
	out := c.appendRecords(buf, sizes[:], queueKey{msg.Topic, msg.QueueID}, message.TransactionValue(msg.SysFlag), msg.StoreTimestamp, false)
	*bp = buf
	c.putBuf(bp)
	st.finishPut(out, 1, msg.WaitStoreMsgOK(), isSystemTopic(msg.Topic), start, done)
}

// PutMessages appends a batch as consecutive records of one queue.
func (st *DefaultMessageStore) PutMessages(batch *message.Batch, done func(PutResult)) {
	start := st.commitLog.monoNs()
	if s, r := st.writable(); s != PutOK {
		st.stats.putFailures.Add(1)
		done(PutResult{Status: s, Remark: r})
		return
	}
	if len(batch.Members) == 0 {
		done(PutResult{Status: MessageIllegal, Remark: "empty batch"})
		return
	}
	maxSize := st.live().MaxMessageSize
	for i := range batch.Members {
		if n := len(batch.Members[i].Body); n > maxSize {
			st.stats.putFailures.Add(1)
			done(PutResult{Status: MessageIllegal, Remark: fmt.Sprintf("batch member %d body is %d bytes, maxMessageSize is %d", i, n, maxSize)})
			return
		}
	}
	if err := message.CheckBatch(batch); err != nil {
		st.stats.putFailures.Add(1)
		status := MessageIllegal
		if errors.Is(err, message.ErrPropertiesTooLong) {
			status = PropertiesSizeExceeded
		}
		done(PutResult{Status: status, Remark: err.Error()})
		return
	}
	c := st.commitLog
	bp := c.getBuf()
	buf, sizes := message.EncodeBatchRecords((*bp)[:0], batch)
	out := c.appendRecords(buf, sizes, queueKey{batch.Topic, batch.QueueID}, message.TransactionValue(batch.SysFlag), 0, true)
	*bp = buf
	c.putBuf(bp)
	st.finishPut(out, len(sizes), true, isSystemTopic(batch.Topic), start, done)
}

func (st *DefaultMessageStore) finishPut(out appendOutcome, n int, wait, systemTopic bool, start int64, done func(PutResult)) {
	if out.status != PutOK {
		st.stats.putFailures.Add(1)
		done(PutResult{Status: out.status, Remark: out.remark})
		return
	}
	end := out.endNs
	if end == 0 {
		end = st.commitLog.monoNs()
	}
	d := time.Duration(end - start)
	st.stats.rt.RecordPut(n, out.end-out.wrote, d, systemTopic)
	st.stats.puts.Add(int64(n))
	st.stats.putBytes.Add(out.end - out.wrote)
	res := PutResult{Status: PutOK, WroteOffset: out.wrote, WroteBytes: int32(out.end - out.wrote), QueueOffset: out.queueOf,
		MsgNum: int32(n), StoreTimestamp: out.storeTs, Offsets: out.offsets}
	c := st.commitLog
	if st.cfg.FlushDiskType == SyncFlush {
		if wait {
			c.flusher.wait(out.end, res, done)
			return
		}
		c.flusher.kick()
	} else if !st.live().FlushCommitLogTimed {
		// flushCommitLogTimed=false: every put wakes the flusher, which
		// flushes once flushCommitLogLeastPages are dirty.
		c.flusher.kick()
	}
	if out.spill != nil {
		// In the in-memory spill the records would not survive a process
		// crash: the answer waits until the spill has its file.
		c.holdForSpill(out.spill, res, done)
		return
	}
	if out.behind {
		c.holdForVisible(out.end, res, done)
		return
	}
	done(res)
}

// consumeQueue returns the queue of topic/queueID, creating it when create
// is set.
func (st *DefaultMessageStore) consumeQueue(topic string, queueID int32, create bool) *ConsumeQueue {
	k := queueKey{topic, queueID}
	st.cqMu.RLock()
	cq := st.cqs[k]
	st.cqMu.RUnlock()
	if cq != nil || !create {
		return cq
	}
	st.cqMu.Lock()
	defer st.cqMu.Unlock()
	if cq = st.cqs[k]; cq == nil {
		cq = newConsumeQueue(st, topic, queueID)
		st.cqs[k] = cq
	}
	return cq
}

func (st *DefaultMessageStore) allQueues() []*ConsumeQueue {
	st.cqMu.RLock()
	defer st.cqMu.RUnlock()
	out := make([]*ConsumeQueue, 0, len(st.cqs))
	for _, cq := range st.cqs {
		out = append(out, cq)
	}
	return out
}

// OnDispatch registers a dispatch callback.
func (st *DefaultMessageStore) OnDispatch(fn func(topic string, queueID int32, maxOffset int64)) {
	for {
		old := st.callbacks.Load()
		var n []func(string, int32, int64)
		if old != nil {
			n = append(n, *old...)
		}
		n = append(n, fn)
		if st.callbacks.CompareAndSwap(old, &n) {
			return
		}
	}
}

func (st *DefaultMessageStore) notifyDispatch(topic string, queueID int32, maxOffset int64) {
	if p := st.callbacks.Load(); p != nil {
		for _, fn := range *p {
			fn(topic, queueID, maxOffset)
		}
	}
}

// MaxOffsetInQueue is the queue's exclusive maximum logical offset.
func (st *DefaultMessageStore) MaxOffsetInQueue(topic string, queueID int32) int64 {
	if cq := st.consumeQueue(topic, queueID, false); cq != nil {
		return cq.maxOffset.Load()
	}
	return 0
}

// MinOffsetInQueue is the queue's first kept logical offset.
func (st *DefaultMessageStore) MinOffsetInQueue(topic string, queueID int32) int64 {
	if cq := st.consumeQueue(topic, queueID, false); cq != nil {
		return cq.minOffset.Load()
	}
	return 0
}

// memoryWindow is the part of the CommitLog tail considered in memory.
func (st *DefaultMessageStore) memoryWindow() int64 {
	return memoryWindowOf(st.memTotal, st.live().AccessMessageInMemoryMaxRatio)
}

// CheckInMemByConsumeOffset reports whether the message at a logical offset
// is within the in-memory window.
func (st *DefaultMessageStore) CheckInMemByConsumeOffset(topic string, queueID int32, offset int64) bool {
	cq := st.consumeQueue(topic, queueID, false)
	if cq == nil {
		return false
	}
	e, ok := cq.entryAt(offset)
	if !ok {
		return false
	}
	return st.commitLog.maxOffset()-e.Offset <= st.memoryWindow()
}

// LookMessageByOffset returns a copy of the record at a commit-log offset.
func (st *DefaultMessageStore) LookMessageByOffset(commitLogOffset int64) ([]byte, error) {
	return st.commitLog.recordAt(commitLogOffset)
}

// QueryMessage finds records by KEYS entry or UNIQ_KEY within a store time
// range, from the index.
func (st *DefaultMessageStore) QueryMessage(topic, key string, maxNum int, begin, end int64) (*QueryResult, error) {
	return st.queryIndex(topic, key, maxNum, begin, end)
}

// DeleteTopics removes the consume queues of topics.
func (st *DefaultMessageStore) DeleteTopics(topics []string) {
	for _, t := range topics {
		st.cqMu.Lock()
		var drop []*ConsumeQueue
		for k, cq := range st.cqs {
			if k.topic == t {
				drop = append(drop, cq)
				delete(st.cqs, k)
			}
		}
		st.cqMu.Unlock()
		st.commitLog.removeQueueOffsets(t)
		for _, cq := range drop {
			cq.mu.Lock()
			cq.dropTailLocked(cq.minOffset.Load())
			files := cq.mfq.snapshot()
			cq.mfq.mu.Lock()
			cq.mfq.files = nil
			cq.mfq.mu.Unlock()
			for _, mf := range files {
				mf.destroy(true, 0, 0)
			}
			cq.mu.Unlock()
			_ = st.fs.Remove(cq.mfq.dir)
		}
		_ = st.fs.Remove(st.cfg.consumeQueueDir() + "/" + t)
	}
}

// QueueIDs lists the queue ids that have a consume queue for topic.
func (st *DefaultMessageStore) QueueIDs(topic string) []int32 {
	st.cqMu.RLock()
	var ids []int32
	for k := range st.cqs {
		if k.topic == topic {
			ids = append(ids, k.queueID)
		}
	}
	st.cqMu.RUnlock()
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// MinPhyOffset is the first CommitLog offset kept.
func (st *DefaultMessageStore) MinPhyOffset() int64 { return st.commitLog.minOffset() }

// MaxPhyOffset is the end of the readable CommitLog.
func (st *DefaultMessageStore) MaxPhyOffset() int64 { return st.commitLog.maxOffset() }

// DispatchBehindBytes is how far dispatch lags the CommitLog.
func (st *DefaultMessageStore) DispatchBehindBytes() int64 {
	return max(0, st.commitLog.maxOffset()-st.disp.reputFrom.Load())
}

// Stats returns the runtime figures.
func (st *DefaultMessageStore) Stats() Stats {
	s := &st.stats
	out := Stats{
		Put: s.rt.PutLatency.Snapshot(), PutLockHold: s.lockHold.Snapshot(), Flush: s.flush.Snapshot(),
		FileCreate: s.fileCreate.Snapshot(), Dispatch: s.dispatch.Snapshot(), IndexLag: s.indexLag.Snapshot(),
		PutTPS: s.rt.PutTPS(), PageCacheRT: s.rt.PageCacheRT.Cumulative(),
		Puts: s.puts.Load(), PutBytes: s.putBytes.Load(), PutFailures: s.putFailures.Load(),
		PutWaitedOnCreate: s.putWaitedOnCreate.Load(), Spills: s.spills.Load(), SpillWrites: s.spillWrites.Load(), SpillFull: s.spillFull.Load(), PoolExhausted: s.poolExhausted.Load(),
		AllocFailures: s.allocFailures.Load(), FilesCreated: s.filesCreated.Load(), ReadyFiles: st.commitLog.alloc.readyCount(),
		Flushes: s.flushes.Load(), LoopFlushes: s.loopFlushes.Load(), FlushTimeouts: s.flushTimeouts.Load(), SyncErrors: s.syncErrors.Load(),
		SyncUnderPutLock: s.syncUnderLock.Load(), SkippedCorrupt: s.skippedCorrupt.Load(), SkippedBytes: s.skippedBytes.Load(),
		TruncatedBytes: s.truncatedBytes.Load(), Dispatched: s.dispatched.Load(), FilesDeleted: s.filesDeleted.Load(),
		DiskFullRefusals: s.diskFullRefusals.Load(), DispatchBehind: st.DispatchBehindBytes(),
		CommitLogMin: st.commitLog.minOffset(), CommitLogMax: st.commitLog.maxOffset(), CommitLogFlushed: st.commitLog.flushedWhere.Load(),
	}
	if p := st.readOnly.Load(); p != nil {
		out.ReadOnly, out.ReadOnlyReason = true, *p
	}
	out.SpillHeld, out.NoSpaceRefusals, out.NoSpaceEvents, out.AllocRetries = s.spillHeld.Load(), s.noSpaceRefusals.Load(), s.noSpaceEvents.Load(), s.allocRetries.Load()
	out.ForcedDeletions, out.ForcedDeletedBytes, out.ForcedDeletedOldestMs = s.forcedDeletions.Load(), s.forcedDeletedBytes.Load(), s.forcedDeletedOldestMs.Load()
	if p := st.noSpace.remark.Load(); p != nil {
		out.NoSpace = *p
	} else if c := st.commitLog; c.alloc.failing.Load() {
		out.NoSpace = c.noFileRemark(c.mfq.maxCommitted())
	}
	if u, err := st.usage(); err == nil {
		out.DiskStoredRatio, out.DiskReservedBytes = u.storedRatio(), u.reserved
	}
	if st.index != nil {
		out.IndexLagBytes = st.index.svc.IndexLagBytes(out.CommitLogMax)
		if p := st.index.err.Load(); p != nil {
			out.IndexError = *p
		}
	}
	return out
}

// flushConsumeQueues writes out every consume queue's tail and syncs
// every dirty queue. A failed tail write leaves the entries in the tail
// (readable, and kept out of the checkpoint's dispatched offset by
// checkpointLocked) and is retried at the next flush: when every failure
// is one, the error wraps errCQWrite (and errCheckpointNoSpace when they
// all found no space). A failed sync is never one of these.
func (st *DefaultMessageStore) flushConsumeQueues() error {
	return st.flushConsumeQueuesDue(0, 0)
}

// flushConsumeQueuesDue writes out every queue's tail and syncs the queues
// cqFlushDue names for leastPages and the dispatched end (every queue with
// unsynced entries when leastPages is 0).
func (st *DefaultMessageStore) flushConsumeQueuesDue(leastPages int, dispatched int64) error {
	var errs []error
	writes, noSpace := true, true
	for _, cq := range st.allQueues() {
		if err := cq.flushIfDue(leastPages, dispatched); err != nil {
			errs = append(errs, err)
			var we *cqWriteError
			writes = writes && errors.As(err, &we)
			noSpace = noSpace && isNoSpace(err)
		}
	}
	err := errors.Join(errs...)
	switch {
	case err == nil || !writes:
		return err
	case noSpace:
		return fmt.Errorf("store: consume queues: %w: %w: %w", errCQWrite, errCheckpointNoSpace, err)
	default:
		return fmt.Errorf("store: consume queues: %w: %w", errCQWrite, err)
	}
}

// errCQWrite marks failed writes of consume-queue tails: the entries stay
// in memory and the write is retried, the store stays writable.
var errCQWrite = errors.New("consume-queue entries not written")

// unflushedFrom is the CommitLog offset of the first record whose
// consume-queue entry is in its file but not synced (math.MaxInt64 when
// none).
func (st *DefaultMessageStore) unflushedFrom() int64 {
	from := int64(math.MaxInt64)
	for _, cq := range st.allQueues() {
		from = min(from, cq.unflushedFrom())
	}
	return from
}

// unwrittenFrom is the CommitLog offset of the first record whose
// consume-queue entry is not in its file yet (math.MaxInt64 when none).
func (st *DefaultMessageStore) unwrittenFrom() int64 {
	from := int64(math.MaxInt64)
	if st.cqTailBytes.Load() == 0 {
		return from
	}
	for _, cq := range st.allQueues() {
		from = min(from, cq.unwrittenFrom())
	}
	return from
}

// writeQueueTails writes out the tail of every consume queue (the
// dispatcher, when the tails pass cqTailBudget).
func (st *DefaultMessageStore) writeQueueTails() error {
	var errs []error
	for _, cq := range st.allQueues() {
		if err := cq.writeTail(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeCheckpoint records what is durable. The dispatched offset is read
// before the queues are flushed, so every entry below it is durable.
func (st *DefaultMessageStore) writeCheckpoint() error {
	return st.checkpointWith(st.disp.reputFrom.Load(), cqFlushNone, true)
}

// cqFlush is what a checkpoint does with the consume queues before it is
// written.
type cqFlush int

const (
	cqFlushNone cqFlush = iota // claim what earlier flushes made durable
	cqFlushAll                 // sync every queue with unsynced entries
	cqFlushSome                // sync the queues cqFlushDue names (flushConsumeQueueLeastPages)
)

func (st *DefaultMessageStore) checkpointWith(dispatched int64, flush cqFlush, inPlace bool) error {
	st.ckMu.Lock()
	defer st.ckMu.Unlock()
	return st.checkpointLocked(dispatched, flush, inPlace)
}

func (st *DefaultMessageStore) checkpointLocked(dispatched int64, flush cqFlush, inPlace bool) error {
	var cqErr error
	switch flush {
	case cqFlushAll:
		cqErr = st.flushConsumeQueues()
	case cqFlushSome:
		cqErr = st.flushConsumeQueuesDue(st.live().FlushConsumeQueueLeastPages, dispatched)
	}
	if cqErr != nil && !errors.Is(cqErr, errCQWrite) {
		return cqErr
	}
	// Entries not written (a failed write) or not synced (a queue not due
	// yet) are not claimed as durable. Tails are looked at first: an entry
	// written out in between is then seen by the second look.
	unwritten := st.unwrittenFrom()
	dispatched = min(dispatched, unwritten, st.unflushedFrom())
	var indexTs, indexOff int64
	if st.index != nil {
		indexOff = st.index.cursor.Load()
		if err := st.index.svc.Flush(); err != nil {
			st.index.fail(err) // the index is derived data: log, do not stop the store
		}
		indexTs = st.index.svc.FlushedTimestamp()
	}
	now := st.fs.Now().UnixMilli()
	flushed := st.commitLog.flushedWhere.Load()
	cp := Checkpoint{PhysicMsgTimestamp: now, LogicsMsgTimestamp: now, IndexMsgTimestamp: indexTs,
		PhysicFlushedOffset: flushed, LogicsDispatchedOffset: min(dispatched, flushed), IndexOffset: indexOff}
	if st.cfg.FlushDiskType == AsyncFlush {
		cp.LogicsDispatchedOffset = dispatched
	}
	if c := st.commitLog; c.gated.Load() {
		cp.ConfirmPhyOffset = min(c.confirm.Load(), c.visible.Load())
	}
	if err := writeCheckpoint(st.fs, st.cfg.checkpointPath(), cp, st.Failpoint, inPlace); err != nil {
		return err
	}
	return cqErr
}

// backgroundLoop flushes consume queues and writes the checkpoint every
// flushIntervalConsumeQueue, off every lock the produce path takes. A
// queue is synced when flushConsumeQueueLeastPages pages of it are
// unsynced (or it lags, cqFlushDue), and every queue once per
// flushConsumeQueueThoroughInterval, as RocketMQ's FlushConsumeQueueService
// does; the checkpoint claims only what is synced either way.
func (st *DefaultMessageStore) backgroundLoop() {
	defer st.bgWG.Done()
	lastThorough := st.fs.Now()
	for {
		changed := st.liveChanged()
		t := time.NewTimer(time.Duration(max(st.live().FlushIntervalConsumeQueue, 10)) * time.Millisecond)
		select {
		case <-st.bgStop:
			t.Stop()
			return
		case <-changed: // flushIntervalConsumeQueue may have changed
			t.Stop()
			continue
		case <-t.C:
		}
		if st.readOnly.Load() != nil {
			continue
		}
		dispatched := st.disp.reputFrom.Load()
		flush := cqFlushSome
		if now := st.fs.Now(); now.Sub(lastThorough) >= time.Duration(st.live().FlushConsumeQueueThoroughInterval)*time.Millisecond {
			flush, lastThorough = cqFlushAll, now
		}
		err := st.checkpointWith(dispatched, flush, false)
		switch {
		case err == nil:
			st.noSpace.clear(st, condCheckpoint)
		case errors.Is(err, errCQWrite) && !errors.Is(err, errCheckpointNoSpace):
			// Retried at the next interval; the entries stay readable
			// and the checkpoint does not claim them.
			st.logger.Warn("store: consume-queue entries not written; retried", "err", err)
		case errors.Is(err, errCheckpointNoSpace):
			// The checkpoint is only a starting point for recovery: an
			// older one loses nothing. Retried at the next interval.
			st.noSpace.set(st, condCheckpoint, err)
		default:
			st.setReadOnly(err)
		}
	}
}

// cleanLoop runs retention (and the disk-full check) every
// cleanResourceInterval.
func (st *DefaultMessageStore) cleanLoop() {
	defer st.bgWG.Done()
	interval := time.Duration(max(st.cfg.CleanResourceInterval, 10)) * time.Millisecond
	for {
		t := time.NewTimer(interval)
		select {
		case <-st.bgStop:
			t.Stop()
			return
		case <-t.C:
		}
		st.cleanOnce()
	}
}

// physicalMemory is MemTotal of /proc/meminfo, or 8 GiB when it cannot
// be read.
func physicalMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 8 << 30
}
