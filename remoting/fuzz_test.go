package remoting

import (
	"bufio"
	"bytes"
	"encoding/json"
	"maps"
	"testing"
	"unicode/utf8"
)

// Seed corpora live in testdata/fuzz/<FuzzName>/; these add the golden
// examples.

func FuzzDecodeFrame(f *testing.F) {
	for _, cmd := range []*Command{
		{Code: 105, Language: "GO", Version: 317, Opaque: 1, ExtFields: map[string]string{"topic": "T"}, Body: []byte("xy")},
		{Code: 0, Language: "GO", Version: 479, Opaque: 9, Flag: 1, ExtFields: map[string]string{"offset": "5"}, Serialize: SerializeRocketMQ},
	} {
		frame, _ := Encode(cmd)
		f.Add(frame[4:])
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		cmd, err := DecodeFrame(frame)
		// ReadCommand must agree with DecodeFrame on the same bytes.
		var prefixed []byte
		prefixed = append(prefixed, byte(len(frame)>>24), byte(len(frame)>>16), byte(len(frame)>>8), byte(len(frame)))
		prefixed = append(prefixed, frame...)
		cmd2, err2 := ReadCommand(bufio.NewReaderSize(bytes.NewReader(prefixed), 16), 0)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("DecodeFrame err %v, ReadCommand err %v", err, err2)
		}
		if err != nil {
			return
		}
		assertCommandEqual(t, cmd2, cmd)
		// A decoded command re-encodes and decodes to itself.
		out, err := Encode(cmd)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := DecodeFrame(out[4:])
		if err != nil {
			t.Fatalf("decode of re-encoded: %v", err)
		}
		if cmd.Serialize == SerializeJSON && !validUTF8Command(cmd) {
			return // invalid UTF-8 is written as U+FFFD
		}
		assertCommandEqual(t, again, cmd)
	})
}

func validUTF8Command(c *Command) bool {
	if !utf8.ValidString(c.Language) || !utf8.ValidString(c.Remark) {
		return false
	}
	for k, v := range c.ExtFields {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return false
		}
	}
	return true
}

func FuzzDecodeJSONHeader(f *testing.F) {
	f.Add([]byte(goClientRouteHeader))
	f.Add([]byte(`{"code":0,"extFields":{"queueId":"1"},"flag":1,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":479}`))
	f.Add([]byte(`{"code":10,"remark":null,"extFields":{"properties":"KEYS\u0001k\u0002"}}`))
	f.Fuzz(func(t *testing.T, hdr []byte) {
		cmd, err := DecodeHeader(SerializeJSON, hdr)
		// Where encoding/json accepts a valid UTF-8 header, the decoder
		// must accept it and agree.
		var s jsonHeaderStruct
		// Divergences by design: a top-level null is refused, and skipped
		// values nest at most maxJSONDepth deep.
		comparable := utf8.Valid(hdr) && string(bytes.TrimSpace(hdr)) != "null" &&
			bytes.Count(hdr, []byte("["))+bytes.Count(hdr, []byte("{")) < maxJSONDepth
		if comparable && json.Unmarshal(hdr, &s) == nil {
			if err != nil {
				if bytes.Count(hdr, []byte(`":`)) < MaxExtFields && len(hdr) < MaxExtValueLen {
					t.Fatalf("encoding/json accepts, decoder says %v", err)
				}
				return
			}
			want := &Command{Code: s.Code, Language: s.Language, Version: s.Version, Opaque: s.Opaque,
				Flag: s.Flag, Remark: s.Remark, ExtFields: s.ExtFields}
			if cmd.Code != want.Code || cmd.Language != want.Language || cmd.Version != want.Version ||
				cmd.Opaque != want.Opaque || cmd.Flag != want.Flag || cmd.Remark != want.Remark ||
				!maps.Equal(cmd.ExtFields, want.ExtFields) && !(len(cmd.ExtFields) == 0 && len(want.ExtFields) == 0) {
				t.Fatalf("decoder %+v\nencoding/json %+v", cmd, want)
			}
		}
		if err != nil {
			return
		}
		out, err := EncodeHeader(cmd)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeHeader(SerializeJSON, out)
		if err != nil {
			t.Fatalf("decode of re-encoded %q: %v", out, err)
		}
		if validUTF8Command(cmd) {
			assertCommandEqual(t, again, cmd)
		}
	})
}

func FuzzDecodeRocketMQHeader(f *testing.F) {
	f.Add(rocketMQGolden)
	hdr, _ := EncodeHeader(&Command{Code: 10, Language: "JAVA", Version: 479, Opaque: 3, Remark: "r",
		ExtFields: map[string]string{"a": "", "properties": "K\x01v\x02"}, Serialize: SerializeRocketMQ})
	f.Add(hdr)
	f.Fuzz(func(t *testing.T, hdr []byte) {
		cmd, err := DecodeHeader(SerializeRocketMQ, hdr)
		if err != nil {
			return
		}
		out, err := EncodeHeader(cmd)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeHeader(SerializeRocketMQ, out)
		if err != nil {
			t.Fatalf("decode of re-encoded: %v", err)
		}
		assertCommandEqual(t, again, cmd)
		// Unknown language bytes read as OTHER; otherwise the bytes
		// round-trip except for ext order and duplicate keys.
		if hdr[2] < byte(len(languageNames)) && len(out) == len(hdr) && !bytes.Equal(out[:17], hdr[:17]) {
			t.Fatalf("fixed part changed: %x -> %x", hdr[:17], out[:17])
		}
	})
}
