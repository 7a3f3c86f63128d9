package message

import (
	"bytes"
	"testing"
)

func FuzzDecodeRecord(f *testing.F) {
	f.Add(EncodeRecord(nil, sampleInner(v4(10, 0, 0, 1, 50000), v4(192, 168, 0, 2, 10911)), ""))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseRecordHeader(data)
		if err != nil {
			if _, derr := DecodeRecord(data); derr == nil {
				t.Fatalf("DecodeRecord accepted what ParseRecordHeader refused: %v", err)
			}
			return
		}
		total := int(h.TotalSize)
		if total > len(data) || h.BodyOffset+h.BodyLen > total || h.PropertiesOffset+h.PropertiesLen != total {
			t.Fatalf("header out of bounds: %+v, %d bytes", h, len(data))
		}
		e, err := DecodeRecord(data)
		if err != nil {
			return // CRC mismatch
		}
		if h.MagicCode != MagicCodeV1 || (len(h.BornHost.IP) == 16 && isV4Mapped(h.BornHost.IP)) ||
			(len(h.StoreHost.IP) == 16 && isV4Mapped(h.StoreHost.IP)) {
			return
		}
		// A valid V1 record re-encodes to the same bytes.
		in := e.ToInner()
		again := EncodeRecord(nil, in, e.PropertiesString(data))
		PatchRecord(again, h.QueueOffset, h.PhysicalOffset, h.StoreTimestamp)
		if !bytes.Equal(again, data[:total]) {
			t.Fatalf("re-encoded record differs:\n%x\n%x", again, data[:total])
		}
	})
}

func FuzzDecodeBatchBody(f *testing.F) {
	f.Add(EncodeBatchBody(nil, []BatchMember{{Flag: 1, Body: []byte("ab"), PropertiesString: "TAGS\x01x\x02"}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := DecodeBatchBody(data, 64)
		if err != nil {
			return
		}
		if len(ms) == 0 || len(ms) > 64 {
			t.Fatalf("%d members", len(ms))
		}
		// Member magic and CRC are ignored (as Java does) and re-encoded as 0.
		want := append([]byte(nil), data...)
		for p, m := 0, 0; m < len(ms); m++ {
			clear(want[p+4 : p+12])
			p += batchMemberFixed + len(ms[m].Body) + len(ms[m].PropertiesString)
		}
		if again := EncodeBatchBody(nil, ms); !bytes.Equal(again, want) {
			t.Fatalf("re-encoded batch differs:\n%x\n%x", again, want)
		}
		b := &Batch{Topic: "T", BornHost: v4(1, 2, 3, 4, 5), StoreHost: v4(5, 6, 7, 8, 9), Members: ms}
		recs, sizes := EncodeBatchRecords(nil, b)
		for _, n := range sizes {
			if _, err := CheckRecord(recs[:n]); err != nil {
				t.Fatalf("batch record: %v", err)
			}
			recs = recs[n:]
		}
	})
}

// FuzzPropertyBytes: the byte lookup the store's readers use agrees with
// LookupProperty.
func FuzzPropertyBytes(f *testing.F) {
	f.Add("TAGS\x01a\x02KEYS\x01k\x02", "TAGS")
	f.Add("TAGS\x01\x02TAGS\x01b\x02", "TAGS")
	f.Add("\x01x\x02TAGS\x01a\x01b\x02", "TAGS")
	f.Fuzz(func(t *testing.T, props, name string) {
		if name == "" || bytes.ContainsAny([]byte(name), "\x01\x02") {
			return
		}
		got, ok := PropertyBytes([]byte(props), name)
		want, wok := LookupProperty(props, name)
		if ok != wok || string(got) != want {
			t.Fatalf("%q in %q: %q,%v want %q,%v", name, props, got, ok, want, wok)
		}
		// The pair lookup agrees with two single ones, whichever name
		// comes first.
		for _, other := range []string{"KEYS", "TAGS", name + "X"} {
			if other == name {
				continue
			}
			va, vb := PropertyPairBytes([]byte(props), name, other)
			wb, _ := LookupProperty(props, other)
			if string(va) != want || string(vb) != wb {
				t.Fatalf("pair %q,%q in %q: %q,%q want %q,%q", name, other, props, va, vb, want, wb)
			}
		}
	})
}
