package timer

import (
	"encoding/binary"
	"fmt"
)

// WireCheckpoint is a timer checkpoint in RocketMQ's TimerCheckpoint form,
// the body of GET_TIMER_CHECK_POINT (60): seven big-endian int64s
// (lastReadTimeMs, lastTimerLogFlushPos, lastTimerQueueOffset,
// masterTimerQueueOffset, then the dataVersion's stateVersion, timestamp
// and counter), which RocketMQ's decoder reads and a slave of RocketMQ
// copies. Spool appends one more int64, ScanFrom, which RocketMQ's decoder
// leaves unread.
//
// Spool fills them from its last written wheel checkpoint: lastReadTimeMs
// = the cursor second × 1000 (every timer due before it is delivered),
// lastTimerLogFlushPos = the synced end of the timer log, both queue
// offsets = the next consume-queue offset of the timer topic to link, the
// timestamp = when the checkpoint was written, the counter = checkpoints
// written, and ScanFrom = the CommitLog offset before which every delivery
// of the timers due before lastReadTimeMs lies.
type WireCheckpoint struct {
	LastReadTimeMs         int64
	LastTimerLogFlushPos   int64
	LastTimerQueueOffset   int64
	MasterTimerQueueOffset int64
	StateVersion           int64
	Timestamp              int64
	Counter                int64
	// ScanFrom is Spool's field; HasScanFrom is false for a body of
	// RocketMQ's 56 bytes (or its older 32).
	ScanFrom    int64
	HasScanFrom bool
}

// wireCheckpointSize is RocketMQ's body length; Spool's body is 8 bytes
// longer.
const wireCheckpointSize = 56

// Encode is the GET_TIMER_CHECK_POINT body.
func (c WireCheckpoint) Encode() []byte {
	b := make([]byte, 0, wireCheckpointSize+8)
	for _, v := range []int64{c.LastReadTimeMs, c.LastTimerLogFlushPos, c.LastTimerQueueOffset,
		c.MasterTimerQueueOffset, c.StateVersion, c.Timestamp, c.Counter, c.ScanFrom} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// DecodeWireCheckpoint reads a GET_TIMER_CHECK_POINT body: RocketMQ's 32
// or 56 bytes, or Spool's 64.
func DecodeWireCheckpoint(b []byte) (WireCheckpoint, error) {
	if len(b) != 32 && len(b) != wireCheckpointSize && len(b) != wireCheckpointSize+8 {
		return WireCheckpoint{}, fmt.Errorf("timer checkpoint: %d bytes, want 32, 56 or 64", len(b))
	}
	v := func(i int) int64 { return int64(binary.BigEndian.Uint64(b[8*i:])) }
	c := WireCheckpoint{LastReadTimeMs: v(0), LastTimerLogFlushPos: v(1), LastTimerQueueOffset: v(2), MasterTimerQueueOffset: v(3)}
	if len(b) >= wireCheckpointSize {
		c.StateVersion, c.Timestamp, c.Counter = v(4), v(5), v(6)
	}
	if len(b) > wireCheckpointSize {
		c.ScanFrom, c.HasScanFrom = v(7), true
	}
	return c, nil
}

// LastCheckpoint is the last wheel checkpoint written, in RocketMQ's form;
// false before the first.
func (s *Service) LastCheckpoint() (WireCheckpoint, bool) {
	p := s.ckWire.Load()
	if p == nil {
		return WireCheckpoint{}, false
	}
	return *p, true
}

// noteCheckpoint records a written checkpoint for LastCheckpoint.
func (s *Service) noteCheckpoint(img *wheelImage) {
	s.ckWire.Store(&WireCheckpoint{
		LastReadTimeMs:         img.cursor * 1000,
		LastTimerLogFlushPos:   img.logEnd,
		LastTimerQueueOffset:   img.enqOffset,
		MasterTimerQueueOffset: img.enqOffset,
		Timestamp:              img.savedAtMs,
		Counter:                s.c.checkpoints.Load(),
		ScanFrom:               img.scanFrom,
		HasScanFrom:            true,
	})
}
