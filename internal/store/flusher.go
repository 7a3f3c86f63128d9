package store

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// flusher makes the CommitLog durable: on a timer (ASYNC_FLUSH) or as a
// group commit for the waiting SYNC_FLUSH puts, from one goroutine. A
// second goroutine answers waiters whose syncFlushTimeout passed while a
// flush is still running, with one timer for the earliest deadline. The
// waiters themselves are a plain syncWaiters under wmu. No flush ever runs
// under the put lock.
//
// An event loop's pass may make the group commit itself
// (syncFlushOnEventLoop, while syncs are fast; BeginPassSync and
// EndPassSync): once the pass's records are written it syncs them on its
// own goroutine and answers the covered puts before it reads again;
// meanwhile the flusher is not woken.
// That is Redis's order for appendfsync always: the requests that arrive
// while the answers go out are read together and covered by one sync,
// where a flusher answering one connection after another had the loop
// wake for each few senders that came back. The loop's fdatasync is the
// system call, not a ring's (parking the loop on the ring's eventfd cost
// more than it saved), nor a raw one (which would keep the runtime from
// stopping the world while a slow sync runs). One flush runs at a time
// (flushMu); a pass that finds the flusher's running leaves its puts to
// it.
type flusher struct {
	c *CommitLog

	wmu     sync.Mutex
	waiters syncWaiters

	flushMu  sync.Mutex    // held by whoever runs flushTo
	loopDone []*syncWaiter // the passes' completion batch, under flushMu
	fastRun  atomic.Int32  // fast syncs in a row (nextFastRun), under flushMu
	onLoop   atomic.Int32  // passes that will sync: kicks wait for them
	// loopSynced is when a loop's sync last ended (monoNs); the timer's
	// flush under SYNC_FLUSH is left to the loops while they sync.
	loopSynced atomic.Int64

	kickCh   chan struct{}
	reaperCh chan struct{}
	stopCh   chan struct{}
	wg       sync.WaitGroup
	failed   atomic.Bool // an fsync failed: never flush again
	lastFull time.Time
}

func newFlusher(c *CommitLog) *flusher {
	return &flusher{c: c, kickCh: make(chan struct{}, 1), reaperCh: make(chan struct{}, 1), stopCh: make(chan struct{})}
}

// kick wakes the flusher, unless a pass that will sync is under way: it
// covers the waiting puts, or wakes the flusher when it ends.
func (f *flusher) kick() {
	if f.onLoop.Load() > 0 {
		return
	}
	select {
	case f.kickCh <- struct{}{}:
	default:
	}
}

func (f *flusher) start() {
	f.lastFull = time.Now()
	f.wg.Add(2)
	go f.run()
	go f.reap()
}

// stop ends both goroutines after a final flush and answers every waiter.
func (f *flusher) stop() {
	close(f.stopCh)
	f.wg.Wait()
	if !f.failed.Load() {
		if err := f.flushToNow(f.c.visible.Load()); err != nil {
			f.fail(err)
		}
	}
	f.completeCovered(nil)
	f.failAll(ServiceNotAvailable, "store shut down before the flush covered the message")
}

// wait registers a SYNC_FLUSH completion for a record run ending at end.
func (f *flusher) wait(end int64, res PutResult, done func(PutResult)) {
	w := &syncWaiter{end: end, res: res, done: done,
		deadline: time.Now().Add(time.Duration(f.c.st.live().SyncFlushTimeout) * time.Millisecond)}
	if f.failed.Load() {
		w.complete(ServiceNotAvailable, f.c.st.readOnlyRemark())
		return
	}
	f.wmu.Lock()
	earliest := f.waiters.add(w)
	f.wmu.Unlock()
	if f.failed.Load() { // raced with a failure that drained the list
		f.failAll(ServiceNotAvailable, f.c.st.readOnlyRemark())
	}
	f.kick()
	if earliest {
		select {
		case f.reaperCh <- struct{}{}:
		default:
		}
	}
}

func (f *flusher) run() {
	defer f.wg.Done()
	sync := f.c.cfg.FlushDiskType == SyncFlush
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var done []*syncWaiter // reused: one completion batch per flush
	for {
		changed := f.c.st.liveChanged()
		interval := time.Duration(max(f.c.st.live().FlushIntervalCommitLog, 1)) * time.Millisecond
		if sync {
			interval = 10 * time.Millisecond // also flush what ASYNC-style (WAIT=false) puts left
		}
		t.Reset(interval)
		select {
		case <-f.stopCh:
			return
		case <-f.kickCh:
		case <-changed: // the flush keys may have changed
		case <-t.C:
			if sync && f.c.monoNs()-f.loopSynced.Load() < int64(interval) {
				continue // the loops' syncs cover what puts leave
			}
		}
		if f.failed.Load() {
			continue
		}
		target := f.c.visible.Load()
		if !sync && !f.hasWaiters() {
			lc := f.c.st.live()
			least := int64(lc.FlushCommitLogLeastPages) * osPageSize
			thorough := time.Since(f.lastFull) >= time.Duration(lc.FlushCommitLogThoroughInterval)*time.Millisecond
			if thorough {
				f.lastFull = time.Now()
			} else if target-f.c.flushedWhere.Load() < least {
				continue
			}
		}
		if err := f.flushToNow(target); err != nil {
			f.fail(err)
			continue
		}
		done = f.completeCovered(done)
	}
}

func (f *flusher) hasWaiters() bool {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	return f.waiters.len() > 0
}

// flushToNow is flushTo once no other flush runs.
func (f *flusher) flushToNow(target int64) error {
	f.flushMu.Lock()
	defer f.flushMu.Unlock()
	return f.flushTo(target, false)
}

// flushTo syncs the files holding [flushedWhere, target), with the
// system call itself when direct (an event loop's). flushMu is held.
func (f *flusher) flushTo(target int64, direct bool) error {
	f.c.cutMu.RLock() // a truncation waits for the flush
	defer f.c.cutMu.RUnlock()
	target = min(target, f.c.visible.Load()) // a truncation may have lowered the end
	for f.c.flushedWhere.Load() < target {
		where := f.c.flushedWhere.Load()
		mf := f.c.mfq.find(where)
		if mf == nil {
			return nil // a spill not yet in a file, or nothing to flush
		}
		start := f.c.monoNs()
		pos, err := mf.flushDirect(direct)
		took := time.Duration(f.c.monoNs() - start)
		f.c.st.stats.flush.Record(took)
		f.fastRun.Store(nextFastRun(f.fastRun.Load(), took))
		f.c.st.stats.flushes.Add(1)
		if err != nil {
			mf.release()
			return err
		}
		f.c.flushedWhere.Store(mf.from + pos)
		full := pos >= mf.size
		mf.lastStoreTs.Store(f.c.fs.Now().UnixMilli())
		mf.release()
		if !full {
			break
		}
	}
	return nil
}

// loopSyncFast is the longest sync that counts as fast; loopSyncFastRun
// fast syncs in a row (the flusher's or the loops') let event loops sync
// again after a slow one. While a loop syncs, its other connections wait
// (an event loop's watchdog gives them another goroutine after 50 ms), so
// loops sync only while syncs are short: a slow disk sends the group
// commits back to the flusher until it has been fast for a while.
const (
	loopSyncFast    = 2 * time.Millisecond
	loopSyncFastRun = 8
)

// nextFastRun is the count of fast syncs in a row after a sync that took
// took, given run before it.
func nextFastRun(run int32, took time.Duration) int32 {
	if took > loopSyncFast {
		return 0
	}
	return min(run+1, loopSyncFastRun)
}

// loopMaySync decides whether an event loop's pass makes its own group
// commit: SYNC_FLUSH with syncFlushOnEventLoop, no failed sync, and the
// last loopSyncFastRun syncs fast.
func loopMaySync(syncFlush, enabled, failed bool, fastRun int32) bool {
	return syncFlush && enabled && !failed && fastRun >= loopSyncFastRun
}

// beginLoopSync is asked when a loop's pass starts: true when the pass
// will sync at its end (flushOnLoop); the flusher is not woken meanwhile.
func (f *flusher) beginLoopSync() bool {
	cfg := f.c.cfg
	if !loopMaySync(cfg.FlushDiskType == SyncFlush, cfg.SyncFlushOnEventLoop, f.failed.Load(), f.fastRun.Load()) {
		return false
	}
	f.onLoop.Add(1)
	return true
}

// flushOnLoop is the group commit of a pass that began with beginLoopSync,
// after its records are written: every waiting put whose record is
// readable is synced and answered on the caller. When the flusher is
// syncing, or puts still wait afterwards (registered after the sync's
// target was read), the flusher is woken for them.
func (f *flusher) flushOnLoop() {
	defer func() {
		f.onLoop.Add(-1)
		if f.hasWaiters() {
			f.kick()
		}
	}()
	if !f.hasWaiters() || f.failed.Load() || !f.flushMu.TryLock() {
		return
	}
	if err := f.flushTo(f.c.visible.Load(), true); err != nil {
		f.flushMu.Unlock()
		f.fail(err)
		return
	}
	f.loopSynced.Store(f.c.monoNs())
	f.c.st.stats.loopFlushes.Add(1)
	f.loopDone = f.completeCovered(f.loopDone)
	f.flushMu.Unlock()
}

// fail turns the store read-only after a failed sync; nothing is flushed
// again (a failed range is never retried) and every waiter is answered.
func (f *flusher) fail(err error) {
	f.failed.Store(true)
	f.c.st.setReadOnly(err)
	f.failAll(ServiceNotAvailable, f.c.st.readOnlyRemark())
}

// completeCovered answers PutOK to the waiters the flushed offset covers;
// buf is scratch space, returned emptied for the next call.
func (f *flusher) completeCovered(buf []*syncWaiter) []*syncWaiter {
	flushed := f.c.flushedWhere.Load()
	f.wmu.Lock()
	done := f.waiters.covered(flushed, buf[:0])
	f.wmu.Unlock()
	for _, w := range done {
		w.complete(PutOK, "")
	}
	clear(done)
	return done[:0]
}

func (f *flusher) failAll(status PutStatus, remark string) {
	f.wmu.Lock()
	ws := f.waiters.drain(nil)
	f.wmu.Unlock()
	for _, w := range ws {
		w.complete(status, remark)
	}
}

// reap answers FLUSH_DISK_TIMEOUT to waiters past their deadline, while
// the flusher may be stuck in a slow fsync. One timer, re-armed for the
// earliest deadline left; wait signals reaperCh when a waiter's deadline
// comes before it.
func (f *flusher) reap() {
	defer f.wg.Done()
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	var expired []*syncWaiter // reused
	for {
		f.wmu.Lock()
		var next time.Time
		expired, next = f.waiters.expired(time.Now(), expired[:0])
		f.wmu.Unlock()
		for _, w := range expired {
			f.c.st.stats.flushTimeouts.Add(1)
			w.complete(FlushDiskTimeout, fmt.Sprintf("flush did not cover the message within syncFlushTimeout=%dms", f.c.st.live().SyncFlushTimeout))
		}
		clear(expired)
		if next.IsZero() {
			t.Stop()
		} else {
			t.Reset(time.Until(next))
		}
		select {
		case <-f.stopCh:
			return
		case <-f.reaperCh:
		case <-t.C:
		}
	}
}
