package transaction

import (
	"cmp"
	"slices"
	"strconv"
	"sync"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
)

// PendingHalf is what the check service needs to know about an unresolved
// half message without reading it.
type PendingHalf struct {
	QueueOffset int64 // offset in RMQ_SYS_TRANS_HALF_TOPIC queue 0
	Phy         int64 // CommitLog offset of the half record
	Size        int32 // record size
	Born        int64 // bornTimestamp (client clock), ms
	stored      int64 // storeTimestamp, ms
	ImmunityMs  int64 // CHECK_IMMUNITY_TIME_IN_SECONDS in ms, 0 = transactionTimeOut
	Checks      int32 // checks sent so far (persisted as op records tagged "c")
	Group       string
	Topic       string // the real topic (REAL_TOPIC), "" when unknown
	// opMark is a lower bound of the op-queue offset of any op record
	// that refers to this half (the op queue's end when it was stored).
	OpMark int64
}

// halfPut is a half message being stored: the lower bounds its queue
// offset (and the op records referring to it) will have.
type halfPut struct{ halfLow, opLow int64 }

// Index is the in-memory table of unresolved half messages,
// keyed by half-queue offset. Entries come from the put path (a half is
// indexed before its send is answered) and, after a restart, from the
// budgeted rebuild; END_TRANSACTION and give-ups remove them. Choosing
// what to check reads nothing.
type Index struct {
	mu      sync.Mutex
	pending map[int64]*PendingHalf
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

func NewIndex() *Index {
	return &Index{
		pending:    make(map[int64]*PendingHalf),
		puts:       make(map[uint64]halfPut),
		ops:        make(map[uint64]int64),
		recent:     make(map[int64]int64),
		groups:     make(map[string]string),
		tombstones: make(map[int64]struct{}),
		rebuilding: true,
	}
}

// internLocked shares group and topic name strings between entries.
func (x *Index) internLocked(g string) string {
	if s, ok := x.groups[g]; ok {
		return s
	}
	x.groups[g] = g
	return g
}

// BeginPut registers a half message about to be stored.
func (x *Index) BeginPut(halfLow, opLow int64) uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.nextPut++
	// Every half stored before this put began has a lower offset.
	x.puts[x.nextPut] = halfPut{halfLow: max(halfLow, x.seenEnd), opLow: opLow}
	return x.nextPut
}

// BeginOp registers an op record about to be stored; opLow is the op
// queue's end before it.
func (x *Index) BeginOp(opLow int64) uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.nextPut++
	x.ops[x.nextPut] = opLow
	return x.nextPut
}

// EndOp finishes an op record started with beginOp, after its effect on
// the index has been applied.
func (x *Index) EndOp(id uint64) {
	x.mu.Lock()
	delete(x.ops, id)
	x.mu.Unlock()
}

// EndPut finishes a put started with beginPut; h is nil when it failed.
func (x *Index) EndPut(id uint64, h *PendingHalf) {
	x.mu.Lock()
	defer x.mu.Unlock()
	p := x.puts[id]
	delete(x.puts, id)
	if h == nil {
		return
	}
	h.OpMark = p.opLow
	x.addLocked(h)
}

// Add indexes a half found by the rebuild, unless it was resolved already.
func (x *Index) Add(h *PendingHalf) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.tombstones[h.QueueOffset]; ok {
		return
	}
	if _, ok := x.pending[h.QueueOffset]; ok {
		return
	}
	x.addLocked(h)
}

func (x *Index) addLocked(h *PendingHalf) {
	x.version++
	h.Group = x.internLocked(h.Group)
	h.Topic = x.internLocked(h.Topic)
	x.pending[h.QueueOffset] = h
	x.seenEnd = max(x.seenEnd, h.QueueOffset+1)
}

// Resolve removes a half; it reports whether it was pending.
func (x *Index) Resolve(queueOffset int64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.rebuilding {
		// The rebuild may still find the half in the queue.
		x.tombstones[queueOffset] = struct{}{}
	}
	if h, ok := x.pending[queueOffset]; ok {
		delete(x.pending, queueOffset)
		if len(x.puts) > 0 {
			x.recent[queueOffset] = h.OpMark
		}
		x.version++
		return true
	}
	return false
}

// Get returns a copy of a pending entry.
func (x *Index) Get(queueOffset int64) (PendingHalf, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	h, ok := x.pending[queueOffset]
	if !ok {
		return PendingHalf{}, false
	}
	return *h, true
}

// AddCheck counts one more check of a pending half and returns the new
// count (0 when the half is not pending).
func (x *Index) AddCheck(queueOffset int64) int32 {
	x.mu.Lock()
	defer x.mu.Unlock()
	h, ok := x.pending[queueOffset]
	if !ok {
		return 0
	}
	h.Checks++
	x.version++
	return h.Checks
}

// RaiseChecks sets a pending half's count to at least n (replaying "c" op
// records, which carry the count reached, is idempotent).
func (x *Index) RaiseChecks(queueOffset int64, n int32) {
	x.mu.Lock()
	if h, ok := x.pending[queueOffset]; ok && n > h.Checks {
		h.Checks = n
		x.version++
	}
	x.mu.Unlock()
}

// Len is the number of pending halves.
func (x *Index) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.pending)
}

// HalvesByTopic counts the pending halves by real topic (a half whose
// topic is unknown is left out).
func (x *Index) HalvesByTopic() map[string]int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := map[string]int64{}
	for _, h := range x.pending {
		if h.Topic != "" {
			out[h.Topic]++
		}
	}
	return out
}

// Candidates returns copies of the halves old enough to check at nowMs,
// in half-queue order: age since born >= max(transactionTimeOut, the
// message's immunity time).
func (x *Index) Candidates(nowMs, timeoutMs int64) []PendingHalf {
	x.mu.Lock()
	out := make([]PendingHalf, 0, len(x.pending))
	for _, h := range x.pending {
		if nowMs-h.Born >= max(timeoutMs, h.ImmunityMs) {
			out = append(out, *h)
		}
	}
	x.mu.Unlock()
	slices.SortFunc(out, func(a, b PendingHalf) int { return cmp.Compare(a.QueueOffset, b.QueueOffset) })
	return out
}

// FinishRebuild ends the rebuild: resolutions no longer need tombstones.
func (x *Index) FinishRebuild(halfEnd int64) {
	x.mu.Lock()
	x.rebuilding = false
	clear(x.tombstones)
	x.seenEnd = max(x.seenEnd, halfEnd)
	x.mu.Unlock()
}

// IsRebuilding reports whether the rebuild is still running.
func (x *Index) IsRebuilding() bool {
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
func (x *Index) startsLocked(opEnd int64, pending bool) (half, op int64) {
	half, op = x.seenEnd, opEnd
	for _, p := range x.puts {
		half = min(half, p.halfLow)
		op = min(op, p.opLow)
	}
	if pending {
		for q, h := range x.pending {
			half = min(half, q)
			op = min(op, h.OpMark)
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

// Floors returns the offsets a rebuild that has nothing but the half and
// op queues must start from: every half below half is resolved.
func (x *Index) Floors(opEnd int64) (half, op int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.startsLocked(opEnd, true)
}

// Snapshot copies the pending halves with the offsets a rebuild must scan
// from so that, applied to the copy, it yields the current state (op
// records are idempotent, so replaying one already reflected changes
// nothing). ok is false while rebuilding.
func (x *Index) Snapshot(opEnd int64) (hs []PendingHalf, halfFrom, opFrom int64, version uint64, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.rebuilding {
		return nil, 0, 0, 0, false
	}
	halfFrom, opFrom = x.startsLocked(opEnd, false)
	hs = make([]PendingHalf, 0, len(x.pending))
	for _, h := range x.pending {
		hs = append(hs, *h)
	}
	return hs, halfFrom, opFrom, x.version, true
}

// Starts returns the start offsets a snapshot taken now would have.
func (x *Index) Starts(opEnd int64) (half, op int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.startsLocked(opEnd, false)
}

// ChangedSince reports whether the index changed after version v.
func (x *Index) ChangedSince(v uint64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.version != v
}

// PendingFromRecord builds an index entry from a decoded half record.
func PendingFromRecord(x *message.Ext, opMark int64) *PendingHalf {
	return &PendingHalf{
		QueueOffset: x.QueueOffset,
		Phy:         x.PhysicalOffset,
		Size:        x.TotalSize,
		Born:        x.BornTimestamp,
		stored:      x.StoreTimestamp,
		ImmunityMs:  ImmunityMillis(x.Properties),
		Checks:      int32(atoiOr(x.Properties[message.PropertyTransactionCheckTimes], 0)),
		Group:       x.Properties[message.PropertyProducerGroup],
		Topic:       x.Properties[message.PropertyRealTopic],
		OpMark:      opMark,
	}
}

// PendingFromPut builds an index entry for a half message just stored.
func PendingFromPut(m *message.Inner, r store.PutResult) *PendingHalf {
	return &PendingHalf{
		QueueOffset: r.QueueOffset,
		Phy:         r.WroteOffset,
		Size:        r.WroteBytes,
		Born:        m.BornTimestamp,
		stored:      r.StoreTimestamp,
		ImmunityMs:  ImmunityMillis(m.Properties),
		Checks:      int32(atoiOr(m.Properties[message.PropertyTransactionCheckTimes], 0)),
		Group:       m.Properties[message.PropertyProducerGroup],
		Topic:       m.Properties[message.PropertyRealTopic],
	}
}

// ImmunityMillis reads CHECK_IMMUNITY_TIME_IN_SECONDS (0 when absent).
func ImmunityMillis(p map[string]string) int64 {
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

// Reset empties the index for a new rebuild (the service starts again
// after a Stop): the pending halves, resolutions and what was seen are
// forgotten, the half puts and op records in flight are kept.
func (x *Index) Reset() {
	x.mu.Lock()
	defer x.mu.Unlock()
	clear(x.pending)
	clear(x.recent)
	clear(x.tombstones)
	x.seenEnd = 0
	x.rebuilding = true
	x.version++
}
