package timer

import (
	"fmt"
	"log/slog"
	"math"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

// Config configures a Service. Keys tagged prop are RocketMQ
// MessageStoreConfig keys with 5.3.3 defaults; the others are Spool's.
type Config struct {
	// StorePathRootDir is the store's root: the wheel file is
	// StorePathRootDir/timerwheel and the timer log StorePathRootDir/timerlog/.
	StorePathRootDir string `prop:"storePathRootDir"`
	// MaxDelaySec is the furthest ahead a timer may be set (timerMaxDelaySec,
	// 3 days).
	MaxDelaySec int64 `prop:"timerMaxDelaySec" live:"true"`
	// CongestNumEachSlot is the number of timers in one second above which
	// new timers for that second are refused at random, and at twice which
	// all are (timerCongestNumEachSlot, unlimited by default as in RocketMQ).
	CongestNumEachSlot int64 `prop:"timerCongestNumEachSlot" live:"true"`
	// LogFileSize is the size of one timer-log file (mappedFileSizeTimerLog,
	// 100 MiB); a multiple of the 32-byte entry.
	LogFileSize int64 `prop:"mappedFileSizeTimerLog"`
	// FlushIntervalMs is the period of the checkpoint that syncs the timer
	// log and replaces the wheel file (timerFlushIntervalMs, 1000); 0 or
	// less disables the periodic checkpoint (Checkpoint and Close still
	// write one).
	FlushIntervalMs int `prop:"timerFlushIntervalMs" live:"true"`
	// WheelSlots is the number of one-second slots of a new wheel; an
	// existing wheel file keeps the count it was created with. Zero means
	// MaxDelaySec + 3600. Timers further ahead than the wheel wait in their
	// slot for later rounds (rolled), so any value is correct.
	WheelSlots int `prop:"timerWheelSlots"`
	// ReadBytesPerSec budgets the background reads of rebuilding the wheel
	// from the timer topic's consume queue and of the recovery scan of the
	// CommitLog tail (Spool; 0 = unlimited).
	ReadBytesPerSec int64 `prop:"timerReadBytesPerSec" live:"true"`
	// DeliverWindow is the number of delivery puts in flight at once.
	DeliverWindow int `prop:"timerDeliverWindow"`
	// CommitLogFileSize is mappedFileSizeCommitLog, used by the recovery
	// scan to step over the blank tail of a CommitLog file. Zero asks the
	// store (a store with Config() store.Config).
	CommitLogFileSize int64

	// MasterCheckpoint is the checkpoint a slave copied from its master
	// (GET_TIMER_CHECK_POINT), used only when Start finds no wheel file: a
	// promoted slave then treats every timer due before its
	// LastReadTimeMs as delivered and searches the CommitLog for delivery
	// markers from its ScanFrom instead of from the start. It is ignored
	// without ScanFrom, or when the CommitLog ends before ScanFrom (the
	// deliveries it counts may not all be here).
	MasterCheckpoint *WireCheckpoint

	// FS is the file-system seam for the timer files (nil = vfs.Default).
	FS vfs.FS
	// Clock drives due times (nil = the wall clock).
	Clock clock.Clock
	// Logger receives warnings (nil = discard).
	Logger *slog.Logger
	// Deliver puts a due message into its real topic; the broker passes
	// its normal put path so topic checks, tag hash and statistics apply.
	// nil puts it with Store.PutMessage.
	Deliver DeliverFunc
}

// DeliverFunc stores msg (already rewritten to its real topic and queue)
// and calls done exactly once with the outcome. It must not block for
// long; done may be called inline or later from another goroutine.
type DeliverFunc func(msg *message.Inner, done func(store.PutResult))

// Store is the part of store.MessageStore the service uses.
type Store interface {
	PutMessage(msg *message.Inner, done func(store.PutResult))
	GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums int32, maxBytes int32, filter store.MessageFilter) *store.GetResult
	LookMessageByOffset(commitLogOffset int64) ([]byte, error)
	OnDispatch(fn func(topic string, queueID int32, maxOffset int64))
	MinPhyOffset() int64
	MaxPhyOffset() int64
	Stats() store.Stats
}

// DefaultConfig returns the RocketMQ 5.3.3 defaults.
func DefaultConfig() Config {
	return Config{
		MaxDelaySec:        3600 * 24 * 3,
		CongestNumEachSlot: math.MaxInt32,
		LogFileSize:        100 << 20,
		FlushIntervalMs:    1000,
		ReadBytesPerSec:    64 << 20,
		DeliverWindow:      256,
	}
}

func (c *Config) validate() error {
	switch {
	case c.StorePathRootDir == "":
		return fmt.Errorf("%w: storePathRootDir is empty", ErrConfig)
	case c.MaxDelaySec <= 0:
		return fmt.Errorf("%w: timerMaxDelaySec=%d must be positive", ErrConfig, c.MaxDelaySec)
	case c.LogFileSize < 4096 || c.LogFileSize%entrySize != 0:
		return fmt.Errorf("%w: mappedFileSizeTimerLog=%d must be at least 4096 and a multiple of %d", ErrConfig, c.LogFileSize, entrySize)
	case c.WheelSlots < 0:
		return fmt.Errorf("%w: timerWheelSlots=%d", ErrConfig, c.WheelSlots)
	case c.DeliverWindow < 0:
		return fmt.Errorf("%w: timerDeliverWindow=%d", ErrConfig, c.DeliverWindow)
	}
	return nil
}
