package transport

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// The loops' watchdog. A run whose unit of work (a frame's dispatch or a
// pass's end) has been under way longer than loopStallLimit is displaced
// (eventLoop.displace) unless its goroutine is only waiting for a core: a
// goroutine dump says which. Displacing a run that waits for a core helps
// nobody (the new run waits for the same cores) and sends the loop's
// requests to the executors' workers until the old run's unit ends; on a
// saturated two-core machine every displacement seen had the loop's
// goroutine runnable.

// watchDumpBuf bounds the goroutine dump the watchdog reads a run's state
// from; a run whose goroutine is not within it is displaced.
const watchDumpBuf = 1 << 20

// watchLoops is the server's watchdog over its loops. It ends when stop is
// closed.
func watchLoops(loops []*eventLoop, wg *sync.WaitGroup, stop <-chan struct{}) {
	t := time.NewTicker(loopStallCheck)
	defer t.Stop()
	seen := make([]unitSeen, len(loops))
	var dump []byte
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			for i, l := range loops {
				r := l.active.Load()
				if r == nil {
					continue
				}
				s := &seen[i]
				held := s.held(r, r.unit.Load(), now)
				if held <= loopStallLimit || now.Before(s.askAgain) {
					continue
				}
				if dump == nil {
					dump = make([]byte, watchDumpBuf)
				}
				state, found := goroutineState(dump[:runtime.Stack(dump, true)], r.gid.Load())
				if found && waitsForCore(state) {
					// Looked at again after another limit: a unit
					// that then waits for something is displaced.
					s.askAgain = now.Add(loopStallLimit)
					l.s.logger.Warn("remoting: an event loop's unit of work waited for a core; not displaced",
						"held", held.Round(time.Millisecond), "state", state)
					continue
				}
				if !found {
					state = "unknown"
				}
				l.displace(r, wg, state)
			}
		}
	}
}

// unitSeen is what the watchdog saw of a loop: the run and the unit under
// way at its last look, when it first saw that unit, and, for a unit
// found waiting for a core, when to look at its state again.
type unitSeen struct {
	run      *loopRun
	unit     uint64
	at       time.Time
	askAgain time.Time
}

// held returns how long the unit under way (odd unit) has been seen under
// way as of now: 0 between units and for a unit seen for the first time.
// A unit is seen within loopStallCheck of its start, so one held past
// loopStallLimit began at most that much earlier; a long pass of many
// short frames is no unit held.
func (s *unitSeen) held(r *loopRun, unit uint64, now time.Time) time.Duration {
	if unit&1 == 0 {
		*s = unitSeen{}
		return 0
	}
	if s.run != r || s.unit != unit {
		*s = unitSeen{run: r, unit: unit, at: now}
		return 0
	}
	return now.Sub(s.at)
}

// waitsForCore says a goroutine in state (as a goroutine dump writes it)
// is ready to run and waiting for the scheduler to give it a core.
func waitsForCore(state string) bool {
	return state == "runnable" || state == "preempted"
}

// goroutineState finds goroutine id's header in dump (runtime.Stack's
// "goroutine 7 [chan receive, 2 minutes]:", possibly with the runtime's
// own fields before the bracket) and returns its state: the bracket's
// text up to the first comma.
func goroutineState(dump []byte, id uint64) (string, bool) {
	if id == 0 {
		return "", false
	}
	head := []byte("goroutine " + strconv.FormatUint(id, 10) + " ")
	for off := 0; off < len(dump); {
		i := bytes.Index(dump[off:], head)
		if i < 0 {
			return "", false
		}
		i += off
		off = i + len(head)
		if i > 0 && dump[i-1] != '\n' {
			continue // another goroutine's "created by ... in goroutine N"
		}
		line := dump[off:]
		if nl := bytes.IndexByte(line, '\n'); nl >= 0 {
			line = line[:nl]
		}
		open := bytes.IndexByte(line, '[')
		end := bytes.IndexByte(line, ']')
		if open < 0 || end < open {
			return "", false
		}
		state := line[open+1 : end]
		if c := bytes.IndexByte(state, ','); c >= 0 {
			state = state[:c]
		}
		return string(state), true
	}
	return "", false
}

// curGoroutineID returns the calling goroutine's number as goroutine
// dumps write it (0 if it cannot be read).
func curGoroutineID() uint64 {
	var b [64]byte
	s := b[:runtime.Stack(b[:], false)]
	s, ok := bytes.CutPrefix(s, []byte("goroutine "))
	if !ok {
		return 0
	}
	if sp := bytes.IndexByte(s, ' '); sp >= 0 {
		s = s[:sp]
	}
	id, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil {
		return 0
	}
	return id
}
