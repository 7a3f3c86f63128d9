package timer

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// This file holds the checkpoint driver: it takes the wheel's image, syncs
// the timer log, waits for the CommitLog flush, replaces the wheel file and
// removes timer-log files nothing references.

// runCheckpoints writes a checkpoint every FlushIntervalMs of real time.
func (s *Service) runCheckpoints() {
	defer s.wg.Done()
	t := time.NewTicker(time.Duration(s.cfg.FlushIntervalMs) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
			if err := s.Checkpoint(); err != nil {
				s.logger.Error("timer: checkpoint failed", "err", err)
			}
		}
	}
}

// Checkpoint syncs the timer log and replaces the wheel file with a
// consistent image of the wheel, once the CommitLog is flushed past every
// delivery and timer record the image counts as done. A failed sync stops
// all later checkpoints (recovery then starts from the last good one).
func (s *Service) Checkpoint() error { return s.checkpoint(s.flushWait) }

// checkpoint waits at most wait for the CommitLog flush.
func (s *Service) checkpoint(wait time.Duration) error {
	s.ckMu.Lock()
	defer s.ckMu.Unlock()
	if p := s.ckErr.Load(); p != nil {
		return fmt.Errorf("timer: checkpoints stopped after an earlier failure: %s", *p)
	}
	if s.log == nil {
		return nil
	}
	s.mu.Lock()
	img, need, dead := s.w.image(s.log.end.Load(), time.Now().UnixMilli())
	s.mu.Unlock()
	fail := func(err error) error {
		msg := err.Error()
		s.ckErr.Store(&msg)
		return err
	}
	if err := s.log.sync(); err != nil {
		return fail(err)
	}
	if !s.waitFlushed(need, wait) {
		return nil // try again next time; nothing is lost by waiting
	}
	if err := saveWheelImage(s.fs, s.wheelPath, img.encode()); err != nil {
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			// A full disk passes: the last image stays valid and the
			// next checkpoint tries again (only a failed sync is final).
			s.ckNoSpace.Add(1)
			return err
		}
		return fail(err)
	}
	s.c.checkpoints.Add(1)
	s.ckLast.Store(img.savedAtMs)
	s.noteCheckpoint(img)
	for _, start := range dead {
		s.mu.Lock()
		gone := s.w.forgetFile(start)
		s.mu.Unlock()
		if gone {
			if err := s.log.remove(start); err != nil {
				s.logger.Warn("timer: removing a delivered timer-log file failed", "err", err)
			}
		}
	}
	return nil
}

// waitFlushed waits (real time, at most wait) until the CommitLog is
// flushed to at least off.
func (s *Service) waitFlushed(off int64, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		st := s.st.Stats()
		if st.CommitLogFlushed >= off || st.CommitLogMax < off {
			return st.CommitLogFlushed >= off
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(flushWaitPoll)
	}
}

// Close stops the service and writes a last checkpoint.
func (s *Service) Close() error {
	var err error
	s.closed.Do(func() {
		if s.state.Swap(stateClosed) != stateRunning {
			return
		}
		close(s.quit)
		s.wg.Wait()
		err = s.checkpoint(min(s.flushWait, closeFlushWait))
		err = errors.Join(err, s.log.close())
	})
	return err
}

// kill stops the service as a crash would: no checkpoint, files closed
// without syncing (tests).
func (s *Service) kill() {
	s.closed.Do(func() {
		if s.state.Swap(stateClosed) != stateRunning {
			return
		}
		close(s.quit)
		s.wg.Wait()
		s.log.close()
	})
}
