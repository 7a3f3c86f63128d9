package index

import (
	"errors"

	"github.com/spoolmq/spool/internal/corrupt"
)

// Sentinel errors of the package.
var (
	// ErrCorrupt marks an index file whose size or header cannot be right;
	// it matches corrupt.ErrCorruption too.
	ErrCorrupt = corrupt.New("index: corrupt index file")
	// ErrClosed is returned by calls on a closed Service.
	ErrClosed = errors.New("index: service closed")
	// ErrBroken is returned by Put after a write to an index file failed:
	// the service stops building (queries keep working) until restart.
	ErrBroken = errors.New("index: building stopped after a write error")
)
