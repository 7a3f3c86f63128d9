package remoting

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
)

// assertInlineAgrees decodes frame (without its length prefix) into the
// map and into the inline table and fails when they disagree: on whether
// the frame decodes, on any header field, on every key's lookup, on a key
// that is absent, and on the map the table builds.
func assertInlineAgrees(t *testing.T, frame []byte) {
	t.Helper()
	want, err := DecodeFrame(frame)
	got, err2 := DecodeFrameInline(frame)
	if (err == nil) != (err2 == nil) {
		t.Fatalf("DecodeFrame err %v, DecodeFrameInline err %v", err, err2)
	}
	prefixed := append([]byte{byte(len(frame) >> 24), byte(len(frame) >> 16), byte(len(frame) >> 8), byte(len(frame))}, frame...)
	read, err3 := ReadCommandInline(bufio.NewReaderSize(bytes.NewReader(prefixed), 16), 0)
	if (err == nil) != (err3 == nil) {
		t.Fatalf("DecodeFrame err %v, ReadCommandInline err %v", err, err3)
	}
	// ReadCommandCompact, with the header read through the reader's buffer
	// and through the scratch buffer, accepts and refuses the same frames.
	var compact []*Command
	for _, size := range []int{16, 4096} {
		c, err4 := ReadCommandCompact(bufio.NewReaderSize(bytes.NewReader(prefixed), size), 0)
		if (err == nil) != (err4 == nil) {
			t.Fatalf("DecodeFrame err %v, ReadCommandCompact (buffer %d) err %v", err, size, err4)
		}
		compact = append(compact, c)
	}
	if err != nil {
		return
	}
	for _, c := range append([]*Command{got, read}, compact...) {
		if c.Code != want.Code || c.Language != want.Language || c.Version != want.Version || c.Opaque != want.Opaque ||
			c.Flag != want.Flag || c.Remark != want.Remark || c.Serialize != want.Serialize || !bytes.Equal(c.Body, want.Body) {
			t.Fatalf("header mismatch\n got %+v\nwant %+v", c, want)
		}
		for k, v := range want.ExtFields {
			if gv, ok := c.LookupExt(k); !ok || gv != v {
				t.Fatalf("LookupExt(%q) = %q, %v; the map has %q", k, gv, ok, v)
			}
			if c.Ext(k) != v {
				t.Fatalf("Ext(%q) = %q; the map has %q", k, c.Ext(k), v)
			}
		}
		for _, k := range []string{"", "absent", "topic", "b", "queueId"} {
			_, inMap := want.ExtFields[k]
			if _, ok := c.LookupExt(k); ok != inMap {
				t.Fatalf("LookupExt(%q) present %v; in the map %v", k, ok, inMap)
			}
		}
		// Re-encoding a command whose fields are still inline writes them.
		out, err := Encode(c)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		again, err := DecodeFrame(out[4:])
		if err != nil {
			t.Fatalf("decode of re-encoded: %v", err)
		}
		if !validUTF8Command(want) && c.Serialize == SerializeJSON {
			continue
		}
		if !maps.Equal(again.ExtFields, want.ExtFields) && !(len(again.ExtFields) == 0 && len(want.ExtFields) == 0) {
			t.Fatalf("re-encoded ext %v, want %v", again.ExtFields, want.ExtFields)
		}
		m := c.ExtMap()
		if !maps.Equal(m, want.ExtFields) && !(len(m) == 0 && len(want.ExtFields) == 0) {
			t.Fatalf("ExtMap %v, want %v", m, want.ExtFields)
		}
	}
}

// randomText draws keys and values with the characters that matter to the
// codecs: escapes, control bytes, RocketMQ's property separators, multi-byte
// runes and invalid UTF-8.
func randomText(r *rand.Rand, maxLen int) string {
	alphabet := []string{"a", "b", "Z", "0", "9", "\"", "\\", "/", "\x01", "\x02", "\n", "\t", "é", "€", "\u2028", "<", "&", "\xff", " ", ":", ","}
	var sb strings.Builder
	for range r.IntN(maxLen + 1) {
		sb.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return sb.String()
}

func TestInlineExtAgreesWithMapOnRandomHeaders(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 5))
	for i := range 3000 {
		ext := map[string]string{}
		n := r.IntN(ExtTableCap + 6) // around the table's capacity
		for j := range n {
			k := randomText(r, 6)
			if r.IntN(3) == 0 {
				k = fmt.Sprintf("k%d", j)
			}
			ext[k] = randomText(r, 40)
		}
		if r.IntN(10) == 0 {
			ext["big"] = strings.Repeat("x", 70<<10) // over the table's 64 KiB
		}
		for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
			cmd := &Command{Code: int32(r.IntN(400)), Language: "GO", Version: 317, Opaque: int32(i), Remark: randomText(r, 5),
				ExtFields: ext, Body: []byte("body"), Serialize: st}
			frame, err := Encode(cmd)
			if err != nil {
				t.Fatal(err)
			}
			assertInlineAgrees(t, frame[4:])
			// A byte flipped anywhere must be accepted or refused by both.
			if len(frame) > 8 {
				bad := bytes.Clone(frame[4:])
				bad[4+r.IntN(len(bad)-4)] ^= byte(1 + r.IntN(255))
				assertInlineAgrees(t, bad)
			}
		}
	}
}

func TestInlineExtJSONForms(t *testing.T) {
	for _, hdr := range []string{
		`{"code":10,"extFields":{"a":"1","a":"2"}}`,                 // a later duplicate wins
		`{"code":10,"extFields":{"a":"1"},"extFields":{"b":"2"}}`,   // objects merge
		`{"code":10,"extFields":{"a":"1"},"extFields":null}`,        // null clears
		`{"code":10,"extFields":null,"extFields":{"b":"x\u0001y"}}`, // escapes
		`{"code":10,"extFields":{"n":12.5e3,"t":true,"f":false,"z":null,"s":"\ud83d\ude00"}}`,
		`{"code":10,"extFields":{"k\u0041":"v","b":"w"}}`, // an escaped key goes to the map
		`{"code":10,"extFields":{}}`,
		`{"code":10,"EXTFIELDS":{"a":"1"}}`,
		`{"code":10,"extFields":{"a":"\ud800"}}`,
		`{"code":10,"extFields":{"a":"\x"}}`,
		`{"code":10,"extFields":{"a":"unterminated}}`,
		`{"code":10,"extFields":{"a" "1"}}`,
	} {
		frame := append([]byte{0, 0, 0, 0}, hdr...)
		frame[1], frame[2], frame[3] = byte(len(hdr)>>16), byte(len(hdr)>>8), byte(len(hdr))
		assertInlineAgrees(t, frame)
	}
}

func TestReadCommandInlineBuildsNoMap(t *testing.T) {
	for _, s := range serializations {
		frame, _ := Encode(sendMessageRequest(s.st))
		rd := bytes.NewReader(frame)
		br := bufio.NewReaderSize(rd, 32<<10)
		var cmd *Command
		allocs := testing.AllocsPerRun(200, func() {
			rd.Reset(frame)
			br.Reset(rd)
			var err error
			if cmd, err = ReadCommandInline(br, 0); err != nil {
				t.Fatal(err)
			}
		})
		// The command, the header text and the body; nothing per field.
		if allocs > 3 {
			t.Errorf("%s: %.0f allocations per read, want at most 3", s.name, allocs)
		}
		if cmd.ExtFields != nil || cmd.Ext("topic") != "TopicTest" {
			t.Errorf("%s: ExtFields %v, topic %q", s.name, cmd.ExtFields, cmd.Ext("topic"))
		}
	}
}

func FuzzInlineExt(f *testing.F) {
	for _, s := range serializations {
		frame, _ := Encode(sendMessageRequest(s.st))
		f.Add(frame[4:])
	}
	f.Add([]byte("\x00\x00\x00\x2a{\"code\":10,\"extFields\":{\"a\":\"1\",\"a\":\"2\"}}"))
	f.Fuzz(func(t *testing.T, frame []byte) {
		assertInlineAgrees(t, frame)
	})
}

func TestExtWriter(t *testing.T) {
	for _, n := range []int{0, 1, 6, ExtTableCap, ExtTableCap + 3} {
		for _, big := range []bool{false, true} {
			for _, before := range []bool{false, true} {
				cmd := NewResponse(&Command{Opaque: 7, Serialize: SerializeRocketMQ}, Success, "")
				want := map[string]string{}
				if before {
					cmd.SetExt("early", "1")
					want["early"] = "1"
				}
				w := NewExtWriter(cmd, 16)
				for i := range n {
					k := fmt.Sprintf("k%d", i)
					switch i % 3 {
					case 0:
						v := "v"
						if big && i == 1 {
							v = strings.Repeat("x", 70<<10)
						}
						w.Str(k, v)
						want[k] = v
					case 1:
						w.Int(k, int64(-i*1000003))
						want[k] = fmt.Sprint(-i * 1000003)
					default:
						v := strings.Repeat("y", i)
						if big {
							v = strings.Repeat("z", 40<<10)
						}
						w.Append(k, func(dst []byte) []byte { return append(dst, v...) })
						want[k] = v
					}
				}
				w.Close()
				w.Str("late", "2") // after Close: the map
				want["late"] = "2"
				for k, v := range want {
					if got, ok := cmd.LookupExt(k); !ok || got != v {
						t.Fatalf("n %d big %v: LookupExt(%q) = %.20q, %v; want %.20q", n, big, k, got, ok, v)
					}
				}
				frame, err := Encode(cmd)
				if err != nil {
					t.Fatal(err)
				}
				back, err := DecodeFrame(frame[4:])
				if err != nil || !maps.Equal(back.ExtFields, want) {
					t.Fatalf("n %d big %v: decoded %d fields (err %v), want %d", n, big, len(back.ExtFields), err, len(want))
				}
				if !maps.Equal(cmd.ExtMap(), want) {
					t.Fatalf("n %d big %v: ExtMap differs", n, big)
				}
			}
		}
	}
	// A handful of fields costs the buffer alone.
	req := &Command{Opaque: 1}
	allocs := testing.AllocsPerRun(100, func() {
		resp := &Command{Opaque: req.Opaque, Flag: FlagResponse}
		w := NewExtWriter(resp, 128)
		w.Str("msgId", "0A0000010000000000001234")
		w.Int("queueId", 3)
		w.Int("queueOffset", 123456789)
		w.Str("MSG_REGION", "DefaultRegion")
		w.Str("TRACE_ON", "true")
		w.Close()
		if resp.Ext("queueOffset") != "123456789" {
			t.Fatal("lost a field")
		}
	})
	if allocs > 2 {
		t.Errorf("%.0f allocations for a five-field answer, want at most 2 (the command and the buffer)", allocs)
	}
}

func TestNewResponseExt(t *testing.T) {
	req := &Command{Code: SendMessage, Opaque: 42, Serialize: SerializeRocketMQ}
	want := NewResponse(req, Success, "r")
	var resp *Command
	allocs := testing.AllocsPerRun(100, func() {
		var w ExtWriter
		resp, w = NewResponseExt(req, Success, "r")
		w.Str("msgId", "7F00000100002A9F0000000000012345")
		w.Int("queueOffset", 99999)
		w.Close()
	})
	if allocs > 1 {
		t.Errorf("%.0f allocations, want 1", allocs)
	}
	if resp.Code != want.Code || resp.Opaque != want.Opaque || resp.Flag != want.Flag || resp.Serialize != want.Serialize ||
		resp.Language != want.Language || resp.Version != want.Version || resp.Remark != want.Remark ||
		resp.Ext("queueOffset") != "99999" || resp.Ext("msgId") == "" {
		t.Errorf("answer %+v, want the fields of %+v", resp, want)
	}
}

// NewResponseExtSize holds a long field (a batch's msgId) in two
// allocations whatever its length, and the field reads back whole.
func TestNewResponseExtSize(t *testing.T) {
	req := &Command{Code: SendBatchMessage, Opaque: 7}
	long := strings.Repeat("7F00000100002A9F0000000000012345,", 64)
	var resp *Command
	allocs := testing.AllocsPerRun(100, func() {
		var w ExtWriter
		resp, w = NewResponseExtSize(req, Success, "", len(long)+64)
		w.Append("msgId", func(dst []byte) []byte { return append(dst, long...) })
		w.Int("queueOffset", 5)
		w.Close()
	})
	if allocs > 2 {
		t.Errorf("%.0f allocations, want 2", allocs)
	}
	if resp.Ext("msgId") != long || resp.Ext("queueOffset") != "5" || resp.ExtFields != nil {
		t.Errorf("fields msgId of %d bytes, queueOffset %q, map %v", len(resp.Ext("msgId")), resp.Ext("queueOffset"), resp.ExtFields)
	}
}

func TestExtWithRoom(t *testing.T) {
	for _, s := range serializations {
		req := sendMessageRequest(s.st)
		req.ExtFields["empty"] = ""
		frame, _ := Encode(req)
		for _, inline := range []bool{false, true} {
			var cmd *Command
			if inline {
				cmd, _ = DecodeFrameInline(frame[4:])
			} else {
				cmd, _ = DecodeFrame(frame[4:])
			}
			for _, k := range []string{"properties", "topic", "empty", "absent"} {
				want, wantOK := req.ExtFields[k]
				v, buf, ok := cmd.ExtWithRoom(k, 40)
				if ok != wantOK || v != want || string(buf) != want || (ok && cap(buf) < len(want)+40) {
					t.Fatalf("%s inline %v: ExtWithRoom(%q) = %q, %q (cap %d), %v; want %q, %v", s.name, inline, k, v, buf, cap(buf), ok, want, wantOK)
				}
				if ok {
					buf = append(buf, "-more"...)
					if v != want || string(buf) != want+"-more" {
						t.Fatalf("appending changed the value: %q", v)
					}
				}
			}
			allocs := testing.AllocsPerRun(50, func() { cmd.ExtWithRoom("properties", 64) })
			if allocs != 1 {
				t.Errorf("%s inline %v: %.0f allocations, want 1", s.name, inline, allocs)
			}
			// With scratch: the same value, in scratch when it fits (a JSON
			// value with escapes asks for its escaped length), without an
			// allocation; in a buffer of its own when it does not.
			want := req.ExtFields["properties"]
			big := 6*len(want) + 64
			for _, size := range []int{big, len(want) + 63, 0} {
				scratch := make([]byte, 0, size)
				v, buf, ok := cmd.ExtWithRoomIn("properties", 64, scratch)
				inScratch := size > 0 && cap(buf) > 0 && &buf[:1][0] == &scratch[:1][0]
				if !ok || v != want || string(buf) != want || cap(buf) < len(want)+64 || inScratch != (size == big) {
					t.Fatalf("%s inline %v: ExtWithRoomIn with %d bytes = %q (cap %d, in scratch %v), %v", s.name, inline, size, v, cap(buf), inScratch, ok)
				}
			}
			scratch := make([]byte, 0, big)
			if allocs := testing.AllocsPerRun(50, func() { cmd.ExtWithRoomIn("properties", 64, scratch) }); allocs != 0 {
				t.Errorf("%s inline %v: %.0f allocations with scratch, want 0", s.name, inline, allocs)
			}
		}
	}
}

// ReadCommandCompact keeps a short header in the command's allocation:
// one allocation fewer than ReadCommandInline, and the fields stay intact
// when the reader's buffer is reused for the next frames.
func TestReadCommandCompact(t *testing.T) {
	for _, s := range serializations {
		resp := &Command{Code: Success, Language: "JAVA", Version: CurrentVersion, Opaque: 1, Flag: FlagResponse, Remark: "FOUND", Serialize: s.st,
			ExtFields: map[string]string{"suggestWhichBrokerId": "0", "nextBeginOffset": "64", "minOffset": "0", "maxOffset": "128"}}
		var stream []byte
		for i := range 3 {
			resp.Opaque = int32(i)
			resp.ExtFields["nextBeginOffset"] = fmt.Sprint(64 + i)
			f, _ := Encode(resp)
			stream = append(stream, f...)
		}
		br := bufio.NewReaderSize(bytes.NewReader(stream), 64<<10)
		var got []*Command
		for range 3 {
			c, err := ReadCommandCompact(br, 0)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, c)
		}
		for i, c := range got {
			if c.Opaque != int32(i) || c.Remark != "FOUND" || c.Ext("nextBeginOffset") != fmt.Sprint(64+i) || c.Ext("maxOffset") != "128" || c.ExtFields != nil {
				t.Errorf("%s: frame %d read back as %+v, nextBeginOffset %q", s.name, i, c, c.Ext("nextBeginOffset"))
			}
		}
		frame := stream[:len(stream)/3]
		rd := bytes.NewReader(frame)
		br = bufio.NewReaderSize(rd, 4096)
		count := func(read func(*bufio.Reader, int) (*Command, error)) float64 {
			return testing.AllocsPerRun(50, func() {
				rd.Reset(frame)
				br.Reset(rd)
				if _, err := read(br, 0); err != nil {
					t.Fatal(err)
				}
			})
		}
		if inline, compact := count(ReadCommandInline), count(ReadCommandCompact); compact != inline-1 {
			t.Errorf("%s: %.0f allocations compact, %.0f inline; want one fewer", s.name, compact, inline)
		}
	}
}
