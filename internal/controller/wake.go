package controller

import (
	"time"

	"github.com/spoolmq/spool/internal/controller/replicas"
)

// masterWatch is what the scheduling decision reads of one broker set's
// master.
type masterWatch struct {
	// Live says the master is in the liveness table; Expiry is then when
	// it stops counting as alive (liveness.Info.Expiry).
	Live   bool
	Expiry time.Time
	// Timeout is the master's heartbeat timeout: a new leader elects for
	// it only that long after it began serving.
	Timeout time.Duration
}

// wakeInput is what the scheduling decision reads.
type wakeInput struct {
	// NextScan is the periodic scan's next time
	// (scanNotActiveBrokerInterval).
	NextScan time.Time
	// LastScan is when the last scan began (zero: none yet).
	LastScan time.Time
	// Serving says this controller is the serving leader; ServingSince
	// is when it was first seen serving.
	Serving      bool
	ServingSince time.Time
	// Masters are the masters of the elected broker sets.
	Masters []masterWatch
}

// nextWake is when the leader's scan must next run: the periodic scan,
// or earlier the first moment an election for a master can become due.
// For a master in the liveness table that is its expiry (its heartbeat
// timeout, or the shorter wait once its connection closed), but no
// earlier than the end of the new-leader grace (ServingSince plus the
// master's timeout); a past one is due at once (the scan drops an
// expired master, so this does not repeat). For a master already
// dropped, it is the end of that grace, unless the last scan began
// after it: that scan had its try, and the periodic scan retries, so a
// wake-up never repeats without progress. A non-leader wakes for the
// periodic scan only: it keeps its table and elects nothing. The result
// may be in the past: then the scan is due at once.
func nextWake(in wakeInput) time.Time {
	wake := in.NextScan
	if !in.Serving {
		return wake
	}
	for _, m := range in.Masters {
		at := in.ServingSince.Add(m.Timeout)
		switch {
		case m.Live && m.Expiry.After(at):
			at = m.Expiry
		case m.Live:
		case !in.LastScan.IsZero() && !at.After(in.LastScan):
			continue
		}
		if at.Before(wake) {
			wake = at
		}
	}
	return wake
}

// wakeInput gathers the scheduling decision's input from the applied
// state, the liveness table and the leadership seen.
func (c *Controller) wakeInput(nextScan time.Time) wakeInput {
	in := wakeInput{NextScan: nextScan, Serving: c.node.Serving()}
	c.termMu.Lock()
	in.LastScan = c.lastScan
	c.termMu.Unlock()
	if !in.Serving {
		return in
	}
	in.ServingSince = c.servingSince()
	c.node.Read(func(st *replicas.State, _ replicas.Controllers) {
		for _, name := range st.Names() {
			b := st.Set(name)
			if !b.HasMaster() || b.MasterEpoch == 0 {
				continue
			}
			m := masterWatch{Timeout: c.masterTimeout(b.ClusterName, name, b.MasterID)}
			if i, ok := c.live.Info(b.ClusterName, name, b.MasterID); ok {
				m.Live, m.Expiry = true, i.Expiry()
			}
			in.Masters = append(in.Masters, m)
		}
	})
	return in
}

// kickRun makes Run recompute its next wake-up (a master's connection
// closed, a master was elected, leadership changed).
func (c *Controller) kickRun() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}
