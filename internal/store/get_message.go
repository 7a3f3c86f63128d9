package store

import (
	"fmt"
	"sync"
	"time"

	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/message"
)

var readBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}

// readGapMax is the most bytes of other queues' records a pull reads and
// throws away to join two of its records into one pread; readSpanMax caps
// one pread. Records of one queue written by concurrent producers sit a
// few records apart, so a pull of 32 becomes one or two preads instead of
// 32.
const (
	readGapMax  = 16 << 10
	readSpanMax = 1 << 20
)

// pick is a consume-queue entry a pull reads: its queue offset, CommitLog
// range and, once read, where the record sits in the pull's buffer.
type pick struct {
	qo   int64
	phy  int64
	size int
	off  int
	ok   bool
}

// readSpan is a run of picks [from, to) read with one pread.
type readSpan struct{ from, to int }

// planReads groups picks (in CommitLog order) into spans: a pick joins the
// previous span when it starts at most readGapMax bytes after the span's
// end, the span stays within readSpanMax bytes and within one CommitLog
// file of fileSize bytes. It returns the spans and the bytes they cover.
func planReads(spans []readSpan, picks []pick, fileSize int64) ([]readSpan, int) {
	total := 0
	for i := 0; i < len(picks); {
		first := picks[i]
		end := first.phy + int64(first.size)
		j := i + 1
		for j < len(picks) {
			p := picks[j]
			pEnd := p.phy + int64(p.size)
			if p.phy < end || p.phy-end > readGapMax || pEnd-first.phy > readSpanMax ||
				(fileSize > 0 && (pEnd-1)/fileSize != first.phy/fileSize) {
				break
			}
			end = pEnd
			j++
		}
		spans = append(spans, readSpan{i, j})
		total += int(end - first.phy)
		i = j
	}
	return spans, total
}

// batchFull is RocketMQ's isTheBatchFull.
func (st *DefaultMessageStore) batchFull(sizePy, maxMsgNums, maxBytes, bufferTotal, messageTotal int, inDisk bool) bool {
	if bufferTotal == 0 || messageTotal == 0 {
		return false
	}
	if messageTotal >= maxMsgNums {
		return true
	}
	if maxBytes > 0 && bufferTotal+sizePy > maxBytes {
		return true
	}
	lc := st.live()
	if inDisk {
		return bufferTotal+sizePy > lc.MaxTransferBytesOnMessageInDisk || messageTotal > lc.MaxTransferCountOnMessageInDisk-1
	}
	return bufferTotal+sizePy > lc.MaxTransferBytesOnMessageInMemory || messageTotal > lc.MaxTransferCountOnMessageInMemory-1
}

// GetMessage reads up to maxMsgNums messages of topic/queueID from offset.
func (st *DefaultMessageStore) GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums int32, maxBytes int32, filter MessageFilter) *GetResult {
	start := time.Now()
	r, _ := st.getMessage(topic, queueID, offset, maxMsgNums, maxBytes, filter, false)
	st.stats.rt.RecordGet(r.Status == Found, len(r.Buffers), time.Since(start), isSystemTopic(topic))
	return r
}

// GetMessageNoWait is GetMessage for a caller that must not wait for the
// device (an event loop): it reads only what is in memory, and returns ok
// false, having read and counted nothing, when the pull would have had to
// wait (its consume-queue entries or a record span not in the page cache,
// or a span read through a mapping). A resident span is copied after the
// residency check of its chunk, remembered for 100 ms.
func (st *DefaultMessageStore) GetMessageNoWait(group, topic string, queueID int32, offset int64, maxMsgNums int32, maxBytes int32, filter MessageFilter) (*GetResult, bool) {
	start := time.Now()
	r, wait := st.getMessage(topic, queueID, offset, maxMsgNums, maxBytes, filter, true)
	if wait {
		st.stats.getWouldWait.Add(1)
		return nil, false
	}
	st.stats.rt.RecordGet(r.Status == Found, len(r.Buffers), time.Since(start), isSystemTopic(topic))
	return r, true
}

// isSystemTopic tells the day totals to leave a topic out, as RocketMQ's
// "without system topic" figures.
func isSystemTopic(topic string) bool { return systopic.OutOfDayTotals(topic) }

// getResultInline is how many records the answer of a pull keeps in its
// GetResult's own allocation (a client's default batch is 32).
const getResultInline = 32

// getResultRoom is a GetResult with room for the record and queue-offset
// lists of an ordinary pull, so that a pull that found records costs one
// allocation, and none when its result is recycled (GetResult.Recycle).
type getResultRoom struct {
	r    GetResult
	bufs [getResultInline][]byte
	qos  [getResultInline]int64
}

// resultRooms holds the rooms of recycled results.
var resultRooms = sync.Pool{New: func() any { return new(getResultRoom) }}

// newResult returns h as a result of its own: a pull that reads no record
// costs no more than its GetResult.
func newResult(h GetResult) *GetResult { return &h }

// putReadBuf gives a read buffer back to readBufPool, unless a large pull
// grew it.
func putReadBuf(bp *[]byte) {
	*bp = (*bp)[:0]
	if cap(*bp) <= 4<<20 {
		readBufPool.Put(bp)
	}
}

// abandonRead gives back the read buffer and the result of a read that
// would have had to wait (getMessage's answer for it).
func abandonRead(bp *[]byte, data []byte, r *GetResult) (*GetResult, bool) {
	*bp = data
	putReadBuf(bp)
	r.Recycle()
	return nil, true
}

// getMessage is GetMessage; with noWait it reads only what is in memory
// and reports wait (with a nil result) when it would have had to wait.
func (st *DefaultMessageStore) getMessage(topic string, queueID int32, offset int64, maxMsgNums int32, maxBytes int32, filter MessageFilter, noWait bool) (res *GetResult, wait bool) {
	var head GetResult // what is known before any record is read
	if st.state.Load() != stateRunning {
		head.Status, head.NextBeginOffset = NoMatchedLogicQueue, offset
		return newResult(head), false
	}
	cq := st.consumeQueue(topic, queueID, false)
	if cq == nil {
		head.Status, head.NextBeginOffset = NoMatchedLogicQueue, 0
		return newResult(head), false
	}
	minOff, maxOff := cq.minOffset.Load(), cq.maxOffset.Load()
	head.MinOffset, head.MaxOffset = minOff, maxOff
	switch {
	case maxOff == 0:
		head.Status, head.NextBeginOffset = NoMessageInQueue, 0
		return newResult(head), false
	case offset < minOff:
		head.Status, head.NextBeginOffset = OffsetTooSmall, minOff
		return newResult(head), false
	case offset == maxOff:
		head.Status, head.NextBeginOffset = OffsetOverflowOne, offset
		return newResult(head), false
	case offset > maxOff:
		head.Status, head.NextBeginOffset = OffsetOverflowBadly, maxOff
		return newResult(head), false
	}
	if maxMsgNums <= 0 {
		maxMsgNums = 1
	}
	c := st.commitLog
	maxPhy := c.maxOffset()
	minPhy := c.minOffset()
	mem := st.memoryWindow()
	maxFilter := max(16000, int(maxMsgNums)*CQEntrySize)

	// Without a filter every entry whose record is still stored is taken,
	// so the queue is read maxMsgNums entries at a time, up to maxFilter
	// bytes (RocketMQ's maxFilterMessageSize, how far a filter may skip),
	// instead of maxFilter bytes at once: a pull of 32 reads 640 bytes of
	// the queue, not 16,000. A pull stays within one queue file either way.
	limit := maxFilter / CQEntrySize
	step := limit
	if filter == nil {
		step = min(limit, int(maxMsgNums))
	}
	ebp := readBufPool.Get().(*[]byte)
	entries, fileEnd, err := cq.readEntriesMaybeWait((*ebp)[:0], offset, step, noWait)
	if err != nil || len(entries) == 0 {
		*ebp = entries[:0]
		readBufPool.Put(ebp)
		if err == errWouldWait {
			return nil, true
		}
		head.Status, head.NextBeginOffset = OffsetFoundNull, fileEnd
		if fileEnd > maxOff {
			head.NextBeginOffset = maxOff
		}
		return newResult(head), false
	}

	var pickArr [64]pick // one pull's picks stay off the heap in the common case
	picks := pickArr[:0]
	status := NoMatchedMessage
	bufferTotal := 0
	examined := 0
	var maxPhyPulling int64
	base := 0 // the queue entries read before entries[0]
scan:
	for {
		for i := 0; i+CQEntrySize <= len(entries); i += CQEntrySize {
			k := base + i/CQEntrySize
			e, ok := DecodeCQEntry(entries[i:])
			if !ok {
				examined = k + 1
				continue
			}
			inDisk := maxPhy-e.Offset > mem
			if st.batchFull(int(e.Size), int(maxMsgNums), int(maxBytes), bufferTotal, len(picks), inDisk) {
				break scan
			}
			examined = k + 1
			maxPhyPulling = e.Offset
			if e.Offset < minPhy {
				status = MessageWasRemoving
				continue
			}
			if filter != nil && !filter.MatchTagsCode(e.TagsCode) {
				continue
			}
			picks = append(picks, pick{qo: offset + int64(k), phy: e.Offset, size: int(e.Size)})
			bufferTotal += int(e.Size)
		}
		read := len(entries) / CQEntrySize
		base += read
		if len(picks) >= int(maxMsgNums) || read < step || base >= limit || offset+int64(base) >= fileEnd {
			break
		}
		// Entries were skipped (records removed, or not valid): read on.
		if entries, _, err = cq.readEntriesMaybeWait(entries[:0], offset+int64(base), min(step, limit-base), noWait); err != nil || len(entries) == 0 {
			break
		}
	}
	*ebp = entries[:0]
	readBufPool.Put(ebp)
	if err == errWouldWait {
		return nil, true
	}
	head.NextBeginOffset = offset + int64(examined)
	var r *GetResult
	if len(picks) > 0 && len(picks) <= getResultInline {
		room := resultRooms.Get().(*getResultRoom)
		room.r = head
		room.r.room = room
		r = &room.r
		r.Buffers, r.QueueOffsets = room.bufs[:0], room.qos[:0]
	} else {
		r = newResult(head)
		if len(picks) > 0 {
			r.Buffers = make([][]byte, 0, len(picks))
			r.QueueOffsets = make([]int64, 0, len(picks))
		}
	}

	if len(picks) > 0 {
		var spanArr [64]readSpan
		spans, readTotal := planReads(spanArr[:0], picks, c.cfg.MappedFileSizeCommitLog)
		readTotal = min(readTotal, bufferTotal+readGapMax) // resident reads copy the records only
		bp := readBufPool.Get().(*[]byte)
		data := (*bp)[:0]
		if cap(data) < readTotal {
			data = make([]byte, 0, readTotal)
		}
		for _, sp := range spans {
			first, last := picks[sp.from], picks[sp.to-1]
			if maxPhy-first.phy <= mem && worthCopyingRecords(picks[sp.from:sp.to]) {
				var ok bool
				if data, ok = c.copyResident(data, picks[sp.from:sp.to]); ok {
					c.residentSpans.Add(1)
					continue
				}
			}
			c.preadSpans.Add(1)
			base := len(data)
			var err error
			data, err = c.readMaybeWait(data, first.phy, int(last.phy-first.phy)+last.size, noWait)
			if err == errWouldWait {
				return abandonRead(bp, data, r)
			}
			if err != nil {
				// Fall back to one read per record (a span may cross a
				// file end or a removed file).
				data = data[:base]
				for k := sp.from; k < sp.to; k++ {
					b := len(data)
					data, err = c.readMaybeWait(data, picks[k].phy, picks[k].size, noWait)
					if err == errWouldWait {
						return abandonRead(bp, data, r)
					}
					if err == nil {
						picks[k].off, picks[k].ok = b, true
					} else {
						data = data[:b]
						status = MessageWasRemoving
					}
				}
				continue
			}
			for k := sp.from; k < sp.to; k++ {
				picks[k].off, picks[k].ok = base+int(picks[k].phy-first.phy), true
			}
		}
		var v message.RecordView
		for _, pk := range picks {
			if !pk.ok {
				continue
			}
			rec := data[pk.off : pk.off+pk.size : pk.off+pk.size]
			err := checkRecordAt(&v, rec, pk.phy, true)
			if err == nil {
				// The record must be the one the entry names: its queue
				// offset, and never a record that gets no entry (a
				// prepared or rolled-back transaction part, or the filler
				// recovery writes over skipped bytes).
				qo := v.QueueOffset()
				tt := message.TransactionValue(v.SysFlag())
				if qo != pk.qo || tt == message.TransactionPreparedType || tt == message.TransactionRollbackType {
					err = fmt.Errorf("%w: record at %d (queue offset %d) does not match entry %d", ErrCorrupt, pk.phy, qo, pk.qo)
				}
			}
			if err != nil {
				st.logger.Error("store: skipping an invalid record in a pull", "topic", topic, "queueId", queueID, "queueOffset", pk.qo, "err", err)
				continue
			}
			if filter != nil && !filter.MatchRecord(rec) {
				continue
			}
			r.Buffers = append(r.Buffers, rec)
			r.QueueOffsets = append(r.QueueOffsets, pk.qo)
			r.BufferTotalSize += pk.size
		}
		if len(r.Buffers) > 0 {
			status = Found
			*bp = data
			r.readBuf = bp // back to readBufPool on Release
		} else {
			r.Buffers, r.QueueOffsets = nil, nil
			*bp = data
			putReadBuf(bp)
		}
	}
	r.Status = status
	r.SuggestPullingFromSlave = SlowRead(maxPhy, maxPhyPulling, st.memTotal, st.live().AccessMessageInMemoryMaxRatio)
	return r, false
}
