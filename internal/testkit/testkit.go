// Package testkit owns the set-ups Spool's tests share: the shapes of a
// test store (StoreConfig) and the manual clocks tests start from.
// Started brokers are in internal/testkit/brokerkit.
//
// Only tests import it; it must not import the broker (the broker's own
// tests use it) nor be imported by a non-test file (internal/layering
// checks both). The store's in-package tests cannot import it, since it
// imports the store: they keep their own copy of the Small shape.
package testkit

import (
	"path/filepath"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/store"
)

// Size is the shape of a test store.
type Size int

const (
	// Small is 64 KiB CommitLog files, 100-entry consume-queue files,
	// flushes every 10 ms (CommitLog) and 20 ms (consume queues) and a
	// 1000-slot index: file ends and rolls come within a few hundred
	// messages (the store's and the timing wheel's scenarios).
	Small Size = iota
	// Medium is 16 MiB CommitLog files, 1000-entry consume-queue files, a
	// 1000-slot index, an 8 MiB write spill and one preallocated file: a
	// broker under unit tests.
	Medium
	// Large is 64 MiB CommitLog files, 30000-entry consume-queue files and
	// a 50000-slot index: a broker under the incident scenarios' load.
	Large
)

// StoreConfig is RocketMQ's default store configuration rooted at dir
// (CommitLog under dir/commitlog) with the files of the given shape.
func StoreConfig(dir string, size Size) store.Config {
	c := store.DefaultConfig()
	c.StorePathRootDir = dir
	c.StorePathCommitLog = filepath.Join(dir, "commitlog")
	switch size {
	case Small:
		c.MappedFileSizeCommitLog = 64 << 10
		c.MappedFileSizeConsumeQueue = 100 * store.CQEntrySize
		c.FlushIntervalCommitLog = 10
		c.FlushIntervalConsumeQueue = 20
		c.MaxHashSlotNum = 1000
		c.MaxIndexNum = 4000
		c.SyncFlushTimeout = 5000
	case Medium:
		c.MappedFileSizeCommitLog = 16 << 20
		c.MappedFileSizeConsumeQueue = 1000 * store.CQEntrySize
		c.MaxHashSlotNum = 1000
		c.MaxIndexNum = 4000
		c.WriteSpillSize = 8 << 20
		c.PreallocateFiles = 1
	case Large:
		c.MappedFileSizeCommitLog = 64 << 20
		c.MappedFileSizeConsumeQueue = 30000 * store.CQEntrySize
		c.MaxHashSlotNum = 50000
		c.MaxIndexNum = 200000
	}
	return c
}

// Epoch is the instant Clock starts at: 2026-01-01 10:00 local time (a
// working hour, away from RocketMQ's deleteWhen hour).
var Epoch = time.Date(2026, 1, 1, 10, 0, 0, 0, time.Local)

// Clock is a manual clock standing at Epoch.
func Clock() *clock.Manual { return clock.NewManual(Epoch) }

// ClockAhead is a manual clock standing d after the wall clock's now: for
// tests whose records carry wall-clock stamps (born and store times) and
// whose services must see them as d old.
func ClockAhead(d time.Duration) *clock.Manual { return clock.NewManual(time.Now().Add(d)) }
