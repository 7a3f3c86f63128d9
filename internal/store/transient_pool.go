package store

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// transientPool is RocketMQ's TransientStorePool: transientStorePoolSize
// write buffers of one CommitLog file each. With transientStorePoolEnable
// (ASYNC_FLUSH only) the put path copies records into the current file's
// buffer, and the committer writes whole runs of pages into the file with
// pwrite; readers see only committed bytes. Buffers are locked in memory
// when the memory-lock limit allows (a failure is logged, the store runs
// unlocked). An exhausted pool answers busy; it never blocks a put.
type transientPool struct {
	mu   sync.Mutex
	free [][]byte
	size int
	n    int
}

func newTransientPool(st *DefaultMessageStore, n int, size int64) *transientPool {
	p := &transientPool{size: int(size), n: n}
	locked := 0
	for i := 0; i < n; i++ {
		b := make([]byte, size)
		if err := unix.Mlock(b); err != nil {
			if locked == 0 && i == 0 {
				st.logger.Warn("store: transient store pool buffers cannot be locked in memory; continuing unlocked",
					"buffers", n, "bytes", size, "err", err)
			}
		} else {
			locked++
		}
		p.free = append(p.free, b)
	}
	return p
}

func (p *transientPool) get() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) == 0 {
		return nil
	}
	b := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	return b
}

func (p *transientPool) available() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

func (p *transientPool) put(b []byte) {
	p.mu.Lock()
	p.free = append(p.free, b)
	p.mu.Unlock()
}

func (p *transientPool) release() {
	p.mu.Lock()
	for _, b := range p.free {
		_ = unix.Munlock(b)
	}
	p.free = nil
	p.mu.Unlock()
}

func (p *transientPool) exhaustedRemark() string {
	return fmt.Sprintf("[PC_SYNCHRONIZED] transient store pool exhausted: all %d write buffers of %d bytes hold uncommitted data (transientStorePoolSize=%d)", p.n, p.size, p.n)
}

// committer copies filled write-buffer bytes into the files
// (commitIntervalCommitLog, commitCommitLogLeastPages,
// commitCommitLogThoroughInterval) and makes them readable.
type committer struct {
	c      *CommitLog
	kickCh chan struct{}
	stopCh chan struct{}
	wg     sync.WaitGroup
	last   time.Time
	where  int64 // committed up to (absolute), committer goroutine only
}

func (cm *committer) kick() {
	select {
	case cm.kickCh <- struct{}{}:
	default:
	}
}

func (cm *committer) start() {
	cm.last = time.Now()
	cm.wg.Add(1)
	go cm.run()
}

func (cm *committer) stop() {
	close(cm.stopCh)
	cm.wg.Wait()
	cm.commit(true)
}

func (cm *committer) run() {
	defer cm.wg.Done()
	for {
		changed := cm.c.st.liveChanged()
		t := time.NewTimer(time.Duration(max(cm.c.st.live().CommitIntervalCommitLog, 1)) * time.Millisecond)
		select {
		case <-cm.stopCh:
			t.Stop()
			return
		case <-changed: // the commit keys may have changed
			t.Stop()
		case <-t.C:
		}
		thorough := time.Since(cm.last) >= time.Duration(cm.c.st.live().CommitCommitLogThoroughInterval)*time.Millisecond
		if thorough {
			cm.last = time.Now()
		}
		cm.commit(thorough)
	}
}

// commit writes [committed, filled) of the files in order.
func (cm *committer) commit(all bool) {
	c := cm.c
	least := int64(c.st.live().CommitCommitLogLeastPages) * osPageSize
	for {
		mf := c.mfq.find(cm.where)
		if mf == nil {
			return
		}
		done := cm.commitFile(mf, all, least)
		mf.release()
		if !done {
			return
		}
	}
}

// commitFile commits one file; it reports whether the file is complete
// (and the next one may be looked at).
func (cm *committer) commitFile(mf *MappedFile, all bool, least int64) bool {
	c := cm.c
	from := mf.committed.Load()
	filled := mf.filled.Load()
	if mf.spill != nil {
		return false // not in a file yet: wait for the allocator
	}
	if mf.wbuf == nil {
		// Written without a buffer (a loaded file, or an adopted spill):
		// the bytes are in the file already.
		if filled > from {
			mf.committed.Store(filled)
			c.visible.Store(mf.from + filled)
			c.kickDispatch()
			c.flusher.kick()
		}
		cm.where = mf.from + filled
		return filled >= mf.size
	}
	full := filled >= mf.size
	if filled > from && (all || full || filled/osPageSize-from/osPageSize >= least/osPageSize) {
		if _, err := mf.f.WriteAt(mf.wbuf[from:filled], from); err != nil {
			c.writeFailed.Store(true)
			c.st.setReadOnly(fmt.Errorf("commit %s [%d, %d): %w", mf.path, from, filled, err))
			return false
		}
		mf.committed.Store(filled)
		c.visible.Store(mf.from + filled)
		cm.where = mf.from + filled
		c.kickDispatch()
		c.flusher.kick()
	}
	if full && mf.committed.Load() >= mf.size {
		c.pool.put(mf.wbuf)
		mf.wbuf = nil
		cm.where = mf.from + mf.size
		return true
	}
	return false
}
