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
	seenEnd int64 // one past the highest half offset indexed or scanned
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
	x.puts[x.nextPut] = halfPut{halfLow: halfLow, opLow: opLow}
	return x.nextPut
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
	h.group = x.internLocked(h.group)
	x.pending[h.queueOffset] = h
	x.seenEnd = max(x.seenEnd, h.queueOffset+1)
}

// resolve removes a half; it reports whether it was pending.
func (x *transactionIndex) resolve(queueOffset int64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.pending[queueOffset]; ok {
		delete(x.pending, queueOffset)
		return true
	}
	if x.rebuilding {
		x.tombstones[queueOffset] = struct{}{}
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

// addCheck counts one check of a pending half (n of them while
// rebuilding from "c" op records).
func (x *transactionIndex) addCheck(queueOffset int64, n int32) {
	x.mu.Lock()
	if h, ok := x.pending[queueOffset]; ok {
		h.checks += n
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

// floors returns the half-queue offset below which every half is
// resolved, and the op-queue offset below which no op record refers to a
// half at or above that floor; opEnd is the op queue's current end.
func (x *transactionIndex) floors(opEnd int64) (half, op int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	half, op = x.seenEnd, opEnd
	for _, h := range x.pending {
		half = min(half, h.queueOffset)
		op = min(op, h.opMark)
	}
	for _, p := range x.puts {
		half = min(half, p.halfLow)
		op = min(op, p.opLow)
	}
	return half, op
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
