package namesrv

import "errors"

// Sentinel errors of the name server. Callers match them with errors.Is;
// they are wrapped with %w and the detail (field, topic, file) that caused
// them.
var (
	// ErrMissingField: a request lacks an ext field the code requires.
	ErrMissingField = errors.New("namesrv: missing required field")
	// ErrBadField: an ext field is present but not valid (number, address).
	ErrBadField = errors.New("namesrv: invalid field")
	// ErrCRCMismatch: REGISTER_BROKER carried a non-zero bodyCrc32 that does
	// not match the body.
	ErrCRCMismatch = errors.New("namesrv: crc32 not match")
	// ErrBadRegisterBody: a registration body (JSON or the compressed form)
	// could not be decoded.
	ErrBadRegisterBody = errors.New("namesrv: malformed register broker body")
	// ErrBadKVConfigFile: the KV-config file exists but is not valid JSON of
	// the expected shape. The server refuses to start rather than overwrite it.
	ErrBadKVConfigFile = errors.New("namesrv: malformed kv config file")
	// ErrClosed: the server has been shut down.
	ErrClosed = errors.New("namesrv: server closed")
)
