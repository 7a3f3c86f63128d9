package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/timer"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// startTimers opens and starts the timing wheel when timerWheelEnable is
// set (after the store has started). A slave's log holds only its
// master's bytes: it runs no wheel. In controller mode the wheel starts
// and stops with the master role (startMasterServices).
func (b *Broker) startTimers() error {
	cfg := b.config()
	if !cfg.TimerWheelEnable || b.isSlave() || cfg.EnableControllerMode {
		return nil
	}
	b.roleMu.Lock()
	defer b.roleMu.Unlock()
	return b.openWheel()
}

// newWheel builds a timing wheel over the broker's store and timer files
// (not started).
func (b *Broker) newWheel() (*timer.Service, error) {
	tc := b.config().Timer
	tc.StorePathRootDir = b.storeConfig().StorePathRootDir
	tc.CommitLogFileSize = b.storeConfig().MappedFileSizeCommitLog
	tc.Logger = b.logger.With("service", "timer")
	tc.Deliver = b.deliverTimer
	tc.MasterCheckpoint = b.copiedTimerCheckpoint()
	svc, err := timer.New(tc, b.store)
	if err != nil {
		return nil, fmt.Errorf("timer wheel: %w", err)
	}
	return svc, nil
}

// openWheel starts a new timing wheel from the timer files (cut with the
// CommitLog by any truncation since the last one closed) or, without
// them, from the master's checkpoint this broker copied; b.roleMu held.
func (b *Broker) openWheel() error {
	svc, err := b.newWheel()
	if err != nil {
		return err
	}
	if err := svc.Start(); err != nil {
		return fmt.Errorf("timer wheel: %w", err)
	}
	b.timers.Store(svc)
	b.wheelOn = true
	return nil
}

// closeWheel stops the running wheel with a last checkpoint; b.roleMu
// held. The closed wheel stays b.wheel(): it refuses timer messages as
// not running, answers GET_TIMER_CHECK_POINT with its last checkpoint
// and cuts its files on a truncation.
func (b *Broker) closeWheel() error {
	if !b.wheelOn {
		return nil
	}
	b.wheelOn = false
	if err := b.wheel().Close(); err != nil {
		return fmt.Errorf("timer wheel close: %w", err)
	}
	return nil
}

// wheel is the timing wheel: the running one, or the one that ran last
// (closed); nil when none ran.
func (b *Broker) wheel() *timer.Service { return b.timers.Load() }

// truncateWheel cuts the timer state at offset after a CommitLog
// truncation: the running wheel's, or the files of a wheel that does not
// run (closed before the role change, or never started by this process).
func (b *Broker) truncateWheel(offset int64) error {
	b.roleMu.Lock()
	defer b.roleMu.Unlock()
	w := b.wheel()
	if w == nil {
		if !b.config().TimerWheelEnable {
			return nil
		}
		var err error
		if w, err = b.newWheel(); err != nil {
			return err
		}
	}
	return w.TruncateTo(offset)
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
	b.roleMu.Lock()
	defer b.roleMu.Unlock()
	return b.closeWheel()
}

// applyTimerLive passes the live timer keys of cfg to the wheel.
func (b *Broker) applyTimerLive(cfg *Config) {
	if w := b.wheel(); w != nil {
		w.SetLive(cfg.Timer.MaxDelaySec, cfg.Timer.CongestNumEachSlot, cfg.Timer.ReadBytesPerSec)
	}
}

// TimerStats returns the timing wheel's figures; false when it is off.
func (b *Broker) TimerStats() (timer.Stats, bool) {
	w := b.wheel()
	if w == nil {
		return timer.Stats{}, false
	}
	return w.Stats(), true
}

// TimerCheckFile is the copy of its master's timer checkpoint a slave
// keeps, under storePathRootDir/config (RocketMQ's timercheck name), in
// the GET_TIMER_CHECK_POINT body's form.
const TimerCheckFile = "timercheck"

// handleGetTimerCheckPoint answers GET_TIMER_CHECK_POINT (60) with the
// timing wheel's last checkpoint in RocketMQ's TimerCheckpoint body (and
// Spool's scanFrom after it); without one, SYSTEM_ERROR as RocketMQ.
func (b *Broker) handleGetTimerCheckPoint(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	if w := b.wheel(); w != nil {
		if ck, ok := w.LastCheckpoint(); ok {
			resp := remoting.NewResponse(req, remoting.Success, "")
			resp.Body = ck.Encode()
			return resp
		}
	}
	return remoting.NewResponse(req, remoting.SystemError, "The checkpoint is null")
}

// syncTimerCheckpoint copies the master's timer checkpoint, keeping it in
// storePathRootDir/config/timercheck when it changed. A master without
// one (its wheel off, or no checkpoint written yet) and a master that does
// not know the request leave the copy as it is.
func (b *Broker) syncTimerCheckpoint(addr string) error {
	ctx, cancel := context.WithTimeout(b.registrar.base, 10*time.Second)
	defer cancel()
	resp, err := b.registrar.client.Invoke(ctx, addr, remoting.NewRequest(remoting.GetTimerCheckPoint, nil, nil))
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success {
		return nil
	}
	ck, err := timer.DecodeWireCheckpoint(resp.Body)
	if err != nil {
		return fmt.Errorf("GET_TIMER_CHECK_POINT: %w", err)
	}
	if old := b.timerCopy.Load(); old != nil && *old == ck {
		return nil
	}
	path := filepath.Join(b.storeConfig().StorePathRootDir, "config", TimerCheckFile)
	if err := metadata.WriteFileAtomic(path, ck.Encode()); err != nil {
		return fmt.Errorf("keep the master's timer checkpoint: %w", err)
	}
	b.timerCopy.Store(&ck)
	return nil
}

// copiedTimerCheckpoint reads the master's timer checkpoint this broker
// copied while it was a slave (nil when there is none or it is unreadable:
// the wheel then starts as without one). The wheel uses it only when it
// finds no wheel file of its own.
func (b *Broker) copiedTimerCheckpoint() *timer.WireCheckpoint {
	path := filepath.Join(b.storeConfig().StorePathRootDir, "config", TimerCheckFile)
	body, err := os.ReadFile(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			b.logger.Warn("timer: the copied master checkpoint is unreadable; ignored", "file", path, "err", err)
		}
		return nil
	}
	ck, err := timer.DecodeWireCheckpoint(body)
	if err != nil {
		b.logger.Warn("timer: the copied master checkpoint is unreadable; ignored", "file", path, "err", err)
		return nil
	}
	return &ck
}
