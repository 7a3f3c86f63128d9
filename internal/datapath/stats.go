package datapath

import (
	"encoding/binary"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
)

// Stats receives the per-topic and per-group traffic counts of the send,
// pull and send-back paths (internal/brokerstats implements it). Each call
// must be cheap and must not block: it runs on the request path.
type Stats interface {
	// IncTopicPutTimed counts msgs messages of size bytes stored in queue
	// queueID of topic, and the ms milliseconds the put took from its
	// request to the store's completion (TOPIC_PUT_LATENCY).
	IncTopicPutTimed(topic string, queueID int32, msgs int, size, ms int64)
	// IncGroupGet counts msgs messages of size bytes pulled by group from
	// queue queueID of topic.
	IncGroupGet(group, topic string, queueID int32, msgs int, size int64)
	// IncGroupGetLatency counts the milliseconds the last message of a
	// pull waited in the store (GROUP_GET_LATENCY, as RocketMQ measures
	// it when it reads a pull's result).
	IncGroupGetLatency(group, topic string, queueID int32, ms int64)
	// IncSendBack counts a message group sent back for retry from topic.
	IncSendBack(group, topic string)
	// IncSendToDLQ counts a message of topic group's retries moved to its
	// dead-letter queue.
	IncSendToDLQ(group, topic string)
	// IncTransaction counts a half message of topic committed (commit) or
	// rolled back.
	IncTransaction(topic string, commit bool)
	// NotePulled records the next offset a pull of group gives for a
	// queue of topic.
	NotePulled(group, topic string, queueID int32, next int64)
}

// noStats is the Stats of a data path built without one.
type noStats struct{}

func (noStats) IncTopicPutTimed(string, int32, int, int64, int64) {}
func (noStats) IncGroupGet(string, string, int32, int, int64)     {}
func (noStats) IncGroupGetLatency(string, string, int32, int64)   {}
func (noStats) IncSendBack(string, string)                        {}
func (noStats) IncSendToDLQ(string, string)                       {}
func (noStats) IncTransaction(string, bool)                       {}
func (noStats) NotePulled(string, string, int32, int64)           {}

func statsOr(s Stats) Stats {
	if s == nil {
		return noStats{}
	}
	return s
}

// countTopicPut counts a producer's put into the traffic stats when the
// store took it (PUT_OK, or a flush or replica wait that timed out), as
// RocketMQ's send processor counts: the messages and bytes written, and
// the time since start, when the request was read.
func (d *Path) countTopicPut(topic string, queueID int32, r store.PutResult, start int64) {
	switch r.Status {
	case store.PutOK, store.FlushDiskTimeout, store.FlushSlaveTimeout, store.SlaveNotAvailable:
		d.stats.IncTopicPutTimed(topic, queueID, int(max(r.MsgNum, 1)), int64(r.WroteBytes), time.Duration(putStart()-start).Milliseconds())
	}
}

// countGroupGet counts a found pull: its messages and bytes, and how long
// its last message waited in the store.
func (d *Path) countGroupGet(group, topic string, queueID int32, res *store.GetResult) {
	d.stats.IncGroupGet(group, topic, queueID, len(res.Buffers), int64(res.BufferTotalSize))
	d.stats.NotePulled(group, topic, queueID, res.NextBeginOffset)
	if ts := lastStoreTimestamp(res.Buffers); ts > 0 {
		d.stats.IncGroupGetLatency(group, topic, queueID, max(d.nowMillis()-ts, 0))
	}
}

// lastStoreTimestamp is the store time of the last record of bufs (one
// record each), or 0 when there is none.
func lastStoreTimestamp(bufs [][]byte) int64 {
	if len(bufs) == 0 {
		return 0
	}
	rec := bufs[len(bufs)-1]
	const sysFlagAt = 36
	if len(rec) < sysFlagAt+4 {
		return 0
	}
	at := message.StoreTimestampPos(int32(binary.BigEndian.Uint32(rec[sysFlagAt:])))
	if len(rec) < at+8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(rec[at:]))
}

// putStart is the start of a put's TOPIC_PUT_LATENCY, in nanoseconds on
// the monotonic clock (a measurement, not a decision: one clock read,
// where time.Now takes two).
func putStart() int64 { return int64(time.Since(putEpoch)) }

// putEpoch anchors putStart.
var putEpoch = time.Now()
