package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// ReportSize is the size of a slave's offset report: its CommitLog end as
// a big-endian int64.
const ReportSize = 8

// HeaderSize is the size of a master's transfer header: the physical
// offset of the first byte (int64) and the body size (int32), big-endian.
const HeaderSize = 12

// RocketMQ's defaults (MessageStoreConfig) for the keys this package reads.
const (
	DefaultSendHeartbeatInterval = 5 * time.Second
	DefaultHousekeepingInterval  = 20 * time.Second
	DefaultTransferBatchSize     = 32 << 10
	DefaultMaxGapNotInSync       = 256 << 20
	DefaultSlaveTimeout          = 3 * time.Second
	// DefaultMaxTransferBytesPerSecond is maxHaTransferByteInSecond.
	DefaultMaxTransferBytesPerSecond = 100 << 20
	// DefaultReconnectInterval is how long a slave waits before it dials
	// its master again after a connection ended (RocketMQ: 5 s); in
	// controller mode it is the cap of ReconnectDelay's backoff.
	DefaultReconnectInterval = 5 * time.Second
	// FirstReconnectDelay is a controller-mode slave's first wait after a
	// connection ended: a slave told of a new master often dials it while
	// it is still becoming master and is turned away.
	FirstReconnectDelay = 100 * time.Millisecond
)

// ReconnectDelay is how long a controller-mode slave waits before its
// next dial after fails (≥ 1) consecutive attempts that each ended
// within maxWait: FirstReconnectDelay, doubled per failure, at most
// maxWait.
func ReconnectDelay(fails int, maxWait time.Duration) time.Duration {
	d := FirstReconnectDelay
	for i := 1; i < fails && d < maxWait; i++ {
		d *= 2
	}
	return min(d, maxWait)
}

// PutReport writes a slave's offset report into b[:ReportSize].
func PutReport(b []byte, maxOffset int64) {
	binary.BigEndian.PutUint64(b, uint64(maxOffset))
}

// ParseReport reads a slave's offset report from b[:ReportSize].
func ParseReport(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }

// PutHeader writes a transfer header into b[:HeaderSize].
func PutHeader(b []byte, offset int64, bodySize int32) {
	binary.BigEndian.PutUint64(b, uint64(offset))
	binary.BigEndian.PutUint32(b[8:], uint32(bodySize))
}

// ParseHeader reads a transfer header from b[:HeaderSize].
func ParseHeader(b []byte) (offset int64, bodySize int32) {
	return int64(binary.BigEndian.Uint64(b)), int32(binary.BigEndian.Uint32(b[8:]))
}

// ErrOffsetMismatch is wrapped by the error a slave stops with when a
// transfer does not start at its own CommitLog end.
var ErrOffsetMismatch = errors.New("ha: transfer offset does not match the slave's CommitLog end")

// MismatchError names the offset a transfer claimed and the slave's end.
type MismatchError struct {
	Offset int64 // the transfer's physical offset
	End    int64 // the slave's CommitLog end
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("ha: the master sent bytes for CommitLog offset %d but this slave's CommitLog ends at %d; replication stopped (the logs differ)", e.Offset, e.End)
}

// Unwrap makes errors.Is(err, ErrOffsetMismatch) hold.
func (e *MismatchError) Unwrap() error { return ErrOffsetMismatch }
