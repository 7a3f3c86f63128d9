package message

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/spoolmq/spool/internal/corrupt"
)

// TestRecordView checks every accessor against the message encoded, for
// each host width and for a V2 record.
func TestRecordView(t *testing.T) {
	cases := []struct {
		name        string
		born, store Addr
	}{
		{"v4/v4", v4(10, 0, 0, 1, 50000), v4(192, 168, 0, 2, 10911)},
		{"v6/v4", v6("2001:db8::1", 50000), v4(192, 168, 0, 2, 10911)},
		{"v4/v6", v4(10, 0, 0, 1, 50000), v6("fe80::2", 10911)},
		{"v6/v6", v6("2001:db8::1", 50000), v6("fe80::2", 10911)},
	}
	for _, c := range cases {
		for _, v2 := range []bool{false, true} {
			name := c.name + "/V1"
			if v2 {
				name = c.name + "/V2"
			}
			t.Run(name, func(t *testing.T) {
				m := sampleInner(c.born, c.store)
				props := EncodeProperties(m.Properties)
				rec := EncodeRecord(nil, m, props)
				PatchRecord(rec, 42, 1<<40, 1700000000999)
				magic := MagicCodeV1
				if v2 {
					rec = toV2(t, rec)
					magic = MagicCodeV2
				}
				v, err := ViewRecord(append(rec, 0xEE, 0xEE)) // bytes after the record are not its
				if err != nil {
					t.Fatal(err)
				}
				wantSys := m.SysFlag
				if len(c.born.IP) == 16 {
					wantSys |= SysFlagBornHostV6
				}
				if len(c.store.IP) == 16 {
					wantSys |= SysFlagStoreHostV6
				}
				for _, f := range []struct {
					field     string
					got, want any
				}{
					{"TotalSize", v.TotalSize(), int32(len(rec))},
					{"Magic", v.Magic(), magic},
					{"BodyCRC", v.BodyCRC(), BodyCRC(m.Body)},
					{"QueueID", v.QueueID(), m.QueueID},
					{"Flag", v.Flag(), m.Flag},
					{"QueueOffset", v.QueueOffset(), int64(42)},
					{"PhysicalOffset", v.PhysicalOffset(), int64(1 << 40)},
					{"SysFlag", v.SysFlag(), wantSys},
					{"BornTimestamp", v.BornTimestamp(), m.BornTimestamp},
					{"BornHost", v.BornHost().String(), c.born.String()},
					{"StoreTimestamp", v.StoreTimestamp(), int64(1700000000999)},
					{"StoreHost", v.StoreHost().String(), c.store.String()},
					{"ReconsumeTimes", v.ReconsumeTimes(), m.ReconsumeTimes},
					{"PreparedTransactionOffset", v.PreparedTransactionOffset(), m.PreparedTransactionOffset},
					{"Body", string(v.Body()), string(m.Body)},
					{"Topic", string(v.Topic()), m.Topic},
					{"Properties", string(v.Properties()), props},
					{"Bytes", len(v.Bytes()), len(rec)},
				} {
					if f.got != f.want {
						t.Errorf("%s = %v, want %v", f.field, f.got, f.want)
					}
				}
				if tags, ok := v.Property(PropertyTags); !ok || string(tags) != "TagA" {
					t.Errorf("Property(TAGS) = %q %v", tags, ok)
				}
				if err := v.CheckCRC(); err != nil {
					t.Errorf("CheckCRC = %v", err)
				}
				ts, ok := StoreTimestampOf(rec[:RecordHeadLen])
				if !ok || ts != 1700000000999 {
					t.Errorf("StoreTimestampOf = %d %v", ts, ok)
				}
			})
		}
	}
}

// toV2 rewrites a V1 record as V2 (2-byte topic length).
func toV2(t *testing.T, v1 []byte) []byte {
	t.Helper()
	v, err := ViewRecord(v1)
	if err != nil {
		t.Fatal(err)
	}
	at := v.topicAt - 1
	v2 := append([]byte(nil), v1[:at]...)
	v2 = binary.BigEndian.AppendUint16(v2, uint16(v.topicLen))
	v2 = append(v2, v1[at+1:]...)
	binary.BigEndian.PutUint32(v2, uint32(len(v2)))
	binary.BigEndian.PutUint32(v2[4:], u32(MagicCodeV2))
	return v2
}

// TestViewRecordCorruption: every bad-bytes error of the view wraps its own
// sentinel and corrupt.ErrCorruption; the blank marker does not.
func TestViewRecordCorruption(t *testing.T) {
	m := sampleInner(v4(1, 2, 3, 4, 5), v4(6, 7, 8, 9, 10))
	good := EncodeRecord(nil, m, "")
	mut := func(f func(b []byte)) []byte { b := bytes.Clone(good); f(b); return b }
	v, _ := ViewRecord(good)
	bodyLenPos := v.bodyAt - 4
	for _, tt := range []struct {
		name string
		b    []byte
		want error
	}{
		{"7 bytes", good[:7], ErrRecordTooShort},
		{"truncated", good[:len(good)-1], ErrRecordTooShort},
		{"bad magic", mut(func(b []byte) { b[4] = 0 }), ErrBadMagic},
		{"total below minimum", mut(func(b []byte) { binary.BigEndian.PutUint32(b, 90) }), ErrBadLength},
		{"body length too big", mut(func(b []byte) { b[bodyLenPos+3]++ }), ErrBadLength},
		{"v6 flag without room", mut(func(b []byte) { b[39] |= 0x30 }), ErrBadLength},
	} {
		_, err := ViewRecord(tt.b)
		if !errors.Is(err, tt.want) || !errors.Is(err, corrupt.ErrCorruption) {
			t.Errorf("%s: ViewRecord = %v, want %v and corrupt.ErrCorruption", tt.name, err, tt.want)
		}
	}
	v, err := ViewRecord(mut(func(b []byte) { b[v.bodyAt] ^= 1 }))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.CheckCRC(); !errors.Is(err, ErrBadCRC) || !errors.Is(err, corrupt.ErrCorruption) {
		t.Errorf("CheckCRC = %v, want ErrBadCRC and corrupt.ErrCorruption", err)
	}
	blank := make([]byte, 16)
	PutBlank(blank, len(blank))
	if size, magic := PeekRecord(blank); size != 16 || magic != BlankMagicCode {
		t.Errorf("PeekRecord(blank) = %d %#x", size, magic)
	}
	if _, err := ViewRecord(blank); err != ErrBlankRecord || errors.Is(err, corrupt.ErrCorruption) {
		t.Errorf("ViewRecord(blank) = %v, want ErrBlankRecord, not corruption", err)
	}
}

// TestRecordViewAllocs: building a view and reading every field allocates
// nothing.
func TestRecordViewAllocs(t *testing.T) {
	rec := EncodeRecord(nil, sampleInner(v6("2001:db8::1", 1), v4(6, 7, 8, 9, 10)), "")
	var sink int64
	n := testing.AllocsPerRun(100, func() {
		v, err := ViewRecord(rec)
		if err != nil || v.CheckCRC() != nil {
			t.Fatal(err)
		}
		sink += int64(v.TotalSize()+v.Magic()+v.BodyCRC()+v.QueueID()+v.Flag()+v.SysFlag()+v.ReconsumeTimes()) +
			v.QueueOffset() + v.PhysicalOffset() + v.BornTimestamp() + v.StoreTimestamp() + v.PreparedTransactionOffset() +
			int64(len(v.BornHost().IP)+len(v.StoreHost().IP)+len(v.Body())+len(v.Properties()))
		if string(v.Topic()) != "TopicTest" {
			t.Fatal("topic")
		}
		if _, ok := v.Property(PropertyTags); !ok {
			t.Fatal("tags")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per view, want 0", n)
	}
	_ = sink
}
