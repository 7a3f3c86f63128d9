package store

import "github.com/spoolmq/spool/message"

// Queries of a queue by store time: they read the store timestamp of the
// records its entries name.

// storeTimeAt reads the store timestamp of the record at phy (size bytes).
func (st *DefaultMessageStore) storeTimeAt(phy int64) int64 {
	head, err := st.commitLog.read(nil, phy, message.RecordHeadLen)
	if err != nil {
		return -1
	}
	ts, ok := message.StoreTimestampOf(head)
	if !ok {
		return -1
	}
	return ts
}

// OffsetInQueueByTime returns the first logical offset whose store time is
// >= ts, clamped to [min, max].
func (st *DefaultMessageStore) OffsetInQueueByTime(topic string, queueID int32, ts int64) int64 {
	cq := st.consumeQueue(topic, queueID, false)
	if cq == nil {
		return 0
	}
	lo, hi := cq.minOffset.Load(), cq.maxOffset.Load()
	minPhy := st.commitLog.minOffset()
	// Skip entries whose records were deleted.
	for lo < hi {
		e, ok := cq.entryAt(lo)
		if ok && e.Offset >= minPhy {
			break
		}
		lo++
		if !ok {
			break
		}
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		e, ok := cq.entryAt(mid)
		if !ok {
			hi = mid
			continue
		}
		t := st.storeTimeAt(e.Offset)
		if t >= 0 && t < ts {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// EarliestMessageTime is the store time of the queue's first message, or -1.
func (st *DefaultMessageStore) EarliestMessageTime(topic string, queueID int32) int64 {
	cq := st.consumeQueue(topic, queueID, false)
	if cq == nil {
		return -1
	}
	return st.MessageStoreTimeStamp(topic, queueID, cq.minOffset.Load())
}

// MessageStoreTimeStamp is the store time of the message at a logical
// offset, or -1.
func (st *DefaultMessageStore) MessageStoreTimeStamp(topic string, queueID int32, offset int64) int64 {
	cq := st.consumeQueue(topic, queueID, false)
	if cq == nil || offset < cq.minOffset.Load() || offset >= cq.maxOffset.Load() {
		return -1
	}
	e, ok := cq.entryAt(offset)
	if !ok {
		return -1
	}
	return st.storeTimeAt(e.Offset)
}
