package broker

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// The benchmarks below send one prebuilt request after another in each
// header serialization, so that -benchmem counts what a send, a batch send
// and a pull cost the broker and the client's read of the answer, not the
// building of the request.

var benchSerializations = []struct {
	name string
	st   remoting.SerializeType
}{{"JSON", remoting.SerializeJSON}, {"ROCKETMQ", remoting.SerializeRocketMQ}}

func benchClient(st remoting.SerializeType) *transport.Client {
	return transport.NewClient(transport.ClientConfig{DialTimeout: 3 * time.Second, Serialize: st, InlineResponses: true})
}

// BenchmarkSendOneByOne measures SEND_MESSAGE (1 KiB, a UNIQ_KEY and tags
// as the clients send them).
func BenchmarkSendOneByOne(b *testing.B) {
	for _, s := range benchSerializations {
		b.Run(s.name, func(b *testing.B) {
			e := startBenchBroker(b)
			cl := benchClient(s.st)
			defer cl.Close()
			req := sendV1("Bench", 0, map[string]string{"TAGS": "a", message.PropertyUniqClientMessageIDKeyIdx: message.NewUniqID()}, make([]byte, 1024))
			b.SetBytes(1024)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := cl.Invoke(context.Background(), e.b.Addr(), req)
				if err != nil || resp.Code != remoting.Success {
					b.Fatalf("send: %v %+v", err, resp)
				}
			}
		})
	}
}

// BenchmarkSendBatch32 measures SEND_BATCH_MESSAGE of 32 messages of 1 KiB.
func BenchmarkSendBatch32(b *testing.B) {
	for _, s := range benchSerializations {
		b.Run(s.name, func(b *testing.B) {
			e := startBenchBroker(b)
			cl := benchClient(s.st)
			defer cl.Close()
			members := make([]message.BatchMember, 32)
			for i := range members {
				members[i] = message.BatchMember{Body: make([]byte, 1024), PropertiesString: message.EncodeProperties(
					map[string]string{"TAGS": "a", message.PropertyUniqClientMessageIDKeyIdx: message.NewUniqID()})}
			}
			req := sendV1("Bench", 0, nil, message.EncodeBatchBody(nil, members))
			req.Code = remoting.SendBatchMessage
			req.ExtFields["batch"] = "true"
			b.SetBytes(32 * 1024)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := cl.Invoke(context.Background(), e.b.Addr(), req)
				if err != nil || resp.Code != remoting.Success {
					b.Fatalf("batch send: %v %+v", err, resp)
				}
			}
		})
	}
}

// BenchmarkPullOneByOne measures PULL_MESSAGE of 32 stored messages.
func BenchmarkPullOneByOne(b *testing.B) {
	for _, s := range benchSerializations {
		b.Run(s.name, func(b *testing.B) {
			e := startBenchBroker(b)
			cl := benchClient(s.st)
			defer cl.Close()
			for range 64 {
				e.client.Invoke(context.Background(), e.b.Addr(), sendV1("Bench", 0, nil, make([]byte, 1024)))
			}
			for e.b.store.MaxOffsetInQueue("Bench", 0) < 64 {
				runtime.Gosched()
			}
			req := pullReq("g", "Bench", 0, 0, pullFlagSubscription, 0, "*")
			b.ReportAllocs()
			for b.Loop() {
				resp, err := cl.Invoke(context.Background(), e.b.Addr(), req)
				if err != nil || resp.Code != remoting.Success {
					b.Fatalf("pull: %v %+v", err, resp)
				}
				b.SetBytes(int64(len(resp.Body)))
			}
		})
	}
}
