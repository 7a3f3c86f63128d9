package store

import (
	"errors"
	"syscall"

	"github.com/spoolmq/spool/internal/corrupt"
)

// Sentinel errors of the store. Errors returned by the store wrap one of
// these; corruption errors also wrap ErrCorrupt.
var (
	// ErrCorrupt marks data that failed validation where it must be valid;
	// it matches corrupt.ErrCorruption too.
	ErrCorrupt = corrupt.New("store: corruption")
	// ErrNotBuilt names a part of the store that does not exist yet.
	ErrNotBuilt = errors.New("store: not built")
	// ErrClosed is returned after Shutdown.
	ErrClosed = errors.New("store: closed")
	// ErrReadOnly is returned once an fsync failed: nothing more is written
	// until restart.
	ErrReadOnly = errors.New("store: read-only after a failed fsync")
	// ErrLocked is returned when another process holds the store lock.
	ErrLocked = errors.New("store: directory locked by another process")
	// ErrConfig reports an invalid configuration.
	ErrConfig = errors.New("store: invalid configuration")
	// errWouldWait is a read made not to wait that would have waited for
	// the device (GetMessageNoWait).
	errWouldWait = errors.New("store: the read would wait for the device")
	// ErrOffsetNotFound is returned for a commit-log offset that holds no
	// record.
	ErrOffsetNotFound = errors.New("store: no record at offset")
	// ErrFileGone is returned when a file was deleted or truncated under a
	// reader.
	ErrFileGone = errors.New("store: file removed or truncated")
	// ErrFault is returned when reading mapped memory faulted.
	ErrFault = errors.New("store: memory fault reading a mapped file")
	// ErrSpillFull is returned when the in-memory spill is full.
	ErrSpillFull = errors.New("store: write spill full")
)

// isNoSpace reports whether err is a full disk or an exhausted quota: a
// condition that passes when space returns, retried with a back-off, not
// a reason to stop writing until restart. A failed fsync is never one of
// these: its error is reported as it came and stays fatal to writes.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
