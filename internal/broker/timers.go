package broker

import (
	"fmt"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/timer"
	"github.com/spoolmq/spool/message"
)

// startTimers opens and starts the timing wheel when timerWheelEnable is
// set (after the store has started).
func (b *Broker) startTimers() error {
	cfg := b.config()
	if !cfg.TimerWheelEnable || b.isSlave() { // a slave's log holds only its master's bytes
		return nil
	}
	tc := cfg.Timer
	tc.StorePathRootDir = b.storeConfig().StorePathRootDir
	tc.CommitLogFileSize = b.storeConfig().MappedFileSizeCommitLog
	tc.Logger = b.logger.With("service", "timer")
	tc.Deliver = b.deliverTimer
	svc, err := timer.New(tc, b.store)
	if err != nil {
		return fmt.Errorf("timer wheel: %w", err)
	}
	if err := svc.Start(); err != nil {
		return fmt.Errorf("timer wheel: %w", err)
	}
	b.timers = svc
	return nil
}

// deliverTimer stores a due timer message in its real topic.
func (b *Broker) deliverTimer(m *message.Inner, done func(store.PutResult)) {
	b.store.PutMessage(m, func(r store.PutResult) {
		b.stats.countPut(m.Topic, r)
		done(r)
	})
}

// closeTimers stops the timing wheel (before the store shuts down).
func (b *Broker) closeTimers() error {
	if b.timers == nil {
		return nil
	}
	if err := b.timers.Close(); err != nil {
		return fmt.Errorf("timer wheel close: %w", err)
	}
	return nil
}

// applyTimerLive passes the live timer keys of cfg to the wheel.
func (b *Broker) applyTimerLive(cfg *Config) {
	if b.timers != nil {
		b.timers.SetLive(cfg.Timer.MaxDelaySec, cfg.Timer.CongestNumEachSlot, cfg.Timer.ReadBytesPerSec)
	}
}

// TimerStats returns the timing wheel's figures; false when it is off.
func (b *Broker) TimerStats() (timer.Stats, bool) {
	if b.timers == nil {
		return timer.Stats{}, false
	}
	return b.timers.Stats(), true
}
