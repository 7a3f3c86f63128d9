package broker

import (
	"cmp"
	"slices"
	"strconv"
	"sync"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
)

// pendingHalf is what the check service needs to know about an unresolved
// half message without reading it.
type pendingHalf struct {
	queueOffset int64 // offset in RMQ_SYS_TRANS_HALF_TOPIC queue 0
	phy         int64 // CommitLog offset of the half record
	size        int32 // record size
	born        int64 // bornTimestamp (client clock), ms
	stored      int64 // storeTimestamp, ms
	immunityMs  int64 // CHECK_IMMUNITY_TIME_IN_SECONDS in ms, 0 = transactionTimeOut
	checks      int32 // checks sent so far (persisted as op records tagged "c")
	group       string
	// opMark is a lower bound of the op-queue offset of any op record
	// that refers to this half (the op queue's end when it was stored).
	opMark int64
}

// halfPut is a half message being stored: the lower bounds its queue
// offset (and the op records referring to it) will have.
type halfPut struct{ halfLow, opLow int64 }

// transactionIndex is the in-memory table of unresolved half messages,
// keyed by half-queue offset. Entries come from the put path (a half is
// indexed before its send is answered) and, after a restart, from the
// budgeted rebuild; END_TRANSACTION and give-ups remove them. Choosing
// what to check reads nothing.
type transactionIndex struct {
	mu      sync.Mutex
	pending map[int64]*pendingHalf
	puts    map[uint64]halfPut
	nextPut uint64
	ops     map[uint64]int64 // op records being stored -> lower bound of their op offset
	// recent holds the op marks of halves resolved while some half put was
	// in flight: such a half may lie at or above the rebuild's half start
	// while its op record lies below the op start computed without it.
	recent  map[int64]int64
	version uint64 // bumped by every change, for the snapshot writer
	seenEnd int64  // one past the highest half offset indexed or scanned
	groups  map[string]string
	// While rebuilding, halves resolved before the rebuild reached them
	// are remembered so the rebuild does not index them.
	rebuilding bool
	tombstones map[int64]struct{}
}

func newTransactionIndex() *transactionIndex {
	return &transactionIndex{
		pending:    make(map[int64]*pendingHalf),
		puts:       make(map[uint64]halfPut),
		ops:        make(map[uint64]int64),
		recent:     make(map[int64]int64),
		groups:     make(map[string]string),
		tombstones: make(map[int64]struct{}),
		rebuilding: true,
	}
}

// internLocked shares group name strings between entries.
func (x *transactionIndex) internLocked(g string) string {
	if s, ok := x.groups[g]; ok {
		return s
	}
	x.groups[g] = g
	return g
}

// beginPut registers a half message about to be stored.
func (x *transactionIndex) beginPut(halfLow, opLow int64) uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.nextPut++
	// Every half stored before this put began has a lower offset.
	x.puts[x.nextPut] = halfPut{halfLow: max(halfLow, x.seenEnd), opLow: opLow}
	return x.nextPut
}

// beginOp registers an op record about to be stored; opLow is the op
// queue's end before it.
func (x *transactionIndex) beginOp(opLow int64) uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.nextPut++
	x.ops[x.nextPut] = opLow
	return x.nextPut
}

// endOp finishes an op record started with beginOp, after its effect on
// the index has been applied.
func (x *transactionIndex) endOp(id uint64) {
	x.mu.Lock()
	delete(x.ops, id)
	x.mu.Unlock()
}

// endPut finishes a put started with beginPut; h is nil when it failed.
func (x *transactionIndex) endPut(id uint64, h *pendingHalf) {
	x.mu.Lock()
	defer x.mu.Unlock()
	p := x.puts[id]
	delete(x.puts, id)
	if h == nil {
		return
	}
	h.opMark = p.opLow
	x.addLocked(h)
}

// add indexes a half found by the rebuild, unless it was resolved already.
func (x *transactionIndex) add(h *pendingHalf) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.tombstones[h.queueOffset]; ok {
		return
	}
	if _, ok := x.pending[h.queueOffset]; ok {
		return
	}
	x.addLocked(h)
}

func (x *transactionIndex) addLocked(h *pendingHalf) {
	x.version++
	h.group = x.internLocked(h.group)
	x.pending[h.queueOffset] = h
	x.seenEnd = max(x.seenEnd, h.queueOffset+1)
}

// resolve removes a half; it reports whether it was pending.
func (x *transactionIndex) resolve(queueOffset int64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.rebuilding {
		// The rebuild may still find the half in the queue.
		x.tombstones[queueOffset] = struct{}{}
	}
	if h, ok := x.pending[queueOffset]; ok {
		delete(x.pending, queueOffset)
		if len(x.puts) > 0 {
			x.recent[queueOffset] = h.opMark
		}
		x.version++
		return true
	}
	return false
}

// get returns a copy of a pending entry.
func (x *transactionIndex) get(queueOffset int64) (pendingHalf, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	h, ok := x.pending[queueOffset]
	if !ok {
		return pendingHalf{}, false
	}
	return *h, true
}

// addCheck counts one more check of a pending half and returns the new
// count (0 when the half is not pending).
func (x *transactionIndex) addCheck(queueOffset int64) int32 {
	x.mu.Lock()
	defer x.mu.Unlock()
	h, ok := x.pending[queueOffset]
	if !ok {
		return 0
	}
	h.checks++
	x.version++
	return h.checks
}

// raiseChecks sets a pending half's count to at least n (replaying "c" op
// records, which carry the count reached, is idempotent).
func (x *transactionIndex) raiseChecks(queueOffset int64, n int32) {
	x.mu.Lock()
	if h, ok := x.pending[queueOffset]; ok && n > h.checks {
		h.checks = n
		x.version++
	}
	x.mu.Unlock()
}

// len is the number of pending halves.
func (x *transactionIndex) len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.pending)
}

// candidates returns copies of the halves old enough to check at nowMs,
// in half-queue order: age since born >= max(transactionTimeOut, the
// message's immunity time).
func (x *transactionIndex) candidates(nowMs, timeoutMs int64) []pendingHalf {
	x.mu.Lock()
	out := make([]pendingHalf, 0, len(x.pending))
	for _, h := range x.pending {
		if nowMs-h.born >= max(timeoutMs, h.immunityMs) {
			out = append(out, *h)
		}
	}
	x.mu.Unlock()
	slices.SortFunc(out, func(a, b pendingHalf) int { return cmp.Compare(a.queueOffset, b.queueOffset) })
	return out
}

// finishRebuild ends the rebuild: resolutions no longer need tombstones.
func (x *transactionIndex) finishRebuild(halfEnd int64) {
	x.mu.Lock()
	x.rebuilding = false
	clear(x.tombstones)
	x.seenEnd = max(x.seenEnd, halfEnd)
	x.mu.Unlock()
}

// isRebuilding reports whether the rebuild is still running.
func (x *transactionIndex) isRebuilding() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.rebuilding
}

// startsLocked computes where a rebuild must start reading: halves at or
// after half may be missing from the index, and op records at or after op
// may not be reflected in it, nor may any op record that refers to a half
// at or after half lie below op. opEnd is the op queue's current end.
// With pending, the pending halves count as missing too (a rebuild without
// a snapshot reads them again, with their op records).
func (x *transactionIndex) startsLocked(opEnd int64, pending bool) (half, op int64) {
	half, op = x.seenEnd, opEnd
	for _, p := range x.puts {
		half = min(half, p.halfLow)
		op = min(op, p.opLow)
	}
	if pending {
		for q, h := range x.pending {
			half = min(half, q)
			op = min(op, h.opMark)
		}
	}
	for _, low := range x.ops {
		op = min(op, low)
	}
	for q, mark := range x.recent {
		if q < half {
			delete(x.recent, q)
			continue
		}
		op = min(op, mark)
	}
	return half, op
}

// floors returns the offsets a rebuild that has nothing but the half and
// op queues must start from: every half below half is resolved.
func (x *transactionIndex) floors(opEnd int64) (half, op int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.startsLocked(opEnd, true)
}

// snapshot copies the pending halves with the offsets a rebuild must scan
// from so that, applied to the copy, it yields the current state (op
// records are idempotent, so replaying one already reflected changes
// nothing). ok is false while rebuilding.
func (x *transactionIndex) snapshot(opEnd int64) (hs []pendingHalf, halfFrom, opFrom int64, version uint64, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.rebuilding {
		return nil, 0, 0, 0, false
	}
	halfFrom, opFrom = x.startsLocked(opEnd, false)
	hs = make([]pendingHalf, 0, len(x.pending))
	for _, h := range x.pending {
		hs = append(hs, *h)
	}
	return hs, halfFrom, opFrom, x.version, true
}

// starts returns the start offsets a snapshot taken now would have.
func (x *transactionIndex) starts(opEnd int64) (half, op int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.startsLocked(opEnd, false)
}

// changedSince reports whether the index changed after version v.
func (x *transactionIndex) changedSince(v uint64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.version != v
}

// pendingFromRecord builds an index entry from a decoded half record.
func pendingFromRecord(x *message.Ext, opMark int64) *pendingHalf {
	return &pendingHalf{
		queueOffset: x.QueueOffset,
		phy:         x.PhysicalOffset,
		size:        x.TotalSize,
		born:        x.BornTimestamp,
		stored:      x.StoreTimestamp,
		immunityMs:  immunityMillis(x.Properties),
		checks:      int32(atoiOr(x.Properties[message.PropertyTransactionCheckTimes], 0)),
		group:       x.Properties[message.PropertyProducerGroup],
		opMark:      opMark,
	}
}

// pendingFromPut builds an index entry for a half message just stored.
func pendingFromPut(m *message.Inner, r store.PutResult) *pendingHalf {
	return &pendingHalf{
		queueOffset: r.QueueOffset,
		phy:         r.WroteOffset,
		size:        r.WroteBytes,
		born:        m.BornTimestamp,
		stored:      r.StoreTimestamp,
		immunityMs:  immunityMillis(m.Properties),
		checks:      int32(atoiOr(m.Properties[message.PropertyTransactionCheckTimes], 0)),
		group:       m.Properties[message.PropertyProducerGroup],
	}
}

// immunityMillis reads CHECK_IMMUNITY_TIME_IN_SECONDS (0 when absent).
func immunityMillis(p map[string]string) int64 {
	v, err := strconv.ParseInt(p[message.PropertyCheckImmunityTimeInSeconds], 10, 64)
	if err != nil || v <= 0 {
		return 0
	}
	return v * 1000
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}
