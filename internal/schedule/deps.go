package schedule

import (
	"log/slog"
	"time"

	"github.com/spoolmq/spool/internal/store"
)

// Deps are what the schedule service takes from the broker that builds it.
type Deps struct {
	// Store is read for the schedule queues and written with deliveries
	// (the broker's store, opened after the service is built).
	Store func() store.MessageStore
	// StoreConfig is the store's current configuration (the CommitLog's
	// file size bounds a recovery read).
	StoreConfig func() *store.Config
	// DelayLevels are the parsed messageDelayLevel durations, level 1 first.
	DelayLevels []time.Duration
	// Topic is SCHEDULE_TOPIC_XXXX.
	Topic string
	// Path is config/delayOffset.json.
	Path string
	// CountPut counts a delivery in the broker's put figures.
	CountPut func(topic string, r store.PutResult)
	// RecoveryBudget paces the start-up recovery scan; one per scan.
	RecoveryBudget func() Budget
	Logger         *slog.Logger
}

// Budget paces reads: Wait blocks until size bytes may be read at the
// rates (false when quit closes first), Charge counts what was read.
type Budget struct {
	Wait   func(size int64, rates func() (int64, int64), quit <-chan struct{}) bool
	Charge func(size, msgRate, byteRate int64)
}
