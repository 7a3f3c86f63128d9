package broker

import (
	"errors"

	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/processor"
)

// Sentinel errors. Request-level failures are answered with a response
// code and remark; these are for the broker's own API and for wrapping.
var (
	// ErrBadHeader marks a request whose ext fields are missing or malformed.
	ErrBadHeader = processor.ErrBadHeader
	// ErrBadBody marks a request whose body does not decode.
	ErrBadBody = processor.ErrBadBody
	// ErrAlreadyStarted is returned by a second Start.
	ErrAlreadyStarted = errors.New("broker already started")
	// ErrShutdown is returned once Shutdown has begun.
	ErrShutdown = errors.New("broker shut down")
	// ErrConfig marks an invalid broker configuration.
	ErrConfig = errors.New("invalid broker configuration")
	// ErrMetadata marks a metadata file (topics, groups, offsets) that
	// cannot be read or written.
	ErrMetadata = metadata.ErrMetadata
	// ErrRegister marks a failed registration with a name server.
	ErrRegister = errors.New("name server registration failed")
)
