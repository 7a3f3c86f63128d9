package broker

import (
	"fmt"

	"github.com/spoolmq/spool/internal/schedule"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/timer"
	"github.com/spoolmq/spool/internal/transaction"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

// putMessage stores a message from the send and END_TRANSACTION paths.
// A half message is indexed for the check service before done runs, so
// the producer cannot end a transaction the index does not know yet. A
// timer message (TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS, no
// DELAY level) goes to the timing wheel. It returns an error, and does not
// call done, when the timing wheel refuses the message; answer
// timer.ResponseCode(err) with remark err.Error().
func (b *Broker) putMessage(m *message.Inner, done func(store.PutResult)) error {
	if m.Topic == topicTransHalf {
		b.putHalf(m, done)
		return nil
	}
	if b.timers != nil && timer.HasTimerProperty(m.Properties) {
		ok, err := b.timers.Schedule(m, done)
		if err != nil || ok {
			return err
		}
	}
	b.store.PutMessage(m, done)
	return nil
}

// putHalf stores a half message and indexes it before done runs.
func (b *Broker) putHalf(m *message.Inner, done func(store.PutResult)) {
	idx := b.txCheck.Index()
	id := idx.BeginPut(b.store.MaxOffsetInQueue(topicTransHalf, 0), b.store.MaxOffsetInQueue(topicTransOpHalf, 0))
	b.store.PutMessage(m, func(r store.PutResult) {
		if r.Status == store.PutOK || r.Status == store.FlushDiskTimeout {
			idx.EndPut(id, transaction.PendingFromPut(m, r))
		} else {
			idx.EndPut(id, nil)
		}
		done(r)
	})
}

// timerRefusal is the answer to a timer message when the wheel is off.
func (b *Broker) timerRefusal(props map[string]string) (int32, string, bool) {
	if b.timers != nil || !hasTimerProperty(props) {
		return 0, "", false
	}
	return remoting.SystemError, "accurate timer message is not enabled, timerWheelEnable is false", true
}

// stripMarkers removes the delivery markers of the delay and timer
// services from a message a client sent: only the broker writes them.
func stripMarkers(props map[string]string) {
	delete(props, schedule.PropertyDelaySource)
	delete(props, timer.PropertyTimerSource)
}

// startTimers opens and starts the timing wheel when timerWheelEnable is
// set (after the store has started).
func (b *Broker) startTimers() error {
	cfg := b.config()
	if !cfg.TimerWheelEnable {
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
