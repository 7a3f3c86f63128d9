package datapath

import "github.com/spoolmq/spool/internal/store"

// Stats receives the per-topic and per-group traffic counts of the send,
// pull and send-back paths (internal/brokerstats implements it). Each call
// must be cheap and must not block: it runs on the request path.
type Stats interface {
	// IncTopicPut counts msgs messages of size bytes stored in queue
	// queueID of topic.
	IncTopicPut(topic string, queueID int32, msgs int, size int64)
	// IncGroupGet counts msgs messages of size bytes pulled by group from
	// queue queueID of topic.
	IncGroupGet(group, topic string, queueID int32, msgs int, size int64)
	// IncSendBack counts a message group sent back for retry from topic.
	IncSendBack(group, topic string)
}

// noStats is the Stats of a data path built without one.
type noStats struct{}

func (noStats) IncTopicPut(string, int32, int, int64)         {}
func (noStats) IncGroupGet(string, string, int32, int, int64) {}
func (noStats) IncSendBack(string, string)                    {}

func statsOr(s Stats) Stats {
	if s == nil {
		return noStats{}
	}
	return s
}

// countTopicPut counts a producer's put into the traffic stats when the
// store took it (PUT_OK, or a flush or replica wait that timed out), as
// RocketMQ's send processor counts: the messages and bytes written.
func (d *Path) countTopicPut(topic string, queueID int32, r store.PutResult) {
	switch r.Status {
	case store.PutOK, store.FlushDiskTimeout, store.FlushSlaveTimeout, store.SlaveNotAvailable:
		d.stats.IncTopicPut(topic, queueID, int(max(r.MsgNum, 1)), int64(r.WroteBytes))
	}
}
