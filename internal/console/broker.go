package console

import "time"

// Broker is what the console reads of the broker. Every method returns a
// copy the console may keep; none may block on the send or pull paths.
type Broker interface {
	// Overview is the cluster and broker figures of the front page.
	Overview() Overview
	// Topics lists the topics, sorted by name.
	Topics() []Topic
	// Groups lists the consumer groups, sorted by name.
	Groups() []GroupSummary
	// Group is one group's offsets by topic and queue; false when the
	// broker knows no such group.
	Group(name string) (Group, bool)
	// MessageByID finds a message by its id: the offset message id the
	// broker gives, or the producer's unique key (with topic).
	MessageByID(topic, id string) ([]Message, error)
	// MessagesByKey finds the messages of topic indexed under key.
	MessagesByKey(topic, key string) ([]Message, error)
	// Throughput is the running totals of messages and bytes in and out.
	Throughput() Throughput
}

// Overview is the cluster and broker figures.
type Overview struct {
	Cluster, BrokerName, Addr string
	BrokerID                  int64
	Permission                int
	Version                   string
	StartedAt                 time.Time
	Topics, Groups            int
	ProducerConnections       int
	ConsumerConnections       int
	StoreSizeBytes            int64
	// Namesrv is the name server addresses the broker registers with.
	Namesrv string
}

// Topic is one topic and its queues.
type Topic struct {
	Name                    string
	ReadQueues, WriteQueues int
	Perm                    int
	System                  bool
	Queues                  []Queue
	MessagesIn              int64
	PutTps                  float64
}

// Queue is one queue's offsets.
type Queue struct {
	ID                   int32
	MinOffset, MaxOffset int64
	// LastStored is the store time of the queue's last message (zero when
	// it is empty).
	LastStored time.Time
}

// GroupSummary is one group on the groups page.
type GroupSummary struct {
	Name   string
	Online int // connected consumers
	Lag    int64
	Topics int
	GetTps float64
	System bool
}

// Group is one consumer group's offsets.
type Group struct {
	Name        string
	Online      int
	ConsumeType string
	Model       string
	Queues      []GroupQueue
}

// Lag is the group's total lag.
func (g Group) Lag() int64 {
	var n int64
	for _, q := range g.Queues {
		n += q.Lag
	}
	return n
}

// GroupQueue is one queue of one topic as a group consumes it.
type GroupQueue struct {
	Topic   string
	QueueID int32
	// Produced is the queue's max offset, Committed the group's committed
	// offset (-1 when none), Lag the difference.
	Produced, Committed, Lag int64
	// LastConsumed is the store time of the last committed message (zero
	// when none).
	LastConsumed time.Time
}

// Message is one message found by a lookup.
type Message struct {
	MsgID, UniqKey, Topic, Tags, Keys string
	QueueID                           int32
	QueueOffset, CommitLogOffset      int64
	StoreHost, BornHost               string
	BornAt, StoredAt                  time.Time
	ReconsumeTimes                    int32
	Properties                        map[string]string
	Body                              string
	BodySize                          int
}

// Throughput is the running totals the chart turns into rates.
type Throughput struct {
	// AtMillis is when the totals were read (unix ms).
	AtMillis                int64
	MessagesIn, MessagesOut int64
	BytesIn, BytesOut       int64
}
