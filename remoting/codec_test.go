package remoting

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// goClientRouteHeader is what the Go client writes for a route lookup
// (protocol doc §1.4).
const goClientRouteHeader = `{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"T"}}`

func TestJSONGolden(t *testing.T) {
	cmd := &Command{Code: 105, Language: "GO", Version: 317, Opaque: 1,
		ExtFields: map[string]string{"topic": "T"}, Body: []byte("xy")}
	hdr, err := EncodeHeader(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if string(hdr) != goClientRouteHeader {
		t.Fatalf("header\n got %s\nwant %s", hdr, goClientRouteHeader)
	}
	frame, err := Encode(cmd)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte{0, 0, 0, 0x6a, 0, 0, 0, 0x64}, goClientRouteHeader...)
	want = append(want, 'x', 'y')
	if !bytes.Equal(frame, want) {
		t.Fatalf("frame\n got %x\nwant %x", frame, want)
	}
	got, err := DecodeFrame(frame[4:])
	if err != nil {
		t.Fatal(err)
	}
	assertCommandEqual(t, got, cmd)
}

// rocketMQGolden is the response header of protocol doc §1.5.
var rocketMQGolden = mustHex("0000" + "09" + "01df" + "00000009" + "00000001" + "00000000" + "0000000d" +
	"0006" + hex.EncodeToString([]byte("offset")) + "00000001" + hex.EncodeToString([]byte("5")))

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func TestRocketMQGolden(t *testing.T) {
	cmd := &Command{Code: 0, Language: "GO", Version: 479, Opaque: 9, Flag: FlagResponse,
		ExtFields: map[string]string{"offset": "5"}, Serialize: SerializeRocketMQ}
	hdr, err := EncodeHeader(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(hdr, rocketMQGolden) {
		t.Fatalf("header\n got %x\nwant %x", hdr, rocketMQGolden)
	}
	got, err := DecodeHeader(SerializeRocketMQ, rocketMQGolden)
	if err != nil {
		t.Fatal(err)
	}
	assertCommandEqual(t, got, cmd)
	frame, err := Encode(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if w := binary.BigEndian.Uint32(frame[4:]); w != 1<<24|uint32(len(rocketMQGolden)) {
		t.Fatalf("header word %08x", w)
	}
}

// assertCommandEqual compares two commands, treating a nil and an empty
// ext map alike and "" language as JAVA.
func assertCommandEqual(t *testing.T, got, want *Command) {
	t.Helper()
	norm := func(c *Command) Command {
		n := *c
		if n.Language == "" {
			n.Language = "JAVA"
		}
		if len(n.ExtFields) == 0 {
			n.ExtFields = nil
		}
		if len(n.Body) == 0 {
			n.Body = nil
		}
		return n
	}
	g, w := norm(got), norm(want)
	if g.Code != w.Code || g.Language != w.Language || g.Version != w.Version || g.Opaque != w.Opaque ||
		g.Flag != w.Flag || g.Remark != w.Remark || g.Serialize != w.Serialize ||
		!maps.Equal(g.ExtFields, w.ExtFields) || !bytes.Equal(g.Body, w.Body) {
		t.Fatalf("command mismatch\n got %+v\nwant %+v", g, w)
	}
}

func randString(r *rand.Rand, n int) string {
	alphabet := []string{"a", "Z", "0", " ", "\x01", "\x02", "\"", "\\", "/", "<", ">", "&", "\n", "\t", "\x7f",
		"é", "中", "\u2028", "😀", "=", ";", "%RETRY%"}
	var b strings.Builder
	for range r.IntN(n + 1) {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

func randCommand(r *rand.Rand, st SerializeType) *Command {
	langs := []string{"JAVA", "GO", "CPP", "PYTHON", "RUST", "NODE_JS"}
	cmd := &Command{
		Code:      int32(r.IntN(65536) - 32768),
		Language:  langs[r.IntN(len(langs))],
		Version:   int32(r.IntN(1000)),
		Opaque:    r.Int32() - r.Int32(),
		Flag:      int32(r.IntN(4)),
		Remark:    randString(r, 20),
		Serialize: st,
	}
	if st == SerializeJSON && r.IntN(4) == 0 {
		cmd.Code = r.Int32()
	}
	for range r.IntN(12) {
		cmd.SetExt(randString(r, 10), randString(r, 40))
	}
	if r.IntN(2) == 0 {
		cmd.Body = []byte(randString(r, 100))
	}
	return cmd
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		for range 2000 {
			cmd := randCommand(r, st)
			frame, err := Encode(cmd)
			if err != nil {
				t.Fatal(err)
			}
			if int(binary.BigEndian.Uint32(frame)) != len(frame)-4 {
				t.Fatalf("length prefix %d, frame %d", binary.BigEndian.Uint32(frame), len(frame))
			}
			got, err := DecodeFrame(frame[4:])
			if err != nil {
				t.Fatalf("%v\nframe %q", err, frame)
			}
			assertCommandEqual(t, got, cmd)
			// and through ReadCommand, several frames back to back
			rd := bufio.NewReaderSize(bytes.NewReader(append(append([]byte{}, frame...), frame...)), 16)
			for range 2 {
				got, err = ReadCommand(rd, 0)
				if err != nil {
					t.Fatal(err)
				}
				assertCommandEqual(t, got, cmd)
			}
			if _, err := ReadCommand(rd, 0); err != io.EOF {
				t.Fatalf("after the last frame: %v, want io.EOF", err)
			}
		}
	}
}

// jsonHeaderStruct mirrors the JSON header for comparisons with
// encoding/json.
type jsonHeaderStruct struct {
	Code      int32             `json:"code"`
	Language  string            `json:"language"`
	Version   int32             `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int32             `json:"flag"`
	Remark    string            `json:"remark"`
	ExtFields map[string]string `json:"extFields"`
}

func TestJSONEncoderMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		cmd := randCommand(r, SerializeJSON)
		if r.IntN(10) == 0 {
			cmd.Remark += "\xff\xfe bad utf8 \xc3"
		}
		s := jsonHeaderStruct{cmd.Code, cmd.Language, cmd.Version, cmd.Opaque, cmd.Flag, cmd.Remark, cmd.ExtFields}
		if s.ExtFields == nil {
			s.ExtFields = map[string]string{}
		}
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := EncodeHeader(cmd)
		if len(cmd.ExtFields) <= 1 {
			if !bytes.Equal(got, want) {
				t.Fatalf("\n got %s\nwant %s", got, want)
			}
			continue
		}
		// Ext fields are in map order: compare everything but their order.
		if len(got) != len(want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
		var g, w jsonHeaderStruct
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if g.Code != w.Code || g.Remark != w.Remark || !maps.Equal(g.ExtFields, w.ExtFields) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	}
}

func TestJSONDecodeVariants(t *testing.T) {
	cases := []struct {
		name, in string
		want     Command
	}{
		{"go client", goClientRouteHeader,
			Command{Code: 105, Language: "GO", Version: 317, Opaque: 1, ExtFields: map[string]string{"topic": "T"}}},
		{"java fastjson", `{"code":0,"extFields":{"queueId":"1","msgId":"AB"},"flag":1,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":479}`,
			Command{Code: 0, Language: "JAVA", Version: 479, Opaque: 7, Flag: 1, ExtFields: map[string]string{"queueId": "1", "msgId": "AB"}}},
		{"null remark and ext", `{"code":3,"remark":null,"extFields":null,"opaque":2}`,
			Command{Code: 3, Opaque: 2}},
		{"absent everything", `{}`, Command{}},
		{"whitespace", " \n{ \"code\" : 12 , \"extFields\" : { \"a\" : \"b\" } }\t", Command{Code: 12, ExtFields: map[string]string{"a": "b"}}},
		{"properties escapes", `{"code":10,"extFields":{"properties":"KEYS\u0001k1\u0002TAGS\u0001t\u0002"}}`,
			Command{Code: 10, ExtFields: map[string]string{"properties": "KEYS\x01k1\x02TAGS\x01t\x02"}}},
		{"all escapes", `{"remark":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00\ud800x\u003c"}`,
			Command{Remark: "\"\\/\b\f\n\r\té😀\ufffdx<"}},
		{"numbers as strings", `{"code":"105","version":"317","opaque":"-5","flag":"2"}`,
			Command{Code: 105, Version: 317, Opaque: -5, Flag: 2}},
		{"ext numbers and bools", `{"extFields":{"queueId":1,"big":-12.5e3,"sys":true,"n":false,"z":null}}`,
			Command{ExtFields: map[string]string{"queueId": "1", "big": "-12.5e3", "sys": "true", "n": "false", "z": ""}}},
		{"unknown nested values", `{"x":{"a":[1,2,{"b":null}],"c":"d"},"y":[],"code":1,"w":-0.5e-3}`, Command{Code: 1}},
		{"case-insensitive keys", `{"CODE":4,"ExtFields":{"k":"v"}}`, Command{Code: 4, ExtFields: map[string]string{"k": "v"}}},
		{"null numbers", `{"code":null,"opaque":null}`, Command{}},
		{"min and max int32", `{"opaque":-2147483648,"flag":2147483647}`, Command{Opaque: -2147483648, Flag: 2147483647}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeHeader(SerializeJSON, []byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			assertCommandEqual(t, got, &c.want)
			// encoding/json agrees wherever it accepts the input.
			var s jsonHeaderStruct
			if json.Unmarshal([]byte(c.in), &s) == nil {
				assertCommandEqual(t, got, &Command{Code: s.Code, Language: s.Language, Version: s.Version,
					Opaque: s.Opaque, Flag: s.Flag, Remark: s.Remark, ExtFields: s.ExtFields})
			}
		})
	}
}

func TestJSONDecodeErrors(t *testing.T) {
	bad := []string{
		``, `[]`, `{`, `{"code":1`, `{"code":1,}`, `{"code":01}`, `{"code":1.5}`, `{"code":2147483648}`,
		`{"code":"x"}`, `{"code":-}`, `{"remark":1}`, `{"remark":"a\x01b"}`, `{"remark":"\x"}`, `{"remark":"\u12"}`,
		`{"remark":"abc`, `{"extFields":[]}`, `{"extFields":{"a":{}}}`, `{"extFields":{"a":[1]}}`, `{"extFields":{1:"a"}}`,
		`{"code":1}x`, `{"code":1}{}`, `{"x":tru}`, `{"x":nul}`, `{"x":[1,]}`, `{"x":1e}`, `{"x":1.}`, `{code:1}`,
		`{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
	}
	for _, in := range bad {
		if _, err := DecodeHeader(SerializeJSON, []byte(in)); !errors.Is(err, ErrBadHeader) {
			t.Errorf("%q: err %v, want ErrBadHeader", in, err)
		}
	}
}

func TestExtLimits(t *testing.T) {
	many := &Command{ExtFields: map[string]string{}}
	for i := range MaxExtFields + 1 {
		many.ExtFields[strings.Repeat("k", 1+i%7)+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676))] = "v"
	}
	if len(many.ExtFields) != MaxExtFields+1 {
		t.Fatalf("built %d fields", len(many.ExtFields))
	}
	longKey := &Command{ExtFields: map[string]string{strings.Repeat("k", MaxExtKeyLen+1): "v"}}
	longVal := &Command{ExtFields: map[string]string{"k": strings.Repeat("v", MaxExtValueLen+1)}}
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		for _, c := range []struct {
			cmd  *Command
			want error
		}{{many, ErrTooManyExtFields}, {longKey, ErrExtFieldTooLong}, {longVal, ErrExtFieldTooLong}} {
			c.cmd.Serialize = st
			hdr, err := EncodeHeader(c.cmd)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := DecodeHeader(st, hdr); !errors.Is(err, c.want) {
				t.Errorf("serialize %d: err %v, want %v", st, err, c.want)
			}
		}
	}
	// exactly at the limits decodes
	ok := &Command{ExtFields: map[string]string{strings.Repeat("k", MaxExtKeyLen): strings.Repeat("v", MaxExtValueLen)}}
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		ok.Serialize = st
		hdr, _ := EncodeHeader(ok)
		if _, err := DecodeHeader(st, hdr); err != nil {
			t.Errorf("serialize %d at the limits: %v", st, err)
		}
	}
}

func TestRocketMQDecodeErrors(t *testing.T) {
	good := append([]byte(nil), rocketMQGolden...)
	set32 := func(b []byte, at int, v uint32) []byte {
		c := append([]byte(nil), b...)
		binary.BigEndian.PutUint32(c[at:], v)
		return c
	}
	cases := map[string][]byte{
		"short":              good[:20],
		"remark too long":    set32(good, 13, 1000),
		"remark huge":        set32(good, 13, 0xFFFFFFFF),
		"ext too long":       set32(good, 17, 14),
		"ext too short":      set32(good, 17, 12),
		"ext huge":           set32(good, 17, 0x7FFFFFFF),
		"value length huge":  set32(good, 29, 0xFFFFFFFF),
		"value length short": set32(good, 29, 0),
		"truncated":          good[:len(good)-1],
	}
	for name, in := range cases {
		_, err := DecodeHeader(SerializeRocketMQ, in)
		if !errors.Is(err, ErrBadHeader) && !errors.Is(err, ErrExtFieldTooLong) {
			t.Errorf("%s: err %v", name, err)
		}
	}
	if _, err := EncodeHeader(&Command{Code: 200050, Serialize: SerializeRocketMQ}); !errors.Is(err, ErrCodeOutOfRange) {
		t.Errorf("code 200050 in ROCKETMQ: %v", err)
	}
	if _, err := EncodeHeader(&Command{Serialize: 7}); !errors.Is(err, ErrBadSerializeType) {
		t.Errorf("serialize 7: %v", err)
	}
}

func TestLanguage(t *testing.T) {
	for i, n := range languageNames {
		b, ok := LanguageCode(n)
		if !ok || int(b) != i || LanguageName(b) != n {
			t.Errorf("%s: %d %v", n, b, ok)
		}
	}
	if b, ok := LanguageCode("COBOL"); ok || b != langOther {
		t.Errorf("COBOL: %d %v", b, ok)
	}
	if LanguageName(200) != "OTHER" {
		t.Errorf("byte 200: %s", LanguageName(200))
	}
}

func TestFrameLimits(t *testing.T) {
	hdrWord := func(total, word uint32, rest ...byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, total)
		b = binary.BigEndian.AppendUint32(b, word)
		return append(b, rest...)
	}
	cases := []struct {
		name string
		in   []byte
		max  int
		want error
	}{
		{"2^31-1 length", hdrWord(1<<31-1, 0), 0, ErrFrameTooLarge},
		{"negative length", hdrWord(0xFFFFFFFF, 0), 0, ErrFrameTooLarge},
		{"over a small limit", hdrWord(1000, 10), 1003, ErrFrameTooLarge},
		{"length below 4", hdrWord(3, 0), 0, ErrFrameTooShort},
		{"header longer than frame", hdrWord(10, 7), 0, ErrHeaderTooLarge},
		{"header length max", hdrWord(100, 0xFFFFFF), 0, ErrHeaderTooLarge},
		{"bad type", hdrWord(6, 5<<24|2, '{', '}'), 0, ErrBadSerializeType},
		{"bad json", hdrWord(6, 2, '{', '{'), 0, ErrBadHeader},
		{"truncated prefix", []byte{0, 0}, 0, io.ErrUnexpectedEOF},
		{"truncated header word", []byte{0, 0, 0, 10, 0}, 0, io.ErrUnexpectedEOF},
		{"truncated header", hdrWord(10, 6, '{'), 0, io.ErrUnexpectedEOF},
		{"truncated body", hdrWord(10, 2, '{', '}', 1), 0, io.ErrUnexpectedEOF},
		{"empty", nil, 0, io.EOF},
	}
	for _, c := range cases {
		_, err := ReadCommand(bufio.NewReader(bytes.NewReader(c.in)), c.max)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
		if len(c.in) >= 4 && c.want != io.ErrUnexpectedEOF && c.want != ErrFrameTooLarge && c.want != ErrFrameTooShort {
			if _, err := DecodeFrame(c.in[4:]); !errors.Is(err, c.want) {
				t.Errorf("DecodeFrame %s: err %v, want %v", c.name, err, c.want)
			}
		}
	}
	if _, err := DecodeFrame([]byte{0, 0}); !errors.Is(err, ErrFrameTooShort) {
		t.Errorf("DecodeFrame short: %v", err)
	}
	// the limit counts the 4-byte prefix, as Java's frame decoder does
	frame, _ := Encode(&Command{Code: 1, Body: make([]byte, 100)})
	if _, err := ReadCommand(bufio.NewReader(bytes.NewReader(frame)), len(frame)); err != nil {
		t.Errorf("frame at the limit: %v", err)
	}
	if _, err := ReadCommand(bufio.NewReader(bytes.NewReader(frame)), len(frame)-1); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("frame one over the limit: %v", err)
	}
}

// A huge length prefix must be refused without allocating for it.
func TestReadCommandRefusesBeforeAllocating(t *testing.T) {
	in := binary.BigEndian.AppendUint32(nil, 1<<31-1)
	in = binary.BigEndian.AppendUint32(in, 0xFFFFFF)
	rd := bytes.NewReader(in)
	br := bufio.NewReader(rd)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 100 {
		rd.Reset(in)
		br.Reset(rd)
		if _, err := ReadCommand(br, 0); !errors.Is(err, ErrFrameTooLarge) {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if perRead := (after.TotalAlloc - before.TotalAlloc) / 100; perRead > 4096 {
		t.Fatalf("%d bytes allocated per refused frame", perRead)
	}
}

func TestReadCommandLargeHeader(t *testing.T) {
	cmd := &Command{Code: 10, ExtFields: map[string]string{"properties": strings.Repeat("p\x01", 40000)}, Body: []byte("b")}
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		cmd.Serialize = st
		frame, err := Encode(cmd)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadCommand(bufio.NewReaderSize(bytes.NewReader(frame), 4096), 0)
		if err != nil {
			t.Fatal(err)
		}
		assertCommandEqual(t, got, cmd)
	}
}

func TestReadCommandLargeBody(t *testing.T) {
	for _, n := range []int{bodyChunk - 1, bodyChunk, bodyChunk + 1, 3*bodyChunk + 7} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i * 7)
		}
		frame, err := Encode(&Command{Code: 1, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadCommand(bufio.NewReader(bytes.NewReader(frame)), 0)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Body, body) || cap(got.Body) != n {
			t.Fatalf("body of %d: got %d bytes, cap %d", n, len(got.Body), cap(got.Body))
		}
		if _, err := ReadCommand(bufio.NewReader(bytes.NewReader(frame[:len(frame)-1])), 0); err != io.ErrUnexpectedEOF {
			t.Fatalf("truncated body of %d: %v", n, err)
		}
	}
}

// A frame that announces a large body but sends none costs at most one
// chunk.
func TestReadCommandAnnouncedBodyAllocatesAChunk(t *testing.T) {
	frame, _ := Encode(&Command{Code: 1})
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4+MaxFrameSize-1024))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadCommand(bufio.NewReader(bytes.NewReader(frame)), 0)
	runtime.ReadMemStats(&after)
	if err != io.ErrUnexpectedEOF {
		t.Fatal(err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*bodyChunk {
		t.Fatalf("%d bytes allocated", got)
	}
}
