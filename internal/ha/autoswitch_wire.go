package ha

import (
	"encoding/binary"
	"fmt"
)

// RocketMQ 5's AutoSwitch HA protocol (controller mode), big-endian like
// the classic one. Every frame starts with the sender's connection state,
// HAConnectionState's ordinal: HANDSHAKE 1, TRANSFER 2.
//
// Slave to master:
//
//	handshake (16)                                   report (12)
//	0       4                  6              8          16   0       4           12
//	| state | syncFromLastFile | asyncLearner | brokerId |    | state | maxOffset |
//	| i32=1 | i16              | i16          | i64      |    | i32=2 | i64       |
//
// Master to slave:
//
//	handshake (20 + 12n)
//	0       4          8              16          20
//	| state | bodySize | maxPhyOffset | lastEpoch | n x (epoch i32, startOffset i64)
//	| i32=1 | i32=12n  | i64          | i32       |
//
//	transfer (36 + bodySize)
//	0       4          8        16      20                 28              36
//	| state | bodySize | offset | epoch | epochStartOffset | confirmOffset | CommitLog bytes ...
//	| i32=2 | i32      | i64    | i32   | i64              | i64           |
//
// A transfer never spans two epochs nor two CommitLog files; bodySize 0
// is a heartbeat. The slave's first report after the handshake is where
// the master starts (0: the master's first kept offset, or the start of
// its last file with syncFromLastFile).
const (
	StateHandshake int32 = 1
	StateTransfer  int32 = 2

	SwitchSlaveHandshakeSize  = 16
	SwitchReportSize          = 12
	SwitchMasterHandshakeSize = 20
	SwitchTransferHeaderSize  = 36
	EpochEntrySize            = 12
	// MaxHandshakeEpochs is how many epoch entries a master's handshake
	// carries at most (RocketMQ's buffer holds 1000).
	MaxHandshakeEpochs = 1000
)

// Epoch is one entry of an epoch table: a master epoch and the CommitLog
// offset its first byte was written at.
type Epoch struct {
	Epoch       int32
	StartOffset int64
}

// SlaveHandshake is the slave's handshake frame.
type SlaveHandshake struct {
	SyncFromLastFile bool
	AsyncLearner     bool
	BrokerID         int64
}

func flag(b bool) uint16 {
	if b {
		return 1
	}
	return 0
}

// PutSlaveHandshake writes h into b[:SwitchSlaveHandshakeSize].
func PutSlaveHandshake(b []byte, h SlaveHandshake) {
	binary.BigEndian.PutUint32(b, uint32(StateHandshake))
	binary.BigEndian.PutUint16(b[4:], flag(h.SyncFromLastFile))
	binary.BigEndian.PutUint16(b[6:], flag(h.AsyncLearner))
	binary.BigEndian.PutUint64(b[8:], uint64(h.BrokerID))
}

// ParseSlaveHandshake reads the 12 bytes after the state of a slave's
// handshake.
func ParseSlaveHandshake(rest []byte) SlaveHandshake {
	return SlaveHandshake{
		SyncFromLastFile: binary.BigEndian.Uint16(rest) == 1,
		AsyncLearner:     binary.BigEndian.Uint16(rest[2:]) == 1,
		BrokerID:         int64(binary.BigEndian.Uint64(rest[4:])),
	}
}

// PutSwitchReport writes a slave's report into b[:SwitchReportSize].
func PutSwitchReport(b []byte, maxOffset int64) {
	binary.BigEndian.PutUint32(b, uint32(StateTransfer))
	binary.BigEndian.PutUint64(b[4:], uint64(maxOffset))
}

// AppendMasterHandshake appends the master's handshake frame to dst.
func AppendMasterHandshake(dst []byte, maxPhyOffset int64, lastEpoch int32, epochs []Epoch) []byte {
	var h [SwitchMasterHandshakeSize]byte
	binary.BigEndian.PutUint32(h[:], uint32(StateHandshake))
	binary.BigEndian.PutUint32(h[4:], uint32(len(epochs)*EpochEntrySize))
	binary.BigEndian.PutUint64(h[8:], uint64(maxPhyOffset))
	binary.BigEndian.PutUint32(h[16:], uint32(lastEpoch))
	dst = append(dst, h[:]...)
	for _, e := range epochs {
		var b [EpochEntrySize]byte
		binary.BigEndian.PutUint32(b[:], uint32(e.Epoch))
		binary.BigEndian.PutUint64(b[4:], uint64(e.StartOffset))
		dst = append(dst, b[:]...)
	}
	return dst
}

// ParseMasterHandshake reads the 16 bytes after the state of a master's
// handshake header.
func ParseMasterHandshake(rest []byte) (bodySize int32, maxPhyOffset int64, lastEpoch int32) {
	return int32(binary.BigEndian.Uint32(rest)), int64(binary.BigEndian.Uint64(rest[4:])), int32(binary.BigEndian.Uint32(rest[12:]))
}

// ParseEpochs reads a master handshake's body.
func ParseEpochs(body []byte) ([]Epoch, error) {
	if len(body)%EpochEntrySize != 0 {
		return nil, fmt.Errorf("ha: handshake body of %d bytes is not a whole number of epoch entries", len(body))
	}
	out := make([]Epoch, 0, len(body)/EpochEntrySize)
	for p := 0; p < len(body); p += EpochEntrySize {
		out = append(out, Epoch{Epoch: int32(binary.BigEndian.Uint32(body[p:])), StartOffset: int64(binary.BigEndian.Uint64(body[p+4:]))})
	}
	return out, nil
}

// TransferHeader is a master's transfer header.
type TransferHeader struct {
	BodySize      int32
	Offset        int64
	Epoch         int32
	EpochStart    int64
	ConfirmOffset int64
}

// PutTransferHeader writes h into b[:SwitchTransferHeaderSize].
func PutTransferHeader(b []byte, h TransferHeader) {
	binary.BigEndian.PutUint32(b, uint32(StateTransfer))
	binary.BigEndian.PutUint32(b[4:], uint32(h.BodySize))
	binary.BigEndian.PutUint64(b[8:], uint64(h.Offset))
	binary.BigEndian.PutUint32(b[16:], uint32(h.Epoch))
	binary.BigEndian.PutUint64(b[20:], uint64(h.EpochStart))
	binary.BigEndian.PutUint64(b[28:], uint64(h.ConfirmOffset))
}

// ParseTransferHeader reads the 32 bytes after the state of a transfer
// header.
func ParseTransferHeader(rest []byte) TransferHeader {
	return TransferHeader{
		BodySize:      int32(binary.BigEndian.Uint32(rest)),
		Offset:        int64(binary.BigEndian.Uint64(rest[4:])),
		Epoch:         int32(binary.BigEndian.Uint32(rest[12:])),
		EpochStart:    int64(binary.BigEndian.Uint64(rest[16:])),
		ConfirmOffset: int64(binary.BigEndian.Uint64(rest[24:])),
	}
}

// epochRange is where epoch i of es holds bytes: [start, end), end the
// next entry's start or logEnd for the last one.
func epochRange(es []Epoch, i int, logEnd int64) (int64, int64) {
	if i+1 < len(es) {
		return es[i].StartOffset, es[i+1].StartOffset
	}
	return es[i].StartOffset, max(logEnd, es[i].StartOffset)
}

// epochAt is the index of the epoch holding offset (the last epoch holds
// everything from its start on), or -1.
func epochAt(es []Epoch, offset int64) int {
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].StartOffset <= offset {
			return i
		}
	}
	return -1
}
