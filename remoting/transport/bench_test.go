package transport

import (
	"bytes"
	"context"
	"runtime"
	"testing"

	"github.com/spoolmq/spool/remoting"
)

// benchRequest is a SEND_MESSAGE-sized request: 13 ext fields, 1 KiB body.
func benchRequest() *remoting.Command {
	return remoting.NewRequest(codeEcho, map[string]string{
		"producerGroup": "please_rename_unique_group_name", "topic": "TopicTest", "defaultTopic": "TBW102",
		"defaultTopicQueueNums": "4", "queueId": "1", "sysFlag": "0", "bornTimestamp": "1700000000000",
		"flag": "0", "properties": "KEYS\x01order-1234\x02TAGS\x01TagA\x02WAIT\x01true\x02",
		"reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "0", "batch": "false",
	}, bytes.Repeat([]byte("m"), 1024))
}

// roundTripBytes is what one round trip moves: request and echoed response.
func roundTripBytes(b *testing.B) int64 {
	req, _ := remoting.Encode(benchRequest())
	resp := remoting.NewResponse(benchRequest(), remoting.Success, "")
	resp.ExtFields, resp.Body = benchRequest().ExtFields, benchRequest().Body
	out, _ := remoting.Encode(resp)
	return int64(len(req) + len(out))
}

func benchRoundTrip(b *testing.B, inflight int, st remoting.SerializeType, queuedWrites, early bool) {
	h := func(c *Conn, req *remoting.Command) Reply { return Respond(echo(c, req)) }
	if early {
		h = echoEarly
	}
	_, addr := startServer(b, ServerConfig{noDirectWrites: queuedWrites}, func(s *Server) {
		ex := s.NewExecutor(ExecutorConfig{Name: "send", Workers: 2, QueueCapacity: 10000})
		s.RegisterReply(codeEcho, h, ex)
	})
	cl := NewClient(ClientConfig{Serialize: st})
	defer cl.Close()
	ctx := context.Background()
	if _, err := cl.Invoke(ctx, addr, benchRequest()); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(roundTripBytes(b))
	b.ReportAllocs()
	b.ResetTimer()
	if inflight == 1 {
		req := benchRequest()
		for b.Loop() {
			if _, err := cl.Invoke(ctx, addr, req); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.SetParallelism((inflight + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		req := benchRequest()
		for pb.Next() {
			if _, err := cl.Invoke(ctx, addr, req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkRoundTrip(b *testing.B) {
	for _, c := range []struct {
		name     string
		inflight int
		st       remoting.SerializeType
		queued   bool
		early    bool // the handler completes its responder before returning it
	}{
		{"1conn_1inflight_JSON", 1, remoting.SerializeJSON, false, false},
		{"1conn_64inflight_JSON", 64, remoting.SerializeJSON, false, false},
		{"1conn_1inflight_ROCKETMQ", 1, remoting.SerializeRocketMQ, false, false},
		{"1conn_64inflight_ROCKETMQ", 64, remoting.SerializeRocketMQ, false, false},
		// every response handed to the writer goroutine, for comparison
		{"1conn_1inflight_ROCKETMQ_queued_writes", 1, remoting.SerializeRocketMQ, true, false},
		// the broker's send shape: Defer, complete, return Later
		{"1conn_1inflight_ROCKETMQ_reply_early", 1, remoting.SerializeRocketMQ, false, true},
		{"1conn_64inflight_ROCKETMQ_reply_early", 64, remoting.SerializeRocketMQ, false, true},
	} {
		b.Run(c.name, func(b *testing.B) { benchRoundTrip(b, c.inflight, c.st, c.queued, c.early) })
	}
}
