package message

import (
	"errors"

	"github.com/spoolmq/spool/internal/corrupt"
)

// Errors returned by the decoders and encoders of this package. Decoding
// errors are wrapped with %w and a description of what was found; those
// about the bytes of a stored record (too short, bad magic, bad CRC, bad
// length) also match corrupt.ErrCorruption.
var (
	// ErrRecordTooShort: the bytes end before the record (or a field) does.
	ErrRecordTooShort = corrupt.New("message: record too short")
	// ErrBadMagic: the magic code is neither V1, V2 nor blank.
	ErrBadMagic = corrupt.New("message: bad magic code")
	// ErrBlankRecord: the blank marker at the end of a commit-log file.
	ErrBlankRecord = errors.New("message: blank end-of-file marker")
	// ErrBadCRC: the body CRC does not match the body.
	ErrBadCRC = corrupt.New("message: body CRC mismatch")
	// ErrBadLength: a length field is negative or disagrees with TOTALSIZE.
	ErrBadLength = corrupt.New("message: bad length field")
	// ErrPropertiesTooLong: the property string exceeds 32767 bytes.
	ErrPropertiesTooLong = errors.New("message: properties longer than 32767 bytes")
	// ErrTopicTooLong: the topic exceeds 127 bytes (V1 records only).
	ErrTopicTooLong = errors.New("message: topic longer than 127 bytes")
	// ErrBadHost: a host address is neither 4 nor 16 bytes.
	ErrBadHost = errors.New("message: host address is neither IPv4 nor IPv6")
	// ErrBodyTooLong: the body does not fit a record.
	ErrBodyTooLong = errors.New("message: body too long")
	// ErrBadBatch: a SEND_BATCH_MESSAGE body is malformed.
	ErrBadBatch = errors.New("message: bad batch body")
	// ErrBadMsgID: an offsetMsgId is not 32 or 56 hex characters.
	ErrBadMsgID = errors.New("message: bad offset message id")
	// ErrBadAddr: an "ip:port" string does not parse.
	ErrBadAddr = errors.New("message: bad address")
	// ErrInflatedTooLarge: an inflated body exceeds the limit.
	ErrInflatedTooLarge = errors.New("message: inflated body exceeds limit")
	// ErrBadCompressed: a compressed body is not a valid zlib stream.
	ErrBadCompressed = errors.New("message: body is not a valid zlib stream")
)
