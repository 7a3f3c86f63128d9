package message

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// goldenBatch is the protocol reference's example: a Go client batch
// member with body "ab" and TAGS=x.
const goldenBatch = "0000001f000000000000000000000000000000026162000754414753017802"

func TestDecodeBatchBodyGolden(t *testing.T) {
	body, _ := hex.DecodeString(goldenBatch)
	ms, err := DecodeBatchBody(body, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || string(ms[0].Body) != "ab" || ms[0].PropertiesString != "TAGS\x01x\x02" ||
		ms[0].Flag != 0 || ms[0].TagsCode != TagsHashCode("x") || ms[0].TagsCode != 'x' {
		t.Fatalf("members %+v", ms)
	}
	if got := EncodeBatchBody(nil, ms); !bytes.Equal(got, body) {
		t.Fatalf("EncodeBatchBody = %x, want %s", got, goldenBatch)
	}
}

func TestBatchRoundTripAndRecords(t *testing.T) {
	in := []BatchMember{
		{Flag: 1, Body: []byte("first"), PropertiesString: "TAGS\x01TagA\x02KEYS\x01k\x02"},
		{Flag: 2, Body: nil, PropertiesString: ""},
		{Flag: 3, Body: bytes.Repeat([]byte{0xAB}, 300), PropertiesString: "TAGS\x01TagB\x02"},
	}
	body := EncodeBatchBody(nil, in)
	ms, err := DecodeBatchBody(body, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if ms[i].Flag != in[i].Flag || !bytes.Equal(ms[i].Body, in[i].Body) || ms[i].PropertiesString != in[i].PropertiesString {
			t.Fatalf("member %d = %+v", i, ms[i])
		}
	}
	if ms[0].TagsCode != TagsHashCode("TagA") || ms[1].TagsCode != 0 || ms[2].TagsCode != TagsHashCode("TagB") {
		t.Fatal("tags codes")
	}
	if _, err := DecodeBatchBody(body, 2); !errors.Is(err, ErrBadBatch) {
		t.Fatalf("maxMembers: %v", err)
	}

	b := &Batch{Topic: "T", QueueID: 1, SysFlag: 0, BornTimestamp: 5, BornHost: v4(1, 1, 1, 1, 1),
		StoreHost: v6("2001:db8::9", 10911), ReconsumeTimes: 0, Members: ms}
	recs, sizes := EncodeBatchRecords([]byte("x"), b)
	recs = recs[1:]
	if len(sizes) != 3 || len(recs) != BatchStoredSize(b) {
		t.Fatalf("sizes %v, len %d, BatchStoredSize %d", sizes, len(recs), BatchStoredSize(b))
	}
	p := 0
	for i, n := range sizes {
		rec := recs[p : p+n]
		PatchRecord(rec, int64(10+i), int64(p), 99)
		e, err := DecodeRecord(rec)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if e.Flag != in[i].Flag || !bytes.Equal(e.Body, in[i].Body) || e.Topic != "T" || e.QueueID != 1 ||
			e.QueueOffset != int64(10+i) || e.StoreTimestamp != 99 || e.SysFlag != SysFlagStoreHostV6 ||
			e.PropertiesString(rec) != in[i].PropertiesString {
			t.Fatalf("record %d: %+v", i, e)
		}
		p += n
	}
}

func TestDecodeBatchBodyErrors(t *testing.T) {
	good, _ := hex.DecodeString(goldenBatch)
	mut := func(f func(b []byte)) []byte { b := append([]byte(nil), good...); f(b); return b }
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"short", good[:21]},
		{"truncated", good[:len(good)-1]},
		{"trailing byte", append(append([]byte(nil), good...), 0)},
		{"total too small", mut(func(b []byte) { binary.BigEndian.PutUint32(b, 21) })},
		{"negative total", mut(func(b []byte) { b[0] = 0x80 })},
		{"body too long", mut(func(b []byte) { b[19] = 9 })},
		{"negative body", mut(func(b []byte) { b[16] = 0x80 })},
		{"props length off", mut(func(b []byte) { b[23] = 6 })},
		{"negative props", mut(func(b []byte) { b[22] = 0x80 })},
	}
	for _, tt := range tests {
		if _, err := DecodeBatchBody(tt.b, 0); !errors.Is(err, ErrBadBatch) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

func TestCheckBatch(t *testing.T) {
	b := &Batch{Topic: strings.Repeat("t", 128), Members: []BatchMember{{Body: []byte("a")}}}
	if err := CheckBatch(b); !errors.Is(err, ErrTopicTooLong) {
		t.Fatalf("CheckBatch = %v", err)
	}
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("EncodeBatchRecords accepted a 128-byte topic")
		}
	}()
	EncodeBatchRecords(nil, b)
}
