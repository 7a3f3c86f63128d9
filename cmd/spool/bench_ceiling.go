package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/spoolmq/spool/internal/broker"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// benchCeilingCmd is `spool bench ceiling`: a responder that answers every
// send with SEND_OK and stores nothing. It runs the broker's transport as
// the broker configures it by default (event loops, the send executor's
// size, sends run on the loop, headers read without a map) and answers
// with the fields a broker's SEND_OK carries, so that `spool bench produce
// --broker` against it measures what the transport, the codecs and the
// load generator allow on this machine: the ceiling a broker's figures are
// read against. It is a measuring instrument only; nothing it acknowledges
// is kept.
func benchCeilingCmd() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "ceiling",
		Short: "answer sends with SEND_OK without storing them (the transport's ceiling, for `bench produce --broker`)",
		RunE: func(cmd *cobra.Command, args []string) error {
			s := newCeilingServer(broker.DefaultConfig())
			addr, err := s.Listen(listen)
			if err != nil {
				return err
			}
			fmt.Printf("ceiling responder on %s (answers sends with SEND_OK and stores nothing)\n", addr)
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			return s.Close()
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:10915", "address to listen on (not the broker's 10911, so that both can run)")
	return cmd
}

// newCeilingServer returns the responder's server, not yet listening.
func newCeilingServer(cfg broker.Config) *transport.Server {
	s := transport.NewServer(transport.ServerConfig{
		MaxInflightPerConn: cfg.MaxInflightRequestsPerConnection,
		MaxQueuedBodyBytes: cfg.MaxQueuedRequestBytes,
		EventLoops:         broker.EventLoops(cfg.ServerEventLoops),
	})
	ex := s.NewExecutor(transport.ExecutorConfig{Name: "send", Workers: max(cfg.SendMessageThreadPoolNums, 1),
		QueueCapacity: max(cfg.SendThreadPoolQueueCapacity, 1)})
	r := &ceilingResponder{}
	codes := []int32{remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage}
	s.ReadsExtInline(codes...)
	s.RunsOnLoop(codes...)
	for _, code := range codes {
		s.RegisterReply(code, r.answer, ex)
	}
	s.RegisterDefault(transport.NotSupported)
	return s
}

// ceilingResponder answers sends as a broker's SEND_OK does: an offset
// message id per message, the queue, a queue offset, region and trace
// flags.
type ceilingResponder struct {
	offset atomic.Int64 // a made-up CommitLog offset, for the message ids
	qo     atomic.Int64 // a made-up queue offset
}

// ceilingHost is the store host written into the message ids.
var ceilingHost = message.Addr{IP: []byte{127, 0, 0, 1}, Port: 10911}

func (r *ceilingResponder) answer(_ *transport.Conn, req *remoting.Command) transport.Reply {
	n := 1
	if req.Code == remoting.SendBatchMessage {
		n = batchMembers(req.Body)
	}
	queueID := req.Ext("e")
	if req.Code == remoting.SendMessage {
		queueID = req.Ext("queueId")
	}
	if _, err := strconv.ParseInt(queueID, 10, 32); err != nil {
		return transport.Respond(remoting.NewResponse(req, remoting.SystemError, "queueId missing or not an integer"))
	}
	size := int64(len(req.Body))
	off := r.offset.Add(size) - size
	qo := r.qo.Add(int64(n)) - int64(n)
	resp, w := remoting.NewResponseExtSize(req, remoting.Success, "", 96+33*n)
	w.Append("msgId", func(dst []byte) []byte {
		for i := 0; i < n; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = message.AppendOffsetMsgID(dst, ceilingHost, off+int64(i))
		}
		return dst
	})
	w.Str("queueId", queueID)
	w.Int("queueOffset", qo)
	w.Str(message.PropertyMsgRegion, "DefaultRegion")
	w.Str(message.PropertyTraceSwitch, "true")
	w.Close()
	return transport.Respond(resp)
}

// batchMembers counts the messages of a batch body: each begins with its
// total size (at least 1 counted, as a malformed body is still answered).
func batchMembers(body []byte) int {
	n := 0
	for len(body) >= 4 {
		size := int(binary.BigEndian.Uint32(body))
		if size < 4 || size > len(body) {
			break
		}
		body = body[size:]
		n++
	}
	return max(n, 1)
}
