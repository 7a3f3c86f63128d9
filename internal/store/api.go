package store

import (
	"github.com/spoolmq/spool/message"
)

// MessageStore is everything the broker may ask of the store. The broker
// never touches mapped files, consume queues or index files directly.
type MessageStore interface {
	// Start recovers the store (normal or abnormal recovery) and starts its
	// background services. It fails, naming file and offset, when it finds
	// corruption before the last flushed offset.
	Start() error
	// Shutdown stops the services, flushes, writes the checkpoint and
	// removes the abort file.
	Shutdown() error

	// PutMessage appends one message. done is called exactly once with the
	// outcome: inline for ASYNC_FLUSH and errors, from the flusher for
	// SYNC_FLUSH (after fsync covered the record, or FLUSH_DISK_TIMEOUT).
	// done must not block.
	PutMessage(msg *message.Inner, done func(PutResult))
	// PutMessages appends a batch as consecutive records of one queue.
	PutMessages(batch *message.Batch, done func(PutResult))

	// GetMessage reads up to maxMsgNums messages (and about maxBytes) of
	// topic/queueID from logical offset, filtered by filter (nil = all).
	GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums int32, maxBytes int32, filter MessageFilter) *GetResult
	// GetMessageNoWait is GetMessage for a caller that must not wait for
	// the device: ok false (nothing read) when the pull would have had to.
	GetMessageNoWait(group, topic string, queueID int32, offset int64, maxMsgNums int32, maxBytes int32, filter MessageFilter) (*GetResult, bool)

	MaxOffsetInQueue(topic string, queueID int32) int64
	MinOffsetInQueue(topic string, queueID int32) int64
	// OffsetInQueueByTime returns the first logical offset whose store time
	// is >= ts (clamped to [min, max]).
	OffsetInQueueByTime(topic string, queueID int32, ts int64) int64
	// EarliestMessageTime returns the store time of the queue's first
	// message, or -1.
	EarliestMessageTime(topic string, queueID int32) int64
	// MessageStoreTimeStamp returns the store time of the message at a
	// logical offset, or -1.
	MessageStoreTimeStamp(topic string, queueID int32, offset int64) int64
	// CheckInMemByConsumeOffset reports whether the message at a logical
	// offset is still within the in-memory window (accessMessageInMemoryMaxRatio).
	CheckInMemByConsumeOffset(topic string, queueID int32, offset int64) bool

	// LookMessageByOffset returns a copy of the stored record at a
	// commit-log offset.
	LookMessageByOffset(commitLogOffset int64) ([]byte, error)
	// QueryMessage finds records by KEYS entry or UNIQ_KEY within a store
	// time range.
	QueryMessage(topic, key string, maxNum int, begin, end int64) (*QueryResult, error)

	// DeleteTopics removes the consume queues (and index entries) of topics.
	DeleteTopics(topics []string)
	// QueueIDs lists the queue ids that have a consume queue for topic.
	QueueIDs(topic string) []int32

	// OnDispatch registers a callback run by the dispatcher after it has
	// appended consume-queue entries for a queue (maxOffset exclusive). It
	// must not block; the broker uses it to wake held pulls.
	OnDispatch(fn func(topic string, queueID int32, maxOffset int64))
	// SetDispatchWaiters tells the dispatcher whether anyone is waiting
	// for new records (the broker: held pulls). While nobody is, a stream
	// of puts is dispatched once per millisecond instead of waking the
	// dispatcher once per put; while someone is, every put is dispatched
	// at once. DispatchNow ends such a millisecond's wait at once (a pull
	// was just held).
	SetDispatchWaiters(waiting func() bool)
	DispatchNow()

	// MinPhyOffset and MaxPhyOffset bound the CommitLog.
	MinPhyOffset() int64
	MaxPhyOffset() int64
	// DispatchBehindBytes is how far consume-queue dispatch lags the
	// CommitLog.
	DispatchBehindBytes() int64

	// Config returns the current configuration; UpdateConfig changes the
	// keys tagged live:"true" and refuses, by name, a change to any other.
	Config() Config
	UpdateConfig(next Config) error

	// Stats returns the runtime figures (latency histograms, counters).
	Stats() Stats
	// RuntimeInfo returns the store's GET_BROKER_RUNTIME_INFO figures under
	// RocketMQ's keys, formatted as RocketMQ formats them.
	RuntimeInfo() map[string]string
	// EvictPageCache drops the pages of the CommitLog (topic "" ) or of
	// a topic's records from memory and reports residency before and after.
	EvictPageCache(topic string) (EvictReport, error)
}

// MessageFilter decides which messages a pull returns.
type MessageFilter interface {
	// MatchTagsCode tests the consume-queue tag field.
	MatchTagsCode(tagsCode int64) bool
	// MatchRecord tests the stored record (properties); it is only called
	// when MatchTagsCode returned true. May be nil-safe true.
	MatchRecord(record []byte) bool
}

// PutStatus is the outcome of a put.
type PutStatus int

const (
	PutOK PutStatus = iota
	FlushDiskTimeout
	FlushSlaveTimeout
	SlaveNotAvailable
	ServiceNotAvailable // store not writable: shutdown, read-only after an fsync error, disk full
	CreateMappedFileFailed
	MessageIllegal // too large, properties too long
	PropertiesSizeExceeded
	OSPageCacheBusy // put lock held too long, spill full, transient pool exhausted
	UnknownError
	// InSyncReplicasNotEnough: controller mode, the sync-state set is
	// smaller than minInSyncReplicas (RocketMQ's PutMessageStatus of the
	// name; the client sees SYSTEM_ERROR).
	InSyncReplicasNotEnough
)

// PutResult is delivered to a put's completion.
type PutResult struct {
	Status PutStatus
	// Remark explains a non-OK status for the client (what and why, with the
	// measured value and the limit where there is one).
	Remark string
	// WroteOffset is the commit-log offset of the (first) record.
	WroteOffset int64
	// WroteBytes is the size of all records written.
	WroteBytes int32
	// QueueOffset is the logical offset of the (first) record.
	QueueOffset int64
	// MsgNum is the number of records written.
	MsgNum int32
	// StoreTimestamp is the store time stamped on the records.
	StoreTimestamp int64
	// Offsets lists each record's commit-log offset (batches).
	Offsets []int64
}

// GetStatus is the outcome of a read, named as RocketMQ's GetMessageStatus.
type GetStatus int

const (
	Found GetStatus = iota
	NoMatchedMessage
	MessageWasRemoving
	OffsetFoundNull
	OffsetOverflowBadly
	OffsetOverflowOne
	OffsetTooSmall
	NoMatchedLogicQueue
	NoMessageInQueue
)

var getStatusNames = [...]string{"FOUND", "NO_MATCHED_MESSAGE", "MESSAGE_WAS_REMOVING", "OFFSET_FOUND_NULL",
	"OFFSET_OVERFLOW_BADLY", "OFFSET_OVERFLOW_ONE", "OFFSET_TOO_SMALL", "NO_MATCHED_LOGIC_QUEUE", "NO_MESSAGE_IN_QUEUE"}

func (s GetStatus) String() string {
	if int(s) < len(getStatusNames) {
		return getStatusNames[s]
	}
	return "UNKNOWN"
}

// GetResult is what a read returns. Buffers hold the stored records back to
// back; they stay valid until Release is called.
type GetResult struct {
	Status          GetStatus
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	Buffers         [][]byte
	// QueueOffsets and TagsCodes parallel Buffers.
	QueueOffsets []int64
	// BufferTotalSize is the sum of len(Buffers[i]).
	BufferTotalSize int
	// SuggestPullingFromSlave is set when the read went far behind memory.
	SuggestPullingFromSlave bool
	readBuf                 *[]byte        // the buffer Buffers point into, from readBufPool
	room                    *getResultRoom // the allocation r lives in, when it came from resultRooms
}

// MessageCount is the number of records returned.
func (r *GetResult) MessageCount() int { return len(r.Buffers) }

// Release gives the buffer the records were read into back to the store;
// Buffers must not be used after it.
func (r *GetResult) Release() {
	if r == nil {
		return
	}
	if r.readBuf != nil {
		putReadBuf(r.readBuf)
		r.readBuf = nil
	}
}

// Recycle is Release, and gives the result itself back to the store for
// another read: neither r nor anything read from it may be used after it,
// and it may be called once, by the result's only holder (a pull's answer
// once it is written). A result that is only released is left to the
// collector.
func (r *GetResult) Recycle() {
	if r == nil {
		return
	}
	r.Release()
	if room := r.room; room != nil {
		*room = getResultRoom{}
		resultRooms.Put(room)
	}
}

// QueryResult is the answer to QueryMessage.
type QueryResult struct {
	Records                  [][]byte
	IndexLastUpdateTimestamp int64
	IndexLastUpdatePhyoffset int64
}

// EvictReport describes a page-cache eviction.
type EvictReport struct {
	Files          int
	Bytes          int64
	ResidentBefore int64
	ResidentAfter  int64
}
