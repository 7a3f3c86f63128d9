package metrics

// Source gives the figures of one scrape. The broker implements it;
// Snapshot is called once per scrape, from the scraping goroutine, and
// must not block on the send or pull paths.
type Source interface {
	Snapshot() *Snapshot
}

// SourceFunc adapts a function to a Source.
type SourceFunc func() *Snapshot

// Snapshot implements Source.
func (f SourceFunc) Snapshot() *Snapshot { return f() }

// Snapshot is every figure of one scrape. Counters are running totals
// since the broker started; gauges are current values; latencies of the
// rocketmq_ families are in milliseconds as RocketMQ's are, those of the
// spool_ families in seconds.
type Snapshot struct {
	// BrokerPermission is the broker's permission bits (brokerPermission).
	BrokerPermission int
	// TopicNumber and ConsumerGroupNumber count the topic table and the
	// subscription groups.
	TopicNumber, ConsumerGroupNumber int

	// Topics are the per-topic put figures.
	Topics []TopicFigures
	// Groups are the per-group, per-topic consume figures.
	Groups []GroupFigures
	// ProducerConnections and ConsumerConnections count connections by
	// their labels.
	ProducerConnections []ProducerConnections
	ConsumerConnections []ConsumerConnections
	// Processors are the waiting requests per processor
	// (rocketmq_processor_watermark).
	Processors []ProcessorWatermark
	// RPC is the request latency histogram per request and result.
	RPC []RPCLatency

	Storage StorageFigures
	Timer   TimerFigures
	Spool   SpoolFigures
}

// The message_type label values of RocketMQ's TopicMessageType.
const (
	MessageNormal      = "normal"
	MessageFIFO        = "fifo"
	MessageDelay       = "delay"
	MessageTransaction = "transaction"
)

// TopicFigures are one topic's put figures.
type TopicFigures struct {
	Topic string
	// MessageType is the message_type label ("normal", "fifo", "delay",
	// "transaction").
	MessageType string
	IsSystem    bool
	// MessagesIn and BytesIn are rocketmq_messages_in_total and
	// rocketmq_throughput_in_total.
	MessagesIn, BytesIn uint64
	// MessageSize is the rocketmq_message_size histogram (bytes); nil
	// leaves it out.
	MessageSize *Histogram
	// Commits and Rollbacks are rocketmq_commit_messages_total and
	// rocketmq_rollback_messages_total; HalfMessages is
	// rocketmq_half_messages.
	Commits, Rollbacks uint64
	HalfMessages       int64
	// TimingMessages, TimerEnqueued and TimerDequeued are
	// rocketmq_timing_messages, rocketmq_timer_enqueue_total and
	// rocketmq_timer_dequeue_total.
	TimingMessages               int64
	TimerEnqueued, TimerDequeued uint64
}

// GroupFigures are one consumer group's figures on one topic.
type GroupFigures struct {
	Group, Topic string
	IsRetry      bool
	IsSystem     bool
	// MessagesOut and BytesOut are rocketmq_messages_out_total and
	// rocketmq_throughput_out_total.
	MessagesOut, BytesOut uint64
	// SentToDLQ is rocketmq_send_to_dlq_messages_total.
	SentToDLQ uint64
	// LagMessages (produced, not committed), LagLatencyMs (age of the
	// oldest uncommitted message), InflightMessages (pulled, not
	// committed), QueueingLatencyMs (age of the oldest unpulled message)
	// and ReadyMessages (produced, not pulled) are the lag gauges.
	LagMessages, LagLatencyMs, InflightMessages, QueueingLatencyMs, ReadyMessages int64
}

// ProducerConnections counts producer connections of one language and
// version.
type ProducerConnections struct {
	Language, Version string
	Count             int
}

// ConsumerConnections counts one group's consumer connections of one
// language, version and consume mode ("push" or "pull").
type ConsumerConnections struct {
	Group, Language, Version, ConsumeMode string
	IsSystem                              bool
	Count                                 int
}

// ProcessorWatermark is one processor's queue of waiting requests.
type ProcessorWatermark struct {
	Processor string
	Waiting   int
}

// RPCLatency is the latency histogram (ms) of one request code and result.
type RPCLatency struct {
	// RequestCode and ResponseCode are the labels' values (RocketMQ
	// writes the codes' lower-case names).
	RequestCode, ResponseCode string
	// Result is "success", "oneway", "cancelled",
	// "process_request_failed" or "write_channel_failed".
	Result        string
	IsLongPolling bool
	Latency       Histogram
}

// StorageFigures are the store's gauges.
type StorageFigures struct {
	SizeBytes, FlushBehindBytes, DispatchBehindBytes int64
	// MessageReserveTimeMs is the age of the oldest message kept.
	MessageReserveTimeMs int64
}

// TimerFigures are the timing wheel's gauges.
type TimerFigures struct {
	EnqueueLag, EnqueueLatencyMs, DequeueLag, DequeueLatencyMs int64
	// Snapshot counts pending timer messages by their delay bound in
	// seconds (rocketmq_timer_message_snapshot's timer_bound_s).
	Snapshot []TimerBound
}

// TimerBound is one bucket of rocketmq_timer_message_snapshot.
type TimerBound struct {
	BoundSeconds int64
	Messages     int64
}

// SpoolFigures are Spool's own isolation figures.
type SpoolFigures struct {
	// PutLockHold and Fsync are latency histograms in seconds; nil leaves
	// them out.
	PutLockHold, Fsync *Histogram
	// Busy counts the requests answered busy, by kind (for example
	// "send_lock", "page_cache", "pull_queue").
	Busy []KindCount
	// ColdReadBytes is the running total of bytes read under the cold-read
	// budget; ColdReadLimitBytesPerSecond the budget's rate;
	// ColdReadThrottled the pulls that found the budget spent.
	ColdReadBytes               uint64
	ColdReadLimitBytesPerSecond float64
	ColdReadThrottled           uint64
	// ReplicationLagBytes is how far a replica is behind; left out unless
	// HasReplication.
	HasReplication      bool
	ReplicationLagBytes int64
}

// KindCount is a running count of one kind.
type KindCount struct {
	Kind  string
	Count uint64
}

// Histogram is a histogram snapshot: cumulative counts per upper bound
// (ascending, +Inf implied by Count), the count and the sum of the
// observations.
type Histogram struct {
	Bounds []float64
	Counts []uint64 // Counts[i] observations <= Bounds[i]
	Count  uint64
	Sum    float64
}
