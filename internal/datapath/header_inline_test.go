package datapath

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/spoolmq/spool/remoting"
)

// randomHeaderValue draws a field value: numbers in and out of range,
// blanks, booleans in several cases, property strings with the separators,
// and text that needs JSON escapes.
func randomHeaderValue(r *rand.Rand) string {
	if r.IntN(20) < 17 { // mostly well-formed numbers, so most headers parse
		return fmt.Sprint(r.IntN(100))
	}
	vals := []string{"", " ", "0", "1", "-1", " 7 ", "2147483648", "-9223372036854775809", "1700000000000", "x",
		"true", "TRUE", "false", "TAGS\x01a\x02KEYS\x01k\x02", "UNIQ_KEY\x01AC11\x02", "\"q\"\\", "é\u2028", "\x00"}
	return vals[r.IntN(len(vals))]
}

// The send and pull headers read from the inline table (as the broker's
// connections deliver them) equal the headers read from the map, on
// random headers of both serializations, long and V2 names, missing,
// duplicate-free and malformed fields alike, and fail alike.
func TestHeadersFromInlineTableMatchTheMap(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	pullKeys := []string{"consumerGroup", "topic", "queueId", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset",
		"suspendTimeoutMillis", "subscription", "subVersion", "expressionType", "maxMsgBytes"}
	now := func() int64 { return 42 }
	parsed, pulls := 0, 0
	defer func() {
		// The comparison must have met headers that parse, not errors only.
		if parsed < 300 || pulls < 100 {
			t.Errorf("only %d send and %d pull headers parsed", parsed, pulls)
		}
	}()
	for i := range 4000 {
		code := []int32{remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage, remoting.PullMessage}[i%4]
		ext := map[string]string{}
		var keys []string
		switch {
		case code == remoting.PullMessage:
			keys = pullKeys
		case r.IntN(2) == 0:
			keys = sendFieldNames[:]
		default:
			keys = sendFieldShort[:]
		}
		for _, k := range keys {
			if r.IntN(20) > 0 {
				ext[k] = randomHeaderValue(r)
			}
		}
		for range r.IntN(4) {
			ext[fmt.Sprintf("extra%d", r.IntN(10))] = randomHeaderValue(r)
		}
		st := []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ}[r.IntN(2)]
		frame, err := remoting.Encode(&remoting.Command{Code: code, Language: "GO", ExtFields: ext, Serialize: st})
		if err != nil {
			t.Fatal(err)
		}
		fromMap, err := remoting.DecodeFrame(frame[4:])
		if err != nil {
			t.Fatal(err)
		}
		inline, err := remoting.DecodeFrameInline(frame[4:])
		if err != nil {
			t.Fatal(err)
		}
		if inline.ExtFields != nil && len(ext) <= remoting.ExtTableCap {
			t.Fatalf("the inline read built a map for %d fields", len(ext))
		}
		if code == remoting.PullMessage {
			want, werr := parsePullHeader(fromMap)
			got, gerr := parsePullHeader(inline)
			if fmt.Sprint(werr) != fmt.Sprint(gerr) || (werr == nil && *got != *want) {
				t.Fatalf("pull %v: inline %+v, %v; map %+v, %v", ext, got, gerr, want, werr)
			}
			if werr == nil {
				pulls++
			}
			continue
		}
		want, werr := parseSendHeader(fromMap, now)
		var got sendHeader
		buf, gerr := parseSendHeaderInto(inline, now, &got, 64)
		if fmt.Sprint(werr) != fmt.Sprint(gerr) || (werr == nil && got != *want) {
			t.Fatalf("send %d %v: inline %+v, %v; map %+v, %v", code, ext, got, gerr, want, werr)
		}
		if werr == nil {
			parsed++
		}
		if _, has := inline.LookupExt(keys[sfProperties]); werr == nil && has && (string(buf) != want.properties || cap(buf) < len(buf)+64) {
			t.Fatalf("properties buffer %q (cap %d), want %q with 64 bytes of room", buf, cap(buf), want.properties)
		}
	}
}
