package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/spoolmq/spool/message"
)

// This file is the store's side of controller mode: the epoch file, the
// confirm offset that gates dispatch, and the durable truncation of the
// log and of everything built from it when a replica follows a new
// master.

// openEpochs opens the epoch file after recovery and drops the entries
// that start past the recovered end (a cut whose epoch-file update a
// crash prevented).
func (st *DefaultMessageStore) openEpochs() error {
	e, err := OpenEpochFile(st.fs, st.cfg.StorePathRootDir)
	if err != nil {
		return err
	}
	if err := e.TrimBeyond(st.commitLog.visible.Load()); err != nil {
		return err
	}
	st.epochs = e
	return nil
}

// Epochs is the epoch table (storePathRootDir/epochFileCheckpoint); nil
// before Start.
func (st *DefaultMessageStore) Epochs() *EpochFile { return st.epochs }

// GateDispatchAtConfirm makes dispatch (consume queues, index) stop at
// the confirm offset (SetConfirmOffset): controller mode, where bytes
// past it may still be cut by a role change and consumers must never see
// them. Call it before Start; the confirm offset is kept in the
// checkpoint's confirmPhyOffset field.
func (st *DefaultMessageStore) GateDispatchAtConfirm() error {
	if st.state.Load() != stateNew {
		return fmt.Errorf("store: GateDispatchAtConfirm after Start: %w", ErrClosed)
	}
	st.commitLog.gated.Store(true)
	return nil
}

// SetConfirmOffset moves the offset dispatch may reach (controller mode)
// and wakes the dispatcher.
func (st *DefaultMessageStore) SetConfirmOffset(off int64) {
	c := st.commitLog
	if old := c.confirm.Swap(off); off > old {
		c.kickDispatch()
		if st.index != nil {
			st.index.notify()
		}
	}
}

// ConfirmOffset is the offset dispatch may reach in controller mode.
func (st *DefaultMessageStore) ConfirmOffset() int64 { return st.commitLog.confirm.Load() }

// DispatchedOffset is the CommitLog offset the consume queues cover.
func (st *DefaultMessageStore) DispatchedOffset() int64 { return st.disp.reputFrom.Load() }

// RefusePuts makes every put answer SERVICE_NOT_AVAILABLE with remark
// (the broker became a slave in controller mode); an empty remark lifts
// it.
func (st *DefaultMessageStore) RefusePuts(remark string) {
	if remark == "" {
		st.refusal.Store(nil)
		return
	}
	st.refusal.Store(&remark)
}

// putsLandTimeout bounds how long awaitPutsLanded waits for the writes of
// puts that reserved their range before a refusal (a write retried on a
// full disk can stay pending).
const putsLandTimeout = 10 * time.Second

// awaitPutsLanded returns once every put that reserved CommitLog space
// before the current refusal has its bytes written and visible: after it,
// with the refusal still set, the log's end does not move (appendRecords
// checks the refusal under the put lock). A truncation reads the end and
// zeroes the tail only after it, so a put's late write can neither land
// past a cut nor be missed by the cut point (#10666). It fails when a
// write stays pending for putsLandTimeout.
func (st *DefaultMessageStore) awaitPutsLanded() error {
	c := st.commitLog
	c.lock.Lock() // puts past the refusal check have reserved their ranges
	c.lock.Unlock()
	deadline := time.Now().Add(putsLandTimeout)
	for {
		c.pubMu.Lock()
		n := len(c.pending)
		c.pubMu.Unlock()
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d CommitLog writes still pending after %v", ErrTruncate, n, putsLandTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// SyncTo makes the CommitLog durable up to end (lowered to the readable
// end) and records it in the checkpoint, so that a power cut after it
// leaves every byte below end (controller mode: a replica that becomes
// master first makes durable what it was elected holding, which the
// other replicas may no longer be counted on for). It waits for the
// flusher, as a SYNC_FLUSH put does, never under the put lock.
func (st *DefaultMessageStore) SyncTo(end int64) error {
	c := st.commitLog
	end = min(end, c.visible.Load())
	if c.flushedWhere.Load() < end {
		ch := make(chan PutResult, 1)
		c.flusher.wait(end, PutResult{Status: PutOK}, func(r PutResult) { ch <- r })
		if r := <-ch; r.Status != PutOK {
			return fmt.Errorf("store: sync the CommitLog to %d: %v %s", end, r.Status, r.Remark)
		}
	}
	return st.writeCheckpoint()
}

// OnTruncate registers fn, called after a truncation with the offset the
// log was cut at, once every consume queue is cut: the broker lowers the
// consumer offsets, delay offsets and timer and transaction progress
// that point past the queues' new ends. fn runs on the truncating
// goroutine.
func (st *DefaultMessageStore) OnTruncate(fn func(offset int64)) {
	for {
		old := st.onCut.Load()
		var next []func(int64)
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, fn)
		if st.onCut.CompareAndSwap(old, &next) {
			return
		}
	}
}

// ErrTruncate is wrapped by the errors TruncateTo returns for an offset
// it cannot cut at.
var ErrTruncate = errors.New("store: cannot truncate")

// TruncateTo cuts the CommitLog at offset (a record boundary; an offset
// past the last complete record is lowered to it) together with every
// index built from it, and makes the cut durable before it returns:
//
//  1. the checkpoint is lowered to the cut (a crash after this step
//     recovers the old tail, and the epoch file, still unchanged, makes
//     the next handshake cut again);
//  2. the CommitLog's bytes past the cut are zeroed and synced, later
//     files removed and the directory synced;
//  3. every consume queue drops the entries of cut records (synced), the
//     index its files past the cut, the dispatch cursor and the confirm
//     offset move back;
//  4. the checkpoint is written again, then the epoch file drops the
//     epochs starting at or past the cut.
//
// Puts are refused while it runs; the flusher, the dispatcher and the
// index builder are held off. It returns the offset cut at.
func (st *DefaultMessageStore) TruncateTo(offset int64) (int64, error) {
	st.cutMu.Lock()
	defer st.cutMu.Unlock()
	if st.state.Load() != stateRunning {
		return 0, fmt.Errorf("%w: the store is not running", ErrTruncate)
	}
	c := st.commitLog
	if c.committer != nil {
		return 0, fmt.Errorf("%w: with transientStorePoolEnable=true", ErrTruncate)
	}
	remark := fmt.Sprintf("the CommitLog is being truncated to %d (role change)", offset)
	prev := st.refusal.Swap(&remark)
	defer st.refusal.CompareAndSwap(&remark, prev)
	if err := st.awaitPutsLanded(); err != nil {
		return 0, err
	}

	cut, err := func() (int64, error) {
		c.cutMu.Lock()
		defer c.cutMu.Unlock()
		return st.truncateLocked(offset)
	}()
	if err != nil {
		return 0, err
	}
	if err := st.RebuildQueueOffsets(); err != nil {
		return 0, err
	}
	if fns := st.onCut.Load(); fns != nil {
		for _, fn := range *fns {
			fn(cut)
		}
	}
	return cut, nil
}

func (st *DefaultMessageStore) truncateLocked(offset int64) (int64, error) {
	c := st.commitLog
	st.ckMu.Lock()
	defer st.ckMu.Unlock()
	fp := func(name string) {
		if f := st.Failpoint; f != nil {
			f(name)
		}
	}
	offset = min(offset, c.visible.Load())
	if offset < c.minOffset() {
		return 0, fmt.Errorf("%w: %d is below the first kept offset %d", ErrTruncate, offset, c.minOffset())
	}
	if mf := c.mfq.find(offset); mf != nil {
		ok := offset == mf.from || offset == mf.from+mf.size || offset == c.visible.Load()
		if !ok {
			ok = st.recordStartsAt(mf, offset)
		}
		mf.release()
		if !ok {
			return 0, fmt.Errorf("%w: %d is not the start of a record", ErrTruncate, offset)
		}
	}
	dispatched := min(st.disp.reputFrom.Load(), offset)
	// 1. The checkpoint no longer claims anything past the cut (and what
	// it claims below it is durable).
	if err := st.flushConsumeQueues(); err != nil {
		return 0, err
	}
	cp := Checkpoint{PhysicMsgTimestamp: st.fs.Now().UnixMilli(), LogicsMsgTimestamp: st.fs.Now().UnixMilli(),
		PhysicFlushedOffset: min(c.flushedWhere.Load(), offset), LogicsDispatchedOffset: dispatched,
		ConfirmPhyOffset: min(c.confirm.Load(), offset)}
	if st.index != nil {
		cp.IndexOffset = min(st.index.cursor.Load(), offset)
		cp.IndexMsgTimestamp = st.index.svc.FlushedTimestamp()
	}
	if err := writeCheckpoint(st.fs, st.cfg.checkpointPath(), cp, nil, false); err != nil {
		return 0, err
	}
	fp("truncate-checkpoint")
	// 2. The CommitLog: zero and sync the cut file's tail, remove later
	// files, sync the directory. Past a file's written position there are
	// only zeros (files are created zeroed, recovery zeroes a crash's
	// tail, every cut zeroes up to it), so only [cut, written) is zeroed:
	// a role change does not read a whole file.
	if mf := c.mfq.find(offset); mf != nil {
		pos, wrote := offset-mf.from, mf.wrote.Load()
		err := error(nil)
		if pos < wrote {
			err = zeroRange(mf, pos, wrote)
		}
		mf.release()
		if err != nil {
			st.setReadOnly(err)
			return 0, fmt.Errorf("store: truncate the CommitLog at %d: %w", offset, err)
		}
	}
	if err := c.mfq.truncateNoZero(offset); err != nil {
		st.setReadOnly(err)
		return 0, fmt.Errorf("store: truncate the CommitLog at %d: %w", offset, err)
	}
	c.lock.Lock()
	c.visible.Store(offset)
	c.flushedWhere.Store(min(c.flushedWhere.Load(), offset))
	c.cur = nil
	next := offset
	if last := c.mfq.last(); last != nil {
		next = last.from + last.size
		if last.wrote.Load() < last.size {
			c.cur = last
			c.halfKicked = last.wrote.Load() >= last.size/2
		}
	}
	c.lock.Unlock()
	c.alloc.setNext(next)
	if c.confirm.Load() > offset {
		c.confirm.Store(offset)
	}
	fp("truncate-commitlog")
	// 3. Consume queues, dispatch cursor, queue offsets, index.
	var errs []error
	for _, cq := range st.allQueues() {
		if err := cq.truncatePhy(offset); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := cq.flush(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		st.setReadOnly(err)
		return 0, fmt.Errorf("store: truncate the consume queues at %d: %w", offset, err)
	}
	st.disp.reputFrom.Store(dispatched)
	c.lock.Lock()
	clear(c.queueOffsets)
	c.lock.Unlock()
	if st.index != nil {
		if err := st.index.svc.Truncate(offset); err != nil {
			st.index.fail(err) // derived data: logged, the store goes on
		}
		if st.index.cursor.Load() > offset {
			st.index.cursor.Store(offset)
		}
	}
	fp("truncate-queues")
	// 4. A consistent checkpoint, then the epochs.
	if err := st.checkpointLocked(dispatched, cqFlushNone, false); err != nil {
		return 0, err
	}
	if st.epochs != nil {
		if err := st.epochs.TruncateSuffixByOffset(offset); err != nil {
			return 0, err
		}
	}
	fp("truncate-epochs")
	st.logger.Warn("store: CommitLog truncated for a role change", "offset", offset)
	return offset, nil
}

// recordStartsAt reports whether offset in mf holds a record's or a
// blank marker's first bytes (magic code check).
func (st *DefaultMessageStore) recordStartsAt(mf *MappedFile, offset int64) bool {
	var hdr [blankSize]byte
	if err := mf.readAt(hdr[:], offset-mf.from); err != nil {
		return false
	}
	_, magic := message.PeekRecord(hdr[:])
	return magic == message.MagicCodeV1 || magic == message.MagicCodeV2 || magic == message.BlankMagicCode
}

// RebuildQueueOffsets sets the next queue offset of every queue from the
// records themselves: the consume queues' ends, then every record past
// the dispatch cursor (on a gated store or a replica the log runs ahead
// of the queues). A broker that becomes the master calls it before it
// accepts sends, so its queue offsets continue its log's.
func (st *DefaultMessageStore) RebuildQueueOffsets() error {
	c := st.commitLog
	c.cutMu.RLock()
	defer c.cutMu.RUnlock()
	next := map[queueKey]int64{}
	for _, cq := range st.allQueues() {
		next[queueKey{cq.topic, cq.queueID}] = cq.maxOffset.Load()
	}
	end := c.visible.Load()
	for at := max(st.disp.reputFrom.Load(), c.minOffset()); at < end; {
		head, err := c.read(nil, at, blankSize)
		if err != nil {
			return err
		}
		sz, magic := message.PeekRecord(head)
		if magic == message.BlankMagicCode {
			mf := c.mfq.find(at)
			if mf == nil {
				break
			}
			at = mf.from + mf.size
			mf.release()
			continue
		}
		rec, err := c.recordAt(at)
		if err != nil {
			return err
		}
		var v message.RecordView
		if err := checkRecordAt(&v, rec, at, false); err != nil {
			return err
		}
		switch message.TransactionValue(v.SysFlag()) {
		case message.TransactionPreparedType, message.TransactionRollbackType:
		default:
			k := queueKey{string(v.Topic()), v.QueueID()}
			next[k] = max(next[k], v.QueueOffset()+1)
		}
		at += int64(sz)
	}
	c.lock.Lock()
	for k, n := range next {
		c.setQueueOffsetLocked(k, n)
	}
	c.lock.Unlock()
	return nil
}
