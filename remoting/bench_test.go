package remoting

import (
	"bufio"
	"bytes"
	"testing"
)

// sendMessageRequest is a SEND_MESSAGE request as the Go client builds it,
// with a 1 KiB body.
func sendMessageRequest(st SerializeType) *Command {
	return &Command{
		Code: SendMessage, Language: "GO", Version: 317, Opaque: 12345, Serialize: st,
		ExtFields: map[string]string{
			"producerGroup": "please_rename_unique_group_name", "topic": "TopicTest", "defaultTopic": "TBW102",
			"defaultTopicQueueNums": "4", "queueId": "1", "sysFlag": "0", "bornTimestamp": "1700000000000",
			"flag": "0", "properties": "KEYS\x01order-1234\x02TAGS\x01TagA\x02UNIQ_KEY\x01AC110001000018B4AAC20000000\x02WAIT\x01true\x02",
			"reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "0", "batch": "false",
		},
		Body: bytes.Repeat([]byte("m"), 1024),
	}
}

var serializations = []struct {
	name string
	st   SerializeType
}{{"JSON", SerializeJSON}, {"ROCKETMQ", SerializeRocketMQ}}

func BenchmarkEncodeSendMessage(b *testing.B) {
	for _, s := range serializations {
		b.Run(s.name, func(b *testing.B) {
			cmd := sendMessageRequest(s.st)
			buf, _ := AppendFrame(nil, cmd)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = AppendFrame(buf[:0], cmd)
			}
		})
	}
}

func BenchmarkDecodeSendMessage(b *testing.B) {
	benchDecode(b, sendMessageRequest, DecodeFrame)
}

// benchDecode measures decode over the frame of req in each serialization.
func benchDecode(b *testing.B, req func(SerializeType) *Command, decode func([]byte) (*Command, error)) {
	for _, s := range serializations {
		b.Run(s.name, func(b *testing.B) {
			frame, _ := Encode(req(s.st))
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decode(frame[4:]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// sendV2Request is a SEND_MESSAGE_V2 request with the short keys the Java
// client and spool bench send: the header alone, as a connection decodes it
// into its inline table.
func sendV2Request(st SerializeType) *Command {
	return &Command{
		Code: SendMessageV2, Language: "JAVA", Version: CurrentVersion, Opaque: 123456, Serialize: st,
		ExtFields: map[string]string{"a": "please_rename_unique_group_name", "b": "TopicTest", "c": "TBW102", "d": "4",
			"e": "3", "f": "0", "g": "1765000000000", "h": "0", "i": "UNIQ_KEY\x01AC11000100002A9F0000000000012345\x02",
			"j": "0", "k": "false"},
	}
}

func BenchmarkDecodeSendHeaderV2(b *testing.B) {
	benchDecode(b, sendV2Request, DecodeFrameInline)
}

// BenchmarkReadCommandSendMessage reads frames from a buffered stream, as
// a connection's reader does (the body is copied out of the stream).
func BenchmarkReadCommandSendMessage(b *testing.B) {
	for _, s := range serializations {
		b.Run(s.name, func(b *testing.B) {
			frame, _ := Encode(sendMessageRequest(s.st))
			rd := bytes.NewReader(frame)
			br := bufio.NewReaderSize(rd, 32<<10)
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(frame)
				br.Reset(rd)
				if _, err := ReadCommand(br, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// pullMessageRequest is a PULL_MESSAGE request as the Go client builds it.
func pullMessageRequest(st SerializeType) *Command {
	return &Command{
		Code: PullMessage, Language: "GO", Version: 317, Opaque: 12345, Serialize: st,
		ExtFields: map[string]string{
			"consumerGroup": "please_rename_unique_group_name", "topic": "TopicTest", "queueId": "1",
			"queueOffset": "123456", "maxMsgNums": "32", "sysFlag": "6", "commitOffset": "123400",
			"suspendTimeoutMillis": "20000", "subscription": "*", "subVersion": "1700000000000",
			"expressionType": "TAG",
		},
	}
}

// BenchmarkReadCommandInline reads frames as the server's connections do:
// the ext fields stay in the command's inline table and every field is
// then looked up once, as a handler reads its header.
func BenchmarkReadCommandInline(b *testing.B) {
	for _, req := range []struct {
		name string
		cmd  func(SerializeType) *Command
	}{{"SendMessage", sendMessageRequest}, {"PullMessage", pullMessageRequest}} {
		for _, s := range serializations {
			b.Run(req.name+"/"+s.name, func(b *testing.B) {
				cmd := req.cmd(s.st)
				var keys []string
				for k := range cmd.ExtFields {
					keys = append(keys, k)
				}
				frame, _ := Encode(cmd)
				rd := bytes.NewReader(frame)
				br := bufio.NewReaderSize(rd, 32<<10)
				b.SetBytes(int64(len(frame)))
				b.ReportAllocs()
				for b.Loop() {
					rd.Reset(frame)
					br.Reset(rd)
					got, err := ReadCommandInline(br, 0)
					if err != nil {
						b.Fatal(err)
					}
					for _, k := range keys {
						if _, ok := got.LookupExt(k); !ok {
							b.Fatal(k)
						}
					}
				}
			})
		}
	}
}

// BenchmarkEncodeSendResponse builds and encodes a send answer with its
// five ext fields through NewResponseExt's writer, as the broker does.
func BenchmarkEncodeSendResponse(b *testing.B) {
	for _, s := range serializations {
		b.Run(s.name, func(b *testing.B) {
			req := &Command{Opaque: 1, Serialize: s.st}
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				resp, w := NewResponseExt(req, Success, "")
				w.Str("msgId", "7F00000100002A9F0000000000012345")
				w.Int("queueId", 1)
				w.Int("queueOffset", 123456789)
				w.Str("MSG_REGION", "DefaultRegion")
				w.Str("TRACE_ON", "true")
				w.Close()
				buf, _ = AppendFrame(buf[:0], resp)
			}
		})
	}
}
