package datapath

import (
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// fastFailureInterval is how often the send queue is checked against a busy
// page cache (RocketMQ's BrokerFastFailure runs every 10 ms).
const fastFailureInterval = 10 * time.Millisecond

// maxColdHold bounds how long a pull over the cold-read budget is held
// before it is answered (well under every client's pull timeout).
const maxColdHold = time.Second

// putLockAger is what a store exposes when it can tell how long its put
// lock has been held (DefaultMessageStore.PutLockHeldFor).
type putLockAger interface {
	PutLockHeldFor() time.Duration
}

// transientPool is what a store exposes when it has a transient store
// pool (RocketMQ's remainTransientStoreBufferNumbs).
type transientPool interface {
	RemainTransientStoreBufferNumbs() int
}

// Flow is the broker's admission and fast-failure policy on top of
// the transport's bounds (executor queues, per-connection in-flight cap,
// queued-body budget):
//
//   - send admission ([REJECTREQUEST]): refused before queueing while the
//     put lock has been held longer than osPageCacheBusyTimeOutMills or the
//     transient store pool has no buffer left;
//   - fast failure ([PCBUSY_CLEAN_QUEUE]): while the page cache is busy the
//     send queue is answered at once instead of waiting behind the lock;
//   - the cold-read budget: pulls of data outside the store's in-memory
//     window share coldReadBytesPerSecond.
//
// It counts every busy answer it gives, by kind.
type Flow struct {
	d          *Path
	lockAge    func() time.Duration // nil: the store does not tell
	pool       func() int           // nil: no transient store pool
	coldTake   func(rate int64) (allow int64, wait time.Duration)
	coldCharge func(n int64)

	RejectPageCache atomic.Int64 // [REJECTREQUEST] put lock held too long
	RejectPool      atomic.Int64 // [REJECTREQUEST] transient pool exhausted
	PCSynchronized  atomic.Int64 // [PC_SYNCHRONIZED] answers to sends
	PCBusyCleaned   atomic.Int64 // [PCBUSY_CLEAN_QUEUE] answers
	ColdHeld        atomic.Int64 // pulls held for the cold-read budget
	ColdRetried     atomic.Int64 // held pulls answered PULL_RETRY_IMMEDIATELY
	ColdLimited     atomic.Int64 // cold pulls served with a reduced byte limit
	ColdBytes       atomic.Int64 // bytes served by cold pulls
	// PullsHandedOff counts pulls an event loop gave to the pull workers
	// because they would have waited for the disk.
	PullsHandedOff atomic.Int64
}

func newFlow(d *Path, take func(int64) (int64, time.Duration), charge func(int64)) *Flow {
	f := &Flow{d: d, coldTake: take, coldCharge: charge}
	if a, ok := d.store.(putLockAger); ok {
		f.lockAge = a.PutLockHeldFor
	}
	if p, ok := d.store.(transientPool); ok {
		f.pool = p.RemainTransientStoreBufferNumbs
	}
	return f
}

// PageCacheBusy returns the put lock's current hold and whether it exceeds
// osPageCacheBusyTimeOutMills (RocketMQ's isOSPageCacheBusy).
func (f *Flow) PageCacheBusy() (held, limit time.Duration, busy bool) {
	limit = millis(f.d.config().OSPageCacheBusyTimeOutMills)
	if f.lockAge == nil {
		return 0, limit, false
	}
	held = f.lockAge()
	return held, limit, held > limit
}

// RemainTransientStoreBufferNumbs is RocketMQ's figure: the pool's free
// buffers, or MaxInt32 when there is no pool.
func (f *Flow) RemainTransientStoreBufferNumbs() int {
	if f.pool == nil {
		return math.MaxInt32
	}
	return f.pool()
}

// RejectSend is the send executor's admission check, run on the
// connection's reader before the request is queued.
func (f *Flow) RejectSend(_ *remoting.Command) string {
	if held, limit, busy := f.PageCacheBusy(); busy {
		f.RejectPageCache.Add(1)
		return fmt.Sprintf("[REJECTREQUEST]system busy, start flow control for a while, put lock held: %dms, limit osPageCacheBusyTimeOutMills: %dms",
			held.Milliseconds(), limit.Milliseconds())
	}
	if f.pool != nil {
		if left := f.pool(); left <= 0 {
			f.RejectPool.Add(1)
			return fmt.Sprintf("[REJECTREQUEST]system busy, start flow control for a while, transient store pool buffers left: %d, transientStorePoolSize: %d",
				left, f.d.config().TransientStorePoolSize)
		}
	}
	return ""
}

// CleanBusyQueue is one fast-failure pass: while the page cache is busy,
// every queued send is answered [PCBUSY_CLEAN_QUEUE] at once.
func (f *Flow) CleanBusyQueue() int {
	if !f.d.config().BrokerFastFailureEnable || f.d.sendEx == nil || f.d.sendEx.QueueLen() == 0 {
		return 0
	}
	held, limit, busy := f.PageCacheBusy()
	if !busy {
		return 0
	}
	n := f.d.sendEx.Drain(func(wait time.Duration, left int) string {
		return fmt.Sprintf("[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: %dms, size of queue: %d, put lock held: %dms, limit osPageCacheBusyTimeOutMills: %dms",
			wait.Milliseconds(), left, held.Milliseconds(), limit.Milliseconds())
	})
	f.PCBusyCleaned.Add(int64(n))
	return n
}

// Run is the fast-failure loop, until stop closes.
func (f *Flow) Run(stop <-chan struct{}) {
	if f.lockAge == nil {
		return
	}
	t := time.NewTicker(fastFailureInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			f.CleanBusyQueue()
		}
	}
}

// coldDecision is how a pull goes under the cold-read budget.
type coldDecision struct {
	maxBytes int32         // the byte limit to read with
	checked  bool          // coldness was checked before the read
	cold     bool          // checked and cold: charge what is read
	wait     time.Duration // > 0: the budget is spent, hold the pull
	// handOff: on an event loop, the check would read the consume queue;
	// the pull goes to the workers, nothing decided.
	handOff bool
}

// coldRead decides a pull's byte limit under the cold-read budget. A pull
// is cold when its offset is below the queue's end and outside the store's
// in-memory window (CheckInMemByConsumeOffset). While the bucket holds more
// than a cold read can return (maxTransferBytesOnMessageInDisk) the check
// is skipped and the read is charged afterwards if the store reports it
// went behind memory; below that the pull is checked first and, when cold,
// read with what the bucket holds, or held when it holds nothing. A pull
// on an event loop (onLoop) that would need the check (a read of its
// consume-queue entry) is decided nothing and told handOff.
func (f *Flow) coldRead(h *pullHeader, onLoop bool) coldDecision {
	d := coldDecision{maxBytes: h.maxMsgBytes}
	rate := f.d.config().ColdReadBytesPerSecond
	if rate <= 0 {
		d.checked = true
		return d
	}
	allow, wait := f.coldTake(rate)
	if wait == 0 && allow >= int64(f.d.config().MaxTransferBytesOnMessageInDisk) {
		return d
	}
	st := f.d.store
	if h.queueOffset >= st.MaxOffsetInQueue(h.topic, h.queueID) {
		d.checked = true
		return d
	}
	if onLoop {
		return coldDecision{handOff: true}
	}
	d.checked = true
	if st.CheckInMemByConsumeOffset(h.topic, h.queueID, h.queueOffset) {
		return d
	}
	d.cold = true
	if wait > 0 {
		d.wait = min(wait, maxColdHold)
		return d
	}
	if allow < int64(h.maxMsgBytes) {
		f.ColdLimited.Add(1)
		d.maxBytes = int32(max(allow, 1))
	}
	return d
}

// afterColdRead charges the bytes a cold pull read.
func (f *Flow) afterColdRead(d coldDecision, res *store.GetResult) {
	if d.cold || !d.checked && res.SuggestPullingFromSlave {
		f.coldCharge(int64(res.BufferTotalSize))
		f.ColdBytes.Add(int64(res.BufferTotalSize))
	}
}

// holdColdPull answers a pull over the cold-read budget after wait, read
// on the broker's clock (no worker waits): the pull then runs again through its pull
// executor, without permission to be held again (an empty
// PULL_RETRY_IMMEDIATELY answer if the budget is still spent). A pull
// whose connection closed meanwhile is not run: the transport released it.
func (d *Path) holdColdPull(r *transport.Responder, h *pullHeader, wait time.Duration) {
	d.flow.ColdHeld.Add(1)
	after := d.clock.After(wait)
	go func() {
		<-after
		select {
		case <-r.Conn().Closed():
			return
		default:
		}
		d.resumePull(r, h)
	}()
}

// coldRetryResponse answers a re-run pull that still finds the budget
// spent: no messages, same offset, come back at once (the client's next
// pull is held again, which paces it).
func (d *Path) coldRetryResponse(req *remoting.Command, h *pullHeader) *remoting.Command {
	d.flow.ColdRetried.Add(1)
	resp := remoting.NewResponse(req, remoting.PullRetryImmediately, fmt.Sprintf(
		"cold-read budget spent, coldReadBytesPerSecond: %d", d.config().ColdReadBytesPerSecond))
	resp = d.withPullExt(h, resp)
	// The pull was found outside the in-memory window: suggest as for a
	// read behind memory (a slave, with slaveReadEnable).
	resp.SetExt("suggestWhichBrokerId", strconv.FormatInt(d.suggestion(h, d.groups.Find(h.consumerGroup), &store.GetResult{SuggestPullingFromSlave: true}), 10))
	return resp
}
