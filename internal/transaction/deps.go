package transaction

import (
	"log/slog"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

// Deps are what the check service takes from the broker that builds it.
type Deps struct {
	// Store holds the half and op queues; the service reads half records
	// from it and appends op records and give-ups to it.
	Store store.MessageStore
	// Offsets keeps the rebuild floors (group CID_RMQ_SYS_TRANS).
	Offsets Offsets
	// Producer returns a live connection of a producer group, or nil
	// when the group has none.
	Producer func(group string) Conn
	// EnsureTopic creates a system topic (TRANS_CHECK_MAX_TIME_TOPIC)
	// when it is missing.
	EnsureTopic func(topic string)
	// WaitDispatch blocks until the store has dispatched what its
	// recovery found (false when quit closes first).
	WaitDispatch func(quit <-chan struct{}) bool
	// PutCode maps a put's outcome to the answer code and remark.
	PutCode func(store.PutResult) (int32, string)
	// StoreHost is the broker's store address (known once it listens).
	StoreHost func() message.Addr
	// Config returns the current transaction settings (read at every use,
	// so live updates apply).
	Config func() Config
	// Clock times the rounds and stamps the op records.
	Clock clock.Clock
	// Budget paces every read of the service: checks, give-ups and the
	// rebuild.
	Budget Budget
	// HalfTopic, OpTopic and CheckMaxTopic are RMQ_SYS_TRANS_HALF_TOPIC,
	// RMQ_SYS_TRANS_OP_HALF_TOPIC and TRANS_CHECK_MAX_TIME_TOPIC.
	HalfTopic, OpTopic, CheckMaxTopic string
	// IndexPath is config/transactionIndex.json.
	IndexPath string
	// Logger is slog.Default() when nil.
	Logger *slog.Logger
}

// Config are the broker settings the check service reads.
type Config struct {
	// TimeoutMs is transactionTimeOut: the least age of a checked half.
	TimeoutMs int64
	// CheckMax is transactionCheckMax.
	CheckMax int
	// IntervalMs is transactionCheckInterval.
	IntervalMs int64
	// ReadMsgsPerSecond and ReadBytesPerSecond are
	// transactionCheckReadMsgsPerSecond and
	// transactionCheckReadBytesPerSecond.
	ReadMsgsPerSecond, ReadBytesPerSecond int64
	// BrokerName goes into every check as "bname".
	BrokerName string
}

// Offsets is the consumer offset table, where the rebuild floors live.
type Offsets interface {
	Query(group, topic string, queueID int32) int64
	Commit(group, topic string, queueID int32, offset int64)
}

// Conn is a producer connection a check is sent on.
type Conn interface {
	InvokeOneway(*remoting.Command) error
}

// Budget paces reads: Wait blocks until size bytes may be read at the
// rates (false when quit closes first), Charge counts what was read after
// a read whose size was not known before.
type Budget struct {
	Wait   func(size int64, rates func() (int64, int64), quit <-chan struct{}) bool
	Charge func(size, msgRate, byteRate int64)
}
