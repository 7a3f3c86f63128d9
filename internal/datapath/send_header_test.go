package datapath

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/processor"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

func TestParseSendHeaderNames(t *testing.T) {
	long := map[string]string{
		"producerGroup": "pg", "topic": "T", "defaultTopic": "TBW102", "defaultTopicQueueNums": "8", "queueId": " 3 ",
		"sysFlag": "4", "bornTimestamp": "1700000000000", "flag": "7", "properties": "TAGS\x01a\x02", "reconsumeTimes": "2",
		"unitMode": "TRUE", "maxReconsumeTimes": "5", "batch": "true", "bname": "b", "extra": "x",
	}
	short := map[string]string{}
	for k, v := range long {
		if s, ok := sendV2Keys[k]; ok {
			short[s] = v
		}
	}
	want := sendHeader{producerGroup: "pg", topic: "T", defaultTopic: "TBW102", defaultTopicQueueNums: 8, queueID: 3,
		sysFlag: 4, bornTimestamp: 1700000000000, flag: 7, properties: "TAGS\x01a\x02", reconsumeTimes: 2, unitMode: true,
		maxReconsumeTimes: 5, hasMaxReconsumeTimes: true, batch: true}
	for _, tc := range []struct {
		code int32
		ext  map[string]string
	}{
		{remoting.SendMessage, long},
		{remoting.SendMessageV2, long}, // V2 codes accept long names without "b"
		{remoting.SendMessageV2, short},
		{remoting.SendBatchMessage, short},
		{remoting.SendReplyMessageV2, short},
	} {
		h, err := parseSendHeader(remoting.NewRequest(tc.code, tc.ext, nil), wallMillis)
		if err != nil {
			t.Fatalf("code %d: %v", tc.code, err)
		}
		if *h != want {
			t.Errorf("code %d: got %+v\nwant %+v", tc.code, *h, want)
		}
	}
	// Code 10 does not read short names.
	if _, err := parseSendHeader(remoting.NewRequest(remoting.SendMessage, short, nil), wallMillis); err == nil ||
		!strings.Contains(err.Error(), "missing ext field producerGroup") {
		t.Errorf("V1 code with short names: err %v", err)
	}
}

func TestParseSendHeaderDefaultsAndErrors(t *testing.T) {
	h, err := parseSendHeader(remoting.NewRequest(remoting.SendMessage,
		map[string]string{"producerGroup": "pg", "topic": "T", "queueId": "0", "bornTimestamp": " "}, nil), wallMillis)
	if err != nil {
		t.Fatal(err)
	}
	if h.defaultTopic != topicAutoCreate || h.defaultTopicQueueNums != 4 || h.bornTimestamp <= 0 || h.hasMaxReconsumeTimes {
		t.Errorf("defaults: %+v", *h)
	}
	for _, tc := range []struct {
		code int32
		ext  map[string]string
		want string
	}{
		{remoting.SendMessage, map[string]string{"topic": "T", "queueId": "x"}, "missing ext field producerGroup"},
		{remoting.SendMessage, map[string]string{"producerGroup": "pg", "topic": "T", "queueId": "x"}, `queueId="x" is not a 32-bit integer`},
		{remoting.SendMessage, map[string]string{"producerGroup": "pg", "topic": "T"}, "missing ext field queueId"},
		{remoting.SendMessageV2, map[string]string{"a": "pg", "b": "T", "e": "0", "g": "soon"}, `bornTimestamp (g)="soon" is not an integer`},
		{remoting.SendMessageV2, map[string]string{"a": "pg", "b": "T"}, "missing ext field queueId (e)"},
	} {
		_, err := parseSendHeader(remoting.NewRequest(tc.code, tc.ext, nil), wallMillis)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.ext, err, tc.want)
		}
	}
}

func TestScanPlainProperties(t *testing.T) {
	for _, tc := range []struct {
		s          string
		plain      bool
		tags, uniq string
	}{
		{"", true, "", ""},
		{"TAGS\x01a\x02UNIQ_KEY\x01U1\x02KEYS\x01k\x02", true, "a", "U1"},
		{"TAGS\x01a\x02TAGS\x01b\x02", true, "b", ""}, // the last occurrence wins, as in the map
		{"WAIT\x01false\x02TAGS\x01a\x02", true, "a", ""},
		{"WAIT\x01false\x02WAIT\x01true\x02", true, "", ""},
		{"WAIT\x01true\x02WAIT\x01false\x02", true, "", ""},
		{"TAGS\x01a", false, "", ""},         // no trailing separator
		{"\x02TAGS\x01a\x02", false, "", ""}, // an empty segment is dropped by the map path
		{"TAGS\x01\x02", false, "", ""},      // an empty value too
		{"DELAY\x013\x02", false, "", ""},
		{"TRAN_MSG\x01false\x02", false, "", ""},
		{"CLUSTER\x01c\x02", false, "", ""},
		{"TIMER_DELAY_MS\x011\x02", false, "", ""},
		{"__DELAY_SRC\x011:2\x02", false, "", ""},
		{"__TIMER_SRC\x011\x02", false, "", ""},
	} {
		ps, ok := scanPlainProperties(tc.s)
		if ok != tc.plain || (ok && (ps.tags != tc.tags || ps.uniq != tc.uniq)) {
			t.Errorf("%q: plain %v tags %q uniq %q, want %v %q %q", tc.s, ok, ps.tags, ps.uniq, tc.plain, tc.tags, tc.uniq)
		}
		// The WAIT property read in the same pass says what a lookup of
		// the string says.
		if v, found := message.LookupProperty(tc.s, message.PropertyWaitStoreMsgOK); ok && (ps.wait != v || ps.waitFound != found) {
			t.Errorf("%q: WAIT %q %v, a lookup finds %q %v", tc.s, ps.wait, ps.waitFound, v, found)
		}
	}
}

func BenchmarkParseSendHeader(b *testing.B) {
	v1 := sendV1("Bench", 0, map[string]string{"TAGS": "a", "UNIQ_KEY": "0123456789ABCDEF0123456789ABCDEF"}, nil)
	short := map[string]string{}
	for k, v := range v1.ExtFields {
		short[sendV2Keys[k]] = v
	}
	v2 := remoting.NewRequest(remoting.SendMessageV2, short, nil)
	for _, req := range []*remoting.Command{v1, v2} {
		b.Run(remoting.RequestName(req.Code), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := parseSendHeader(req, wallMillis); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestPlainDecimalMatchesStrconv(t *testing.T) {
	for _, s := range []string{"0", "7", "-1", "-0", "2147483647", "2147483648", "-2147483648", "-2147483649",
		"999999999999999999", "1000000000000000000", "9223372036854775807", "", "-", "+1", " 1", "1 ", "1a", "٣"} {
		r := processor.Header{}
		got64 := r.I64Of("k", s, true, false, -7)
		got32 := r.I32Of("k", s, true, false, -7)
		want64, err64 := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err64 != nil {
			want64 = -7
		}
		want32, err32 := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err32 != nil {
			want32 = -7
		}
		if got64 != want64 || got32 != int32(want32) {
			t.Errorf("%q: i64 %d i32 %d, want %d %d", s, got64, got32, want64, want32)
		}
	}
}

// wallMillis is the wall clock in milliseconds.
func wallMillis() int64 { return time.Now().UnixMilli() }

// sendV1 builds a SEND_MESSAGE request with the Go client's header.
func sendV1(topic string, queueID int, props map[string]string, body []byte) *remoting.Command {
	return remoting.NewRequest(remoting.SendMessage, map[string]string{
		"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": strconv.Itoa(queueID), "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
		"flag": "0", "properties": message.EncodeProperties(props), "reconsumeTimes": "0", "unitMode": "false",
		"maxReconsumeTimes": "0", "batch": "false",
	}, body)
}
