package message

import (
	"bytes"
	"compress/zlib"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestGoClientDecodesRecords feeds records this package wrote, back to back
// as in a pull body, to the official Go client's decoder.
func TestGoClientDecodesRecords(t *testing.T) {
	var zbuf bytes.Buffer
	zw := zlib.NewWriter(&zbuf)
	zw.Write([]byte("compressed body"))
	zw.Close()

	msgs := []*Inner{
		sampleInner(v4(10, 0, 0, 1, 50000), v4(192, 168, 0, 2, 10911)),
		sampleInner(v6("2001:db8::1", 40000), v6("2001:db8::2", 10911)),
		{Topic: "Z", Body: zbuf.Bytes(), SysFlag: SysFlagCompressed, BornHost: v4(1, 2, 3, 4, 5), StoreHost: v4(192, 168, 0, 2, 10911)},
	}
	var body []byte
	var offsets []int64
	for i, m := range msgs {
		start := len(body)
		body = EncodeRecord(body, m, "")
		offsets = append(offsets, int64(1000+start))
		PatchRecord(body[start:], int64(i+7), int64(1000+start), 1700000001000+int64(i))
	}
	got := primitive.DecodeMessage(body)
	if len(got) != len(msgs) {
		t.Fatalf("Go client decoded %d messages, want %d", len(got), len(msgs))
	}
	for i, g := range got {
		m := msgs[i]
		wantBody := m.Body
		if i == 2 {
			wantBody = []byte("compressed body")
		}
		if g.Topic != m.Topic || !bytes.Equal(g.Body, wantBody) || g.Queue.QueueId != int(m.QueueID) ||
			g.Flag != m.Flag || g.QueueOffset != int64(i+7) || g.CommitLogOffset != offsets[i] ||
			g.StoreTimestamp != 1700000001000+int64(i) || g.BornTimestamp != m.BornTimestamp ||
			g.ReconsumeTimes != m.ReconsumeTimes || g.PreparedTransactionOffset != m.PreparedTransactionOffset ||
			g.BodyCRC != BodyCRC(m.Body) {
			t.Fatalf("message %d decoded as %+v", i, g)
		}
		for k, v := range m.Properties {
			if g.GetProperty(k) != v {
				t.Fatalf("message %d property %s = %q, want %q", i, k, g.GetProperty(k), v)
			}
		}
		if want := OffsetMsgID(m.StoreHost, offsets[i]); g.OffsetMsgId != want {
			t.Fatalf("message %d offsetMsgId %s, want %s", i, g.OffsetMsgId, want)
		}
		id, err := primitive.UnmarshalMsgID([]byte(g.OffsetMsgId))
		if err != nil || id.Offset != offsets[i] || id.Port != int(m.StoreHost.Port) {
			t.Fatalf("message %d UnmarshalMsgID = %+v %v", i, id, err)
		}
	}
	if got[0].BornHost != "10.0.0.1:50000" || got[0].StoreHost != "192.168.0.2:10911" {
		t.Fatalf("hosts %s %s", got[0].BornHost, got[0].StoreHost)
	}
	if got[0].MsgId != "0A0B0C0D" {
		t.Fatalf("MsgId from UNIQ_KEY = %s", got[0].MsgId)
	}
}

// TestGoClientBatchBody decodes a batch body the Go producer marshals.
func TestGoClientBatchBody(t *testing.T) {
	var body []byte
	for _, s := range []string{"one", "two", ""} {
		m := primitive.NewMessage("T", []byte(s))
		if s != "" {
			m.WithTag("Tag" + s)
		}
		body = append(body, m.Marshal()...)
	}
	ms, err := DecodeBatchBody(body, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || string(ms[1].Body) != "two" || ms[0].TagsCode != TagsHashCode("Tagone") || ms[2].TagsCode != 0 {
		t.Fatalf("members %+v", ms)
	}
}
