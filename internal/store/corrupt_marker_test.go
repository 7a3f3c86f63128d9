package store

import (
	"errors"
	"testing"

	"github.com/spoolmq/spool/internal/corrupt"
	"github.com/spoolmq/spool/message"
)

// Every bad-bytes error of the store matches the one corruption marker.
func TestBadBytesMatchErrCorruption(t *testing.T) {
	if !errors.Is(ErrCorrupt, corrupt.ErrCorruption) {
		t.Fatal("ErrCorrupt does not match corrupt.ErrCorruption")
	}
	cp := Checkpoint{PhysicMsgTimestamp: 1}
	b := cp.encode()
	b[0] ^= 1
	if _, err := decodeCheckpoint(b); !errors.Is(err, ErrCorrupt) || !errors.Is(err, corrupt.ErrCorruption) {
		t.Fatalf("checkpoint with a bad CRC: %v", err)
	}
	var v message.RecordView
	if err := checkRecordAt(&v, make([]byte, 100), 0, true); !errors.Is(err, ErrCorrupt) || !errors.Is(err, corrupt.ErrCorruption) {
		t.Fatalf("zeroed record: %v", err)
	}
	if errors.Is(ErrClosed, corrupt.ErrCorruption) {
		t.Fatal("ErrClosed matches corrupt.ErrCorruption")
	}
}
