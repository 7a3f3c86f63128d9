// Package delaylevel owns the parsing of messageDelayLevel, the table of
// delay levels (level n delays a message by the n-th duration), for the
// two readers of that one key: the broker's schedule service, which
// delivers delayed messages, and the store's dispatcher, which writes each
// delayed message's delivery time into its consume-queue entry. Both once
// parsed it with rules of their own; this leaf holds the one rule so that
// they can never disagree about a level.
//
// The rule, against RocketMQ's (ScheduleMessageService.parseDelayLevel:
// the value split on single spaces, each entry a Long followed by one unit
// of s, m, h or d, a bad entry failing the broker's start):
//
//   - an empty value means Default; RocketMQ fails to start on it.
//   - entries are separated by any run of white space; RocketMQ splits on
//     single spaces, so two spaces or a tab fail its start.
//   - a negative number is refused; RocketMQ takes it (a message delayed
//     by a negative time is due at once).
//   - at most MaxLevels entries, the queues of the schedule topic; RocketMQ
//     has no limit.
//
// Every value RocketMQ starts with and that Spool accepts gives the same
// table. It imports nothing of Spool and must never do.
package delaylevel

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Default is RocketMQ's messageDelayLevel default.
const Default = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

// MaxLevels is how many levels a table may have: the schedule topic has
// one queue per level, 18 of them.
const MaxLevels = 18

// ErrBadLevels marks a messageDelayLevel value Parse refuses; its text is
// the key's name, so that the errors read "messageDelayLevel entry ...".
var ErrBadLevels = errors.New("messageDelayLevel")

var units = [256]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}

// Parse reads a messageDelayLevel value ("1s 5s 10s 30s 1m ... 2h"): the
// i-th duration is the delay of level i+1. Errors wrap ErrBadLevels.
func Parse(s string) ([]time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		s = Default
	}
	var out []time.Duration
	for _, f := range strings.Fields(s) {
		if len(f) < 2 {
			return nil, fmt.Errorf("%w entry %q", ErrBadLevels, f)
		}
		unit := units[f[len(f)-1]]
		n, err := strconv.ParseInt(f[:len(f)-1], 10, 64)
		if unit == 0 || err != nil || n < 0 {
			return nil, fmt.Errorf("%w entry %q (want a number with unit s, m, h or d)", ErrBadLevels, f)
		}
		out = append(out, time.Duration(n)*unit)
	}
	if len(out) > MaxLevels {
		return nil, fmt.Errorf("%w has %d levels, at most %d are supported", ErrBadLevels, len(out), MaxLevels)
	}
	return out, nil
}

// Millis is the delay of level in milliseconds: 0 for a level <= 0 or an
// empty table, the last level's for a level past the table.
func Millis(levels []time.Duration, level int) int64 {
	if level <= 0 || len(levels) == 0 {
		return 0
	}
	return levels[min(level, len(levels))-1].Milliseconds()
}
