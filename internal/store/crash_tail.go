package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spoolmq/spool/internal/vfs"
)

// DroppedTail is what DropUnflushedTail removed from a store directory.
type DroppedTail struct {
	// Checkpoint is the store's own record of what was durable, read from
	// storePathRootDir/checkpoint.
	Checkpoint Checkpoint
	// From is the CommitLog offset zeroed from (the checkpoint's
	// physicFlushedOffset).
	From int64
	// Bytes counts the non-zero CommitLog bytes at or past From that were
	// zeroed: 0 when the stopped store had nothing unflushed.
	Bytes int64
}

// DropUnflushedTail rewrites the CommitLog of a store that no process has
// open (one killed with SIGKILL) as a power cut could leave it: a process
// kill keeps the page cache, so such a store still holds every byte it
// wrote, and this drops what the store does not itself record as durable.
// Every CommitLog byte at or past the checkpoint's physicFlushedOffset
// becomes zero (files keep their names and sizes: they were created,
// allocated and synced before any record went into them). The consume
// queues, the index and the checkpoint stay as they are: recovery after a
// crash trusts the queues only below the checkpoint's dispatched offset,
// cuts them at the recovered CommitLog end and re-dispatches, and the
// checkpoint claims nothing past what it flushed. Files replaced
// atomically (the epoch file, metadata, offsets) were synced when written
// and stay too.
//
// The checkpoint is written every flushIntervalConsumeQueue, so bytes
// flushed after it are dropped as well: the cut is the oldest a power cut
// after that checkpoint could leave. Under ASYNC_FLUSH the store claims
// nothing durable past it; under SYNC_FLUSH puts answered after it
// (synced) are dropped too, which no power cut would do. It is the crash
// model of a store on a real disk in another process, for tests
// (vfs.FaultFS.Crash is the exact one of a store in the test's own
// process). Nothing is synced. A store without a checkpoint is refused.
func DropUnflushedTail(fs vfs.FS, cfg Config) (DroppedTail, error) {
	if fs == nil {
		fs = vfs.Default
	}
	cp, ok, err := readCheckpoint(fs, cfg.checkpointPath())
	if err != nil {
		return DroppedTail{}, err
	}
	if !ok {
		return DroppedTail{}, fmt.Errorf("store: %s: no checkpoint to read the flushed offset from", cfg.StorePathRootDir)
	}
	d := DroppedTail{Checkpoint: cp, From: cp.PhysicFlushedOffset}
	dir := cfg.commitLogDir()
	names, err := fs.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return d, fmt.Errorf("store: list %s: %w", dir, err)
	}
	buf := make([]byte, 256<<10)
	for _, n := range names {
		from, ok := parseFileName(n)
		if !ok {
			continue
		}
		path := filepath.Join(dir, n)
		fi, err := fs.Stat(path)
		if err != nil {
			return d, fmt.Errorf("store: stat %s: %w", path, err)
		}
		if from+fi.Size() <= d.From {
			continue
		}
		f, err := fs.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return d, fmt.Errorf("store: open %s: %w", path, err)
		}
		zeroed, err := zeroNonZero(f, max(d.From-from, 0), fi.Size(), buf)
		d.Bytes += zeroed
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return d, fmt.Errorf("store: drop the unflushed tail of %s: %w", path, err)
		}
	}
	return d, nil
}

// zeroNonZero zeroes f over [from, to), writing only where it is not
// zero already, and returns how many non-zero bytes it found.
func zeroNonZero(f vfs.File, from, to int64, buf []byte) (int64, error) {
	var found int64
	for off := from; off < to; off += int64(len(buf)) {
		b := buf[:min(int64(len(buf)), to-off)]
		if _, err := f.ReadAt(b, off); err != nil {
			return found, err
		}
		if allZero(b) {
			continue
		}
		for _, x := range b {
			if x != 0 {
				found++
			}
		}
		clear(b)
		if _, err := f.WriteAt(b, off); err != nil {
			return found, err
		}
	}
	return found, nil
}
