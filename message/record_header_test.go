package message

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"net"
	"strings"
	"testing"
)

func v4(a, b, c, d byte, port int32) Addr { return Addr{IP: []byte{a, b, c, d}, Port: port} }

func v6(s string, port int32) Addr { return Addr{IP: net.ParseIP(s).To16(), Port: port} }

func sampleInner(born, store Addr) *Inner {
	return &Inner{
		Topic:                     "TopicTest",
		QueueID:                   3,
		Flag:                      7,
		Body:                      []byte("hello, spool"),
		Properties:                map[string]string{PropertyTags: "TagA", PropertyKeys: "k1 k2", PropertyUniqClientMessageIDKeyIdx: "0A0B0C0D"},
		SysFlag:                   TransactionCommitType,
		BornTimestamp:             1700000000123,
		BornHost:                  born,
		StoreHost:                 store,
		ReconsumeTimes:            2,
		PreparedTransactionOffset: 4096,
	}
}

func TestRecordRoundTrip(t *testing.T) {
	cases := []struct {
		name        string
		born, store Addr
		sysV6       int32
		tsPos       int
	}{
		{"v4/v4", v4(10, 0, 0, 1, 50000), v4(192, 168, 0, 2, 10911), 0, 56},
		{"v6/v4", v6("2001:db8::1", 50000), v4(192, 168, 0, 2, 10911), SysFlagBornHostV6, 68},
		{"v4/v6", v4(10, 0, 0, 1, 50000), v6("fe80::2", 10911), SysFlagStoreHostV6, 56},
		{"v6/v6", v6("2001:db8::1", 1), v6("::1", 2), SysFlagBornHostV6 | SysFlagStoreHostV6, 68},
		{"v4-mapped stored as v4", Addr{IP: net.ParseIP("10.1.2.3").To16(), Port: 9}, v4(1, 2, 3, 4, 5), 0, 56},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := sampleInner(c.born, c.store)
			// A stale V6 bit must be corrected by the encoder.
			m.SysFlag |= SysFlagStoreHostV6 &^ c.sysV6
			props := EncodeProperties(m.Properties)
			prefix := []byte("prefix")
			rec := EncodeRecord(prefix, m, "")
			if !bytes.Equal(rec[:6], prefix) {
				t.Fatal("prefix overwritten")
			}
			rec = rec[6:]
			if len(rec) != StoredSize(m) {
				t.Fatalf("len %d, StoredSize %d", len(rec), StoredSize(m))
			}
			extra := 0
			if c.sysV6&SysFlagBornHostV6 != 0 {
				extra += 12
			}
			if c.sysV6&SysFlagStoreHostV6 != 0 {
				extra += 12
			}
			if want := 91 + len(m.Body) + len(m.Topic) + len(props) + extra; len(rec) != want {
				t.Fatalf("size %d, want %d", len(rec), want)
			}
			if StoreTimestampPos(c.sysV6) != c.tsPos {
				t.Fatalf("StoreTimestampPos = %d, want %d", StoreTimestampPos(c.sysV6), c.tsPos)
			}
			PatchRecord(rec, 42, 1<<40+5, 1700000000999)
			if got := int64(binary.BigEndian.Uint64(rec[c.tsPos:])); got != 1700000000999 {
				t.Fatalf("store timestamp at %d = %d", c.tsPos, got)
			}
			// Trailing bytes after the record are ignored.
			h, err := CheckRecord(append(rec[:len(rec):len(rec)], 1, 2, 3))
			if err != nil {
				t.Fatal(err)
			}
			wantFlag := TransactionCommitType | c.sysV6
			if h.TotalSize != int32(len(rec)) || h.MagicCode != MagicCodeV1 || h.QueueID != 3 || h.Flag != 7 ||
				h.QueueOffset != 42 || h.PhysicalOffset != 1<<40+5 || h.SysFlag != wantFlag ||
				h.BornTimestamp != 1700000000123 || h.StoreTimestamp != 1700000000999 ||
				h.ReconsumeTimes != 2 || h.PreparedTransactionOffset != 4096 || h.Topic != "TopicTest" {
				t.Fatalf("header %+v", h)
			}
			if h.BornHost.String() != normal(c.born).String() || h.StoreHost.String() != normal(c.store).String() {
				t.Fatalf("hosts %v %v, want %v %v", h.BornHost, h.StoreHost, c.born, c.store)
			}
			if string(h.Body(rec)) != "hello, spool" || h.PropertiesString(rec) != props {
				t.Fatalf("body %q props %q", h.Body(rec), h.PropertiesString(rec))
			}
			if v, ok := h.Property(rec, PropertyTags); !ok || v != "TagA" {
				t.Fatalf("Property(TAGS) = %q, %v", v, ok)
			}
			if _, ok := h.Property(rec, "missing"); ok {
				t.Fatal("Property found a missing name")
			}
			if h.BodyCRC != BodyCRC(m.Body) {
				t.Fatal("CRC")
			}
			e, err := DecodeRecord(rec)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(e.Properties, m.Properties) || string(e.Body) != string(m.Body) {
				t.Fatalf("decoded %+v", e)
			}
			in := e.ToInner()
			if in.TagsCode != TagsHashCode("TagA") || in.Topic != m.Topic || in.QueueID != m.QueueID ||
				in.ReconsumeTimes != 2 || in.PreparedTransactionOffset != 4096 || in.StoreTimestamp != 0 {
				t.Fatalf("ToInner %+v", in)
			}
			// Re-encoding the inner gives the same record before patching.
			again := EncodeRecord(nil, in, "")
			PatchRecord(again, 42, 1<<40+5, 1700000000999)
			if !bytes.Equal(again, rec) {
				t.Fatal("re-encoded record differs")
			}
			in.Properties["X"] = "y"
			if _, ok := e.Properties["X"]; ok {
				t.Fatal("ToInner shares the property map")
			}
		})
	}
}

func normal(a Addr) Addr {
	if len(a.IP) == 16 && isV4Mapped(a.IP) {
		return Addr{IP: a.IP[12:], Port: a.Port}
	}
	return a
}

func TestEncodeRecordPropsSources(t *testing.T) {
	m := sampleInner(v4(1, 2, 3, 4, 5), v4(6, 7, 8, 9, 10))
	explicit := "A\x01b\x02"
	rec := EncodeRecord(nil, m, explicit)
	h, err := ParseRecordHeader(rec)
	if err != nil || h.PropertiesString(rec) != explicit {
		t.Fatalf("explicit props: %v %q", err, h.PropertiesString(rec))
	}
	m.PropertiesString = "C\x01d\x02"
	rec = EncodeRecord(nil, m, "")
	h, _ = ParseRecordHeader(rec)
	if h.PropertiesString(rec) != m.PropertiesString || len(rec) != StoredSize(m) {
		t.Fatalf("cached props: %q", h.PropertiesString(rec))
	}
	m.PropertiesString, m.Properties = "", nil
	rec = EncodeRecord(nil, m, "")
	h, _ = ParseRecordHeader(rec)
	if h.PropertiesLen != 0 || len(rec) != 91+len(m.Body)+len(m.Topic) {
		t.Fatalf("no props: %d bytes", len(rec))
	}
	// A zero Addr is stored as 0.0.0.0:0.
	m.BornHost = Addr{}
	rec = EncodeRecord(nil, m, "")
	h, _ = ParseRecordHeader(rec)
	if h.BornHost.String() != "0.0.0.0:0" {
		t.Fatalf("zero born host = %v", h.BornHost)
	}
}

func TestEncodeRecordRefusals(t *testing.T) {
	base := func() *Inner { return sampleInner(v4(1, 2, 3, 4, 5), v4(6, 7, 8, 9, 10)) }
	tests := []struct {
		name  string
		mod   func(*Inner)
		props string
		want  error
	}{
		{"topic 128", func(m *Inner) { m.Topic = strings.Repeat("t", 128) }, "", ErrTopicTooLong},
		{"props 32768", nil, "a\x01" + strings.Repeat("v", 32765) + "\x02", ErrPropertiesTooLong},
		{"bad born host", func(m *Inner) { m.BornHost.IP = []byte{1, 2, 3} }, "", ErrBadHost},
		{"bad store host", func(m *Inner) { m.StoreHost.IP = make([]byte, 5) }, "", ErrBadHost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base()
			if tt.mod != nil {
				tt.mod(m)
			}
			if err := CheckInner(m, tt.props); !errors.Is(err, tt.want) {
				t.Fatalf("CheckInner = %v, want %v", err, tt.want)
			}
			if _, err := AppendRecord(nil, m, tt.props); !errors.Is(err, tt.want) {
				t.Fatalf("AppendRecord = %v, want %v", err, tt.want)
			}
			func() {
				defer func() {
					r := recover()
					if err, ok := r.(error); !ok || !errors.Is(err, tt.want) {
						t.Fatalf("EncodeRecord panic = %v, want %v", r, tt.want)
					}
				}()
				EncodeRecord(nil, m, tt.props)
			}()
		})
	}
	m := base()
	m.Topic = strings.Repeat("t", 127)
	rec, err := AppendRecord(nil, m, "a\x01"+strings.Repeat("v", 32764)+"\x02")
	if err != nil {
		t.Fatalf("127-byte topic and 32767-byte props refused: %v", err)
	}
	h, err := CheckRecord(rec)
	if err != nil || h.Topic != m.Topic || h.PropertiesLen != 32767 {
		t.Fatalf("limits round trip: %v %d", err, h.PropertiesLen)
	}
}

func TestParseRecordHeaderErrors(t *testing.T) {
	m := sampleInner(v4(1, 2, 3, 4, 5), v4(6, 7, 8, 9, 10))
	good := EncodeRecord(nil, m, "")
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	propsLenPos := len(good) - len(EncodeProperties(m.Properties)) - 2
	topicLenPos := propsLenPos - len(m.Topic) - 1
	bodyLenPos := topicLenPos - len(m.Body) - 4
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrRecordTooShort},
		{"7 bytes", good[:7], ErrRecordTooShort},
		{"truncated", good[:len(good)-1], ErrRecordTooShort},
		{"bad magic", mut(func(b []byte) []byte { b[4] = 0; return b }), ErrBadMagic},
		{"blank", mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b[4:], u32(BlankMagicCode)); return b }), ErrBlankRecord},
		{"total below minimum", mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b, 90); return b }), ErrBadLength},
		{"negative body length", mut(func(b []byte) []byte { b[bodyLenPos] = 0x80; return b }), ErrBadLength},
		{"body length too big", mut(func(b []byte) []byte { b[bodyLenPos+3]++; return b }), ErrBadLength},
		{"topic length too big", mut(func(b []byte) []byte { b[topicLenPos] = 100; return b }), ErrBadLength},
		{"negative topic length", mut(func(b []byte) []byte { b[topicLenPos] = 0x80; return b }), ErrBadLength},
		{"props length short", mut(func(b []byte) []byte { b[propsLenPos+1]--; return b }), ErrBadLength},
		{"negative props length", mut(func(b []byte) []byte { b[propsLenPos] = 0x80; return b }), ErrBadLength},
		{"v6 flag without room", mut(func(b []byte) []byte { b[39] |= 0x30; return b }), ErrBadLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRecordHeader(tt.b)
			if !errors.Is(err, tt.want) {
				t.Fatalf("ParseRecordHeader = %v, want %v", err, tt.want)
			}
			if _, err := DecodeRecord(tt.b); !errors.Is(err, tt.want) {
				t.Fatalf("DecodeRecord = %v, want %v", err, tt.want)
			}
		})
	}
	blank := mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b[4:], u32(BlankMagicCode)); return b })
	if h, _ := ParseRecordHeader(blank); h.TotalSize != int32(len(good)) || h.MagicCode != BlankMagicCode {
		t.Fatalf("blank header %+v", h)
	}
	bad := mut(func(b []byte) []byte { b[bodyLenPos+4] ^= 1; return b })
	if _, err := ParseRecordHeader(bad); err != nil {
		t.Fatalf("ParseRecordHeader checks the CRC: %v", err)
	}
	if _, err := CheckRecord(bad); !errors.Is(err, ErrBadCRC) {
		t.Fatalf("CheckRecord = %v, want ErrBadCRC", err)
	}
}

func TestParseRecordHeaderV2(t *testing.T) {
	m := sampleInner(v4(1, 2, 3, 4, 5), v4(6, 7, 8, 9, 10))
	v1 := EncodeRecord(nil, m, "")
	h, _ := ParseRecordHeader(v1)
	topicLenPos := h.PropertiesOffset - 2 - len(m.Topic) - 1
	// Rewrite as V2: 2-byte topic length, one byte longer.
	v2 := append([]byte(nil), v1[:topicLenPos]...)
	v2 = binary.BigEndian.AppendUint16(v2, uint16(len(m.Topic)))
	v2 = append(v2, v1[topicLenPos+1:]...)
	binary.BigEndian.PutUint32(v2, uint32(len(v2)))
	binary.BigEndian.PutUint32(v2[4:], u32(MagicCodeV2))
	e, err := DecodeRecord(v2)
	if err != nil || e.Topic != m.Topic || e.Properties[PropertyTags] != "TagA" {
		t.Fatalf("V2: %v %+v", err, e)
	}
}

func TestAddr(t *testing.T) {
	a, err := ParseAddr("192.168.0.2:10911")
	if err != nil || len(a.IP) != 4 || a.Port != 10911 || a.String() != "192.168.0.2:10911" || a.IsV6() {
		t.Fatalf("%v %v", a, err)
	}
	a, err = ParseAddr("[2001:db8::1]:80")
	if err != nil || len(a.IP) != 16 || a.String() != "[2001:db8::1]:80" || !a.IsV6() {
		t.Fatalf("%v %v", a, err)
	}
	a, err = ParseAddr("[::ffff:10.0.0.1]:80")
	if err != nil || len(a.IP) != 4 || a.String() != "10.0.0.1:80" {
		t.Fatalf("mapped: %v %v", a, err)
	}
	for _, s := range []string{"", "1.2.3.4", "host:80", "1.2.3.4:99999", "1.2.3.4:-1"} {
		if _, err := ParseAddr(s); !errors.Is(err, ErrBadAddr) {
			t.Errorf("ParseAddr(%q) = %v", s, err)
		}
	}
	if a := AddrFromNet(&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5}); len(a.IP) != 4 || a.String() != "127.0.0.1:5" {
		t.Fatalf("AddrFromNet v4 = %v", a)
	}
	if a := AddrFromNet(&net.TCPAddr{IP: net.ParseIP("::1"), Port: 5}); len(a.IP) != 16 || a.String() != "[::1]:5" {
		t.Fatalf("AddrFromNet v6 = %v", a)
	}
	if a := AddrFromNet(nil); a.IP != nil {
		t.Fatalf("AddrFromNet(nil) = %v", a)
	}
	// AddrOfConn gives what AddrFromNet gives, for every kind of address.
	for _, a := range []net.Addr{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5}, &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3).To4(), Port: 9},
		&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 7}, &net.TCPAddr{Port: 3}, &net.UDPAddr{IP: net.ParseIP("1.2.3.4"), Port: 1}, nil} {
		if got, want := AddrOfConn(a), AddrFromNet(a); got.String() != want.String() || len(got.IP) != len(want.IP) {
			t.Errorf("AddrOfConn(%v) = %v (%d bytes), AddrFromNet %v (%d bytes)", a, got, len(got.IP), want, len(want.IP))
		}
	}
}

func u32(v int32) uint32 { return uint32(v) }
