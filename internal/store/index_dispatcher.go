package store

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/spoolmq/spool/internal/store/index"
	"github.com/spoolmq/spool/message"
)

// indexBudget bounds how many CommitLog bytes one index pass reads before
// yielding (design rule 6: a catch-up scan must not monopolise the disk).
const indexBudget = 4 << 20

// indexGather is how long a woken index dispatcher waits for more records
// before reading, unless indexGatherLag bytes are waiting already.
const (
	indexGather    = 10 * time.Millisecond
	indexGatherLag = 1 << 20
)

// indexDispatcher feeds the index service from its own cursor, so
// consume-queue dispatch never waits for the index.
type indexDispatcher struct {
	st     *DefaultMessageStore
	svc    *index.Service
	cursor atomic.Int64
	kickCh chan struct{}
	idle   atomic.Bool // parked: the next notify wakes it
	stopCh chan struct{}
	wg     sync.WaitGroup
	buf    []byte
	keys   []string // index's split KEYS, reused
	err    atomic.Pointer[string]
	parks  atomic.Int64 // times the run loop blocked, parked or gathering (benchmarks)
}

// kick wakes the index dispatcher unconditionally (tests, shutdown).
func (x *indexDispatcher) kick() {
	select {
	case x.kickCh <- struct{}{}:
	default:
	}
}

// notify tells the index dispatcher that records were dispatched. It costs
// an atomic load unless the index dispatcher is parked; a parked one is
// woken once and then gathers for indexGather before it reads, so a stream
// of small puts wakes it at most once per indexGather rather than once per
// put.
func (x *indexDispatcher) notify() {
	if x.idle.Load() && x.idle.CompareAndSwap(true, false) {
		x.kick()
	}
}

func (x *indexDispatcher) start() {
	x.wg.Add(1)
	go x.run()
}

func (x *indexDispatcher) stop() {
	close(x.stopCh)
	x.wg.Wait()
	_ = x.pass(1 << 62)
}

func (x *indexDispatcher) run() {
	defer x.wg.Done()
	c := x.st.commitLog
	t := time.NewTimer(time.Second)
	defer t.Stop()
	seen := int64(-1) // the readable end when the last pass began
	for {
		// Park unless the readable end moved since the last pass began
		// (re-checked after raising the flag, so a notify in between is
		// not lost).
		x.idle.Store(true)
		if !(c.dispatchEnd() != seen && x.idle.CompareAndSwap(true, false)) {
			x.parks.Add(1)
			t.Reset(time.Second)
			select {
			case <-x.stopCh:
				return
			case <-x.kickCh:
			case <-t.C:
			}
			x.idle.Store(false)
		}
		// The index is derived data: let a small lag grow into a batch.
		if lag := c.dispatchEnd() - x.cursor.Load(); lag > 0 && lag < indexGatherLag {
			x.parks.Add(1)
			t.Reset(indexGather)
			select {
			case <-x.stopCh:
				return
			case <-t.C:
			}
		}
		seen = c.dispatchEnd()
		for {
			before := x.cursor.Load()
			more := x.pass(indexBudget)
			if x.cursor.Load() != before && x.err.Load() != nil {
				x.err.Store(nil)
				x.st.noSpace.clear(x.st, condIndex)
				x.st.logger.Info("store: index building resumed", "cursor", x.cursor.Load())
			}
			x.st.stats.indexLag.Record(time.Duration(x.svc.IndexLagBytes(c.maxOffset())) * time.Microsecond)
			if !more {
				break
			}
			t.Reset(time.Millisecond) // yield between budgets
			select {
			case <-x.stopCh:
				return
			case <-t.C:
			}
		}
	}
}

// pass indexes up to budget bytes; it reports whether more is readable.
func (x *indexDispatcher) pass(budget int64) bool {
	c := x.st.commitLog
	c.cutMu.RLock() // a truncation waits for the pass
	defer c.cutMu.RUnlock()
	var done int64
	for done < budget {
		from := x.cursor.Load()
		end := c.dispatchEnd()
		if from >= end {
			return false
		}
		mf := c.mfq.find(from)
		if mf == nil {
			if min := c.minOffset(); from < min {
				x.cursor.Store(min)
				continue
			}
			return false
		}
		fileEnd := mf.from + mf.size
		lim := min(end, fileEnd, from+int64(max(1<<20, cap(x.buf))))
		if cap(x.buf) < int(lim-from) {
			x.buf = make([]byte, lim-from)
		}
		buf := x.buf[:lim-from]
		err := mf.readAt(buf, from-mf.from)
		mf.release()
		if err != nil {
			x.fail(err)
			return false
		}
		p := 0
		next := from
		for p+blankSize <= len(buf) {
			sz, magic := message.PeekRecord(buf[p:])
			size := int(sz)
			if magic == message.BlankMagicCode {
				next = fileEnd
				break
			}
			if size <= 0 || p+size > len(buf) {
				if size > len(buf) && p == 0 {
					x.buf = make([]byte, size)
				}
				break
			}
			if err := x.index(buf[p:p+size], from+int64(p)); err != nil {
				x.fail(err)
				return false
			}
			p += size
			next = from + int64(p)
		}
		if next == from {
			// A record larger than the chunk: read it whole next time.
			if mf := c.mfq.find(from); mf != nil {
				var hdr [message.RecordPrefixLen]byte
				if mf.readAt(hdr[:], from-mf.from) == nil {
					if sz, _ := message.PeekRecord(hdr[:]); int(sz) > cap(x.buf) && int(sz) <= int(c.cfg.MappedFileSizeCommitLog) {
						x.buf = make([]byte, sz)
					}
				}
				mf.release()
			}
			if lim-from >= int64(cap(x.buf)) {
				return true
			}
			return false
		}
		x.cursor.Store(next)
		x.svc.Dispatched(next)
		done += next - from
	}
	return true
}

func (x *indexDispatcher) index(rec []byte, phy int64) error {
	v, err := message.ViewRecord(rec)
	if err != nil {
		return fmt.Errorf("%w: record at %d: %w", ErrCorrupt, phy, err)
	}
	if message.TransactionValue(v.SysFlag()) == message.TransactionRollbackType {
		return nil
	}
	u, k := message.PropertyPairBytes(v.Properties(), message.PropertyUniqClientMessageIDKeyIdx, message.PropertyKeys)
	if len(u) == 0 && len(k) == 0 {
		return nil
	}
	// The strings alias rec: Put only hashes them and keeps none.
	keys := index.AppendKeys(x.keys[:0], bytesString(k))
	x.keys = keys[:0]
	return x.svc.Put(bytesString(v.Topic()), keys, bytesString(u), phy, v.StoreTimestamp())
}

// bytesString is b as a string without a copy; b must not change while
// the string is in use.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func (x *indexDispatcher) fail(err error) {
	if isNoSpace(err) {
		// Retried at the next pass (at most a second away); puts are
		// refused meanwhile.
		x.st.noSpace.set(x.st, condIndex, err)
	}
	msg := err.Error()
	if p := x.err.Load(); p == nil || *p != msg {
		x.err.Store(&msg)
		x.st.logger.Error("store: index building stopped", "cursor", x.cursor.Load(), "err", err)
	}
}

// queryIndex answers QueryMessage from the index, checking each record
// (the index can return hash collisions).
func (st *DefaultMessageStore) queryIndex(topic, key string, maxNum int, begin, end int64) (*QueryResult, error) {
	if st.index == nil {
		return nil, fmt.Errorf("QueryMessage: messageIndexEnable=false: %w", ErrNotBuilt)
	}
	maxNum = min(max(maxNum, 1), 64) // RocketMQ's maxMsgsNumBatch
	r, err := st.index.svc.Query(topic, key, maxNum, begin, end)
	out := &QueryResult{IndexLastUpdateTimestamp: r.LastUpdateTimestamp, IndexLastUpdatePhyoffset: r.LastUpdatePhyOffset}
	for _, phy := range r.PhyOffsets {
		rec, rerr := st.commitLog.recordAt(phy)
		if rerr != nil {
			continue // deleted since, or not a record any more
		}
		v, perr := message.ViewRecord(rec)
		if perr != nil || string(v.Topic()) != topic {
			continue
		}
		match := false
		if u, _ := v.Property(message.PropertyUniqClientMessageIDKeyIdx); string(u) == key {
			match = true
		}
		if k, ok := v.Property(message.PropertyKeys); ok && !match {
			for _, kk := range strings.Split(string(k), " ") {
				if kk == key {
					match = true
					break
				}
			}
		}
		if match {
			out.Records = append(out.Records, rec)
		}
	}
	if err != nil && len(out.Records) == 0 {
		return out, fmt.Errorf("store: index query: %w", err)
	}
	return out, nil
}
