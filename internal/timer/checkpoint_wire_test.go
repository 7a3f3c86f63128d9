package timer

import (
	"encoding/binary"
	"testing"
)

func TestWireCheckpoint(t *testing.T) {
	c := WireCheckpoint{LastReadTimeMs: 1700000000000, LastTimerLogFlushPos: 4096, LastTimerQueueOffset: 17,
		MasterTimerQueueOffset: 17, Timestamp: 1700000000123, Counter: 9, ScanFrom: 1 << 33, HasScanFrom: true}
	b := c.Encode()
	if len(b) != 64 {
		t.Fatalf("body %d bytes, want RocketMQ's 56 + 8", len(b))
	}
	// RocketMQ's layout: seven big-endian longs in this order.
	for i, want := range []int64{1700000000000, 4096, 17, 17, 0, 1700000000123, 9} {
		if got := int64(binary.BigEndian.Uint64(b[8*i:])); got != want {
			t.Errorf("long %d = %d, want %d", i, got, want)
		}
	}
	got, err := DecodeWireCheckpoint(b)
	if err != nil || got != c {
		t.Fatalf("decode = %+v, %v; want %+v", got, err, c)
	}
	rmq, err := DecodeWireCheckpoint(b[:56])
	if err != nil || rmq.HasScanFrom || rmq.Counter != 9 || rmq.LastReadTimeMs != c.LastReadTimeMs {
		t.Fatalf("RocketMQ's 56 bytes decode to %+v, %v", rmq, err)
	}
	if _, err := DecodeWireCheckpoint(b[:40]); err == nil {
		t.Fatal("a 40-byte body decoded")
	}
}
