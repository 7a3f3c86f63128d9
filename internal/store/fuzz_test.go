package store

import (
	"bytes"
	"testing"

	"github.com/spoolmq/spool/message"
)

// FuzzDecodeCQEntry: decoding never panics, and a valid entry re-encodes
// to the same bytes.
func FuzzDecodeCQEntry(f *testing.F) {
	f.Add(AppendCQEntry(nil, CQEntry{Offset: 0, Size: 91, TagsCode: 0}))
	f.Add(AppendCQEntry(nil, CQEntry{Offset: 1 << 40, Size: 4 << 20, TagsCode: -1}))
	f.Add(make([]byte, CQEntrySize))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, ok := DecodeCQEntry(b)
		if !ok {
			return
		}
		if e.Offset < 0 || e.Size <= 0 {
			t.Fatalf("accepted %+v", e)
		}
		if got := AppendCQEntry(nil, e); !bytes.Equal(got, b[:CQEntrySize]) {
			t.Fatalf("round trip %x != %x", got, b[:CQEntrySize])
		}
	})
}

// FuzzCheckStoredRecord: the read-path record check never panics and never
// accepts a record the full decoder would refuse for its body.
func FuzzCheckStoredRecord(f *testing.F) {
	checkStoredRecord := func(b []byte, phy int64) error {
		var v message.RecordView
		return checkRecordAt(&v, b, phy, true)
	}
	rec := message.EncodeRecord(nil, testMsg("T", 1, "hello", "tag"), "")
	message.PatchRecord(rec, 3, 1000, 1700000000000)
	f.Add(rec, int64(1000))
	f.Add(rec[:50], int64(1000))
	f.Add(make([]byte, 120), int64(0))
	f.Fuzz(func(t *testing.T, b []byte, phy int64) {
		if checkStoredRecord(b, phy) != nil {
			return
		}
		if _, err := message.CheckRecord(b); err != nil && len(b) >= message.MinRecordSize {
			// The read path checks size, magic, position and body CRC,
			// not the topic/properties lengths: those errors are allowed.
			if bytes.Contains([]byte(err.Error()), []byte("CRC")) {
				t.Fatalf("read check passed a record with a bad CRC: %v", err)
			}
		}
	})
}
