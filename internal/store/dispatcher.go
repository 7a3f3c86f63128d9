package store

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/delaylevel"
	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/message"
)

// scheduleTopic holds delayed messages; its tag field is the delivery time.
const scheduleTopic = systopic.Schedule

// dispatchRequest is what the dispatcher takes from one record.
type dispatchRequest struct {
	topic       string
	queueID     int32
	queueOffset int64
	phy         int64
	size        int32
	tagsCode    int64
	storeTs     int64
	sysFlag     int32
}

// dispatcher ("reput") reads what the CommitLog made readable and appends
// consume-queue entries, then runs the OnDispatch callbacks.
type dispatcher struct {
	st        *DefaultMessageStore
	reputFrom atomic.Int64
	stopCh    chan struct{}
	wg        sync.WaitGroup
	buf       []byte
	// batches, order and free are a pass's batch table, kept for the next
	// (passes do not overlap).
	batches map[queueKey]*queueBatch
	order   []queueKey
	free    []*queueBatch
	lastErr atomic.Pointer[string]
	// failing is the remark puts are refused with while a pass fails
	// (nil when dispatch is healthy): what the dispatcher cannot index is
	// not acknowledged.
	failing  atomic.Pointer[string]
	failures atomic.Int64 // passes that failed
	parks    atomic.Int64 // times the run loop blocked waiting for work (benchmarks)
	// waiting reports whether anyone waits for new records (nil: nobody);
	// nowCh ends a linger at once.
	waiting atomic.Pointer[func() bool]
	nowCh   chan struct{}
}

// dispatchRetryInterval is how often a failing dispatch is retried.
const dispatchRetryInterval = 100 * time.Millisecond

func newDispatcher(st *DefaultMessageStore) *dispatcher {
	return &dispatcher{st: st, stopCh: make(chan struct{}), nowCh: make(chan struct{}, 1)}
}

func (d *dispatcher) start() {
	d.wg.Add(1)
	go d.run()
}

func (d *dispatcher) stop() {
	close(d.stopCh)
	d.wg.Wait()
	// Dispatch what is left so a clean shutdown leaves the queues complete.
	_ = d.pass()
}

// dispatchLinger is how long the dispatcher waits after a pass that
// dispatched records, while nobody waits for new ones, before it looks
// again without being woken: while records keep arriving, one pass per
// dispatchLinger takes them all, and the puts skip the wake-up that costs
// a thread switch each (RocketMQ's reput service sleeps 1 ms between
// passes). The first record after a quiet spell still wakes it at once,
// and so does every record while a pull is held for one.
const dispatchLinger = time.Millisecond

// dispatchWait decides how the dispatcher waits before its next pass: how
// long, and whether a put's kick may cut the wait short (parked) or not
// (lingering). progressed: the last pass dispatched records; failing: it
// failed and puts are refused until a pass succeeds; waiting: someone
// waits for new records (a held pull).
func dispatchWait(progressed, failing, waiting bool) (wait time.Duration, wakeable bool) {
	switch {
	case failing:
		return dispatchRetryInterval, true // retry soon: puts are refused meanwhile
	case progressed && !waiting:
		return dispatchLinger, false
	default:
		return time.Second, true
	}
}

// someoneWaiting asks the function SetDispatchWaiters installed.
func (d *dispatcher) someoneWaiting() bool {
	if f := d.waiting.Load(); f != nil {
		return (*f)()
	}
	return false
}

// SetDispatchWaiters installs the function the dispatcher asks, after a
// pass that dispatched records, whether anyone waits for new ones.
func (st *DefaultMessageStore) SetDispatchWaiters(waiting func() bool) {
	st.disp.waiting.Store(&waiting)
}

// DispatchNow ends the dispatcher's linger (or park) at once.
func (st *DefaultMessageStore) DispatchNow() {
	select {
	case st.disp.nowCh <- struct{}{}:
	default:
	}
}

func (d *dispatcher) run() {
	defer d.wg.Done()
	c := d.st.commitLog
	t := time.NewTimer(time.Second)
	defer t.Stop()
	seen := int64(-1) // the readable end when the last pass began
	progressed := false
	for {
		wait, wakeable := dispatchWait(progressed, d.failing.Load() != nil, progressed && d.someoneWaiting())
		if !wakeable {
			d.parks.Add(1)
			t.Reset(wait)
			select {
			case <-d.stopCh:
				return
			case <-d.nowCh:
			case <-t.C:
			}
		} else {
			// Park unless the readable end moved since the last pass
			// began. The flag is raised before the re-check, and a put
			// reads it after publishing its records, so no wake-up is
			// lost; while the dispatcher works or lingers, puts skip the
			// wake-up entirely. (A pass that cannot progress is not
			// retried until new records arrive.)
			c.dispatchIdle.Store(true)
			if !(c.dispatchEnd() != seen && c.dispatchIdle.CompareAndSwap(true, false)) {
				d.parks.Add(1)
				t.Reset(wait)
				select {
				case <-d.stopCh:
					return
				case <-c.kickCh:
				case <-d.nowCh:
				case <-t.C:
				}
				c.dispatchIdle.Store(false)
			}
		}
		before := d.reputFrom.Load()
		seen = c.dispatchEnd()
		err := d.pass()
		progressed = d.reputFrom.Load() != before
		if err == nil && d.st.cqTailBytes.Load() > cqTailBudget {
			err = d.st.writeQueueTails()
		}
		if err == nil {
			d.st.noSpace.clear(d.st, condDispatch)
		} else if isNoSpace(err) {
			// Retried at the next wake-up (at most a second away); puts
			// are refused meanwhile.
			d.st.noSpace.set(d.st, condDispatch, err)
		}
		if err != nil {
			d.failures.Add(1)
			msg := err.Error()
			if p := d.lastErr.Load(); p == nil || *p != msg {
				d.st.logger.Error("store: dispatch stopped; puts are refused until it recovers", "offset", d.reputFrom.Load(), "err", err)
				d.lastErr.Store(&msg)
			}
			remark := fmt.Sprintf("dispatch to consume queues is failing at CommitLog offset %d (%d bytes behind): %s; writes resume when it recovers",
				d.reputFrom.Load(), max(0, c.visible.Load()-d.reputFrom.Load()), msg)
			d.failing.Store(&remark)
		} else if d.failing.Load() != nil {
			d.failing.Store(nil)
			d.lastErr.Store(nil)
			d.st.logger.Info("store: dispatch recovered; puts accepted again", "offset", d.reputFrom.Load())
		}
	}
}

type queueBatch struct {
	cq      *ConsumeQueue
	first   int64
	entries []byte
	touched bool
}

// Batches kept between passes, so that a pass over many queues allocates
// nothing in steady state: at most batchesKept of them, each keeping an
// entries buffer of at most batchEntriesKept bytes.
const (
	batchesKept      = 4096
	batchEntriesKept = 4 << 10
)

// newBatch is a batch of entries for cq from queue offset first, recycled
// when one is free.
func (d *dispatcher) newBatch(cq *ConsumeQueue, first int64) *queueBatch {
	n := len(d.free)
	if n == 0 {
		return &queueBatch{cq: cq, first: first}
	}
	b := d.free[n-1]
	d.free = d.free[:n-1]
	b.cq, b.first = cq, first
	return b
}

// recycleBatches empties the pass's batch table and keeps its batches
// (and the order slice) for the next pass. The queues are looked up again
// by every pass: a table kept with its queues would outlive a deleted
// topic.
func (d *dispatcher) recycleBatches(order []queueKey) {
	for _, k := range order {
		b := d.batches[k]
		if len(d.free) >= batchesKept {
			break
		}
		if cap(b.entries) > batchEntriesKept {
			b.entries = nil
		}
		*b = queueBatch{entries: b.entries[:0]}
		d.free = append(d.free, b)
	}
	if len(d.batches) > batchesKept {
		d.batches = nil // a map keeps its buckets when cleared
	} else {
		clear(d.batches)
	}
	if cap(order) <= batchesKept {
		d.order = order[:0]
	} else {
		d.order = nil
	}
}

// pass dispatches everything readable. It is also run synchronously by
// recovery.
func (d *dispatcher) pass() error {
	c := d.st.commitLog
	c.cutMu.RLock() // a truncation waits for the pass
	defer c.cutMu.RUnlock()
	if d.batches == nil {
		d.batches = map[queueKey]*queueBatch{}
	}
	batches := d.batches
	order := d.order[:0]
	flushBatches := func() error {
		for _, k := range order {
			b := batches[k]
			if len(b.entries) == 0 {
				continue
			}
			if err := b.cq.appendEntries(d.st, b.first, b.entries); err != nil {
				return err
			}
			b.first += int64(len(b.entries) / CQEntrySize)
			b.entries = b.entries[:0]
			b.touched = true
		}
		return nil
	}
	defer func() {
		for _, k := range order {
			if b := batches[k]; b.touched {
				d.st.notifyDispatch(k.topic, k.queueID, b.cq.maxOffset.Load())
			}
		}
		d.recycleBatches(order)
	}()
	chunk := 1 << 20
	for {
		start := c.monoNs()
		from := d.reputFrom.Load()
		end := c.dispatchEnd()
		if from >= end {
			return flushBatches()
		}
		d.st.stats.rt.RecordDispatchBuffer(end - from)
		mf := c.mfq.find(from)
		if mf == nil {
			if min := c.minOffset(); from < min {
				d.reputFrom.Store(min)
				continue
			}
			return flushBatches()
		}
		fileEnd := mf.from + mf.size
		lim := min(end, fileEnd, from+int64(chunk))
		if cap(d.buf) < int(lim-from) {
			d.buf = make([]byte, lim-from)
		}
		buf := d.buf[:lim-from]
		err := mf.readAt(buf, from-mf.from)
		mf.release()
		if err != nil {
			return err
		}
		p := 0
		next := from
		for p+blankSize <= len(buf) {
			sz, magic := message.PeekRecord(buf[p:])
			size := int(sz)
			if magic == message.BlankMagicCode {
				next = fileEnd
				p = len(buf)
				break
			}
			if size <= 0 || int64(size) > c.cfg.MappedFileSizeCommitLog {
				return fmt.Errorf("%w: record at %d has size %d", ErrCorrupt, from+int64(p), size)
			}
			if p+size > len(buf) {
				if lim-from < int64(chunk) && lim == end && end == c.visible.Load() {
					return fmt.Errorf("%w: record at %d (%d bytes) runs past the readable end %d", ErrCorrupt, from+int64(p), size, end)
				}
				if lim == end {
					break // the confirm offset ends inside the record: wait for it
				}
				chunk = max(chunk, size)
				break
			}
			req, err := d.st.parseDispatch(buf[p:p+size], from+int64(p))
			if err != nil {
				return err
			}
			if req.topic != "" {
				k := queueKey{req.topic, req.queueID}
				b := batches[k]
				if b == nil {
					b = d.newBatch(d.st.consumeQueue(req.topic, req.queueID, true), req.queueOffset)
					batches[k] = b
					order = append(order, k)
				}
				if b.first+int64(len(b.entries)/CQEntrySize) != req.queueOffset {
					if err := b.cq.appendEntries(d.st, b.first, b.entries); err != nil {
						return err
					}
					if len(b.entries) > 0 {
						b.touched = true
					}
					b.first, b.entries = req.queueOffset, b.entries[:0]
				}
				b.entries = AppendCQEntry(b.entries, CQEntry{Offset: req.phy, Size: req.size, TagsCode: req.tagsCode})
			}
			d.st.stats.dispatched.Add(1)
			p += size
			next = from + int64(p)
		}
		if err := flushBatches(); err != nil {
			return err
		}
		if fp := d.st.Failpoint; fp != nil {
			fp("dispatch")
		}
		d.reputFrom.Store(next)
		if d.st.index != nil {
			d.st.index.notify()
		}
		d.st.stats.dispatch.Record(time.Duration(c.monoNs() - start))
	}
}

// parseDispatch reads the fields dispatch needs from a record at phy
// through its view, without allocating in the common case (same topic and
// tags as the previous record). Only V1 records are dispatched (the store
// writes no other). Prepared and rolled-back transaction records get no
// queue entry (topic left empty).
func (st *DefaultMessageStore) parseDispatch(rec []byte, phy int64) (dispatchRequest, error) {
	var v message.RecordView
	if err := checkRecordAt(&v, rec, phy, false); err != nil {
		return dispatchRequest{}, err
	}
	if m := v.Magic(); m != message.MagicCodeV1 {
		return dispatchRequest{}, fmt.Errorf("%w: record at %d: magic %#08x, dispatch reads V1 records only", ErrCorrupt, phy, uint32(m))
	}
	sys := v.SysFlag()
	req := dispatchRequest{phy: phy, size: int32(len(rec)), sysFlag: sys, storeTs: v.StoreTimestamp()}
	switch message.TransactionValue(sys) {
	case message.TransactionPreparedType, message.TransactionRollbackType:
		return req, nil
	}
	if topic := v.Topic(); string(topic) != st.lastTopic {
		st.lastTopic = string(topic)
	}
	req.topic = st.lastTopic
	req.queueID = v.QueueID()
	req.queueOffset = v.QueueOffset()
	if tags, ok := v.Property(message.PropertyTags); ok && len(tags) > 0 {
		if string(tags) != st.lastTags {
			st.lastTags = string(tags)
			st.lastTagsCode = message.TagsHashCode(st.lastTags)
		}
		req.tagsCode = st.lastTagsCode
	}
	if req.topic == scheduleTopic {
		if lv, ok := v.Property(message.PropertyDelayTimeLevel); ok {
			if level, err := strconv.Atoi(string(lv)); err == nil && level > 0 {
				req.tagsCode = req.storeTs + st.delayMillis(level)
			}
		}
	}
	return req, nil
}

// delayMillis is the delay of a level of messageDelayLevel (clamped).
func (st *DefaultMessageStore) delayMillis(level int) int64 {
	return delaylevel.Millis(st.delayLevels, level)
}

var errDispatchStopped = errors.New("store: dispatcher stopped")
