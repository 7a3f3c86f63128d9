package transport

import (
	"bytes"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/spoolmq/spool/remoting"
)

// Modes of piecesHandler.
const (
	piecesValue = iota // RespondPieces
	piecesEarly        // a responder completed before the handler returns
	piecesLater        // a responder completed from another goroutine
	// The same three with the pieces' owner in place of done
	// (RespondPiecesOf, ReplyPiecesOf).
	piecesValueOf
	piecesEarlyOf
	piecesLaterOf
)

// countRelease is a pieces owner counting its releases.
type countRelease struct{ n *atomic.Int64 }

func (o countRelease) Release() { o.n.Add(1) }

// piecesHandler answers with the request body repeated in n pieces (n from
// ext "n") in the given mode, counting done calls.
func piecesHandler(dones *atomic.Int64, mode int) ReplyHandler {
	return func(c *Conn, req *remoting.Command) Reply {
		n, _ := strconv.Atoi(req.Ext("n"))
		pieces := make([][]byte, n)
		for i := range pieces {
			pieces[i] = bytes.Repeat([]byte{byte('a' + i%26)}, len(req.Body))
		}
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.SetExt("k", "v")
		resp.Body = []byte("head:")
		done := func() { dones.Add(1) }
		owner := countRelease{dones}
		switch mode {
		case piecesValueOf:
			return RespondPiecesOf(resp, pieces, owner)
		case piecesEarlyOf:
			r := c.Defer(req)
			r.ReplyPiecesOf(resp, pieces, owner)
			return Later(r)
		case piecesLaterOf:
			r := c.Defer(req)
			go r.ReplyPiecesOf(resp, pieces, owner)
			return Later(r)
		case piecesEarly:
			r := c.Defer(req)
			r.ReplyPieces(resp, pieces, done)
			return Later(r)
		case piecesLater:
			r := c.Defer(req)
			go r.ReplyPieces(resp, pieces, done)
			return Later(r)
		}
		return RespondPieces(resp, pieces, done)
	}
}

func wantPiecesBody(t *testing.T, resp *remoting.Command, n, size int) {
	t.Helper()
	want := []byte("head:")
	for i := 0; i < n; i++ {
		want = append(want, bytes.Repeat([]byte{byte('a' + i%26)}, size)...)
	}
	if !bytes.Equal(resp.Body, want) {
		t.Fatalf("body %d bytes, want %d (pieces joined in order)", len(resp.Body), len(want))
	}
	if resp.Ext("k") != "v" || resp.Code != remoting.Success {
		t.Fatalf("resp %+v", resp)
	}
}

func TestReplyPiecesSmallAndLarge(t *testing.T) {
	for _, mode := range []int{piecesValue, piecesEarly, piecesLater, piecesValueOf, piecesEarlyOf, piecesLaterOf} {
		var dones atomic.Int64
		_, addr := startServer(t, ServerConfig{}, func(s *Server) { s.RegisterReply(codeEcho, piecesHandler(&dones, mode), nil) })
		rc := dialRaw(t, addr)
		cases := []struct{ n, size int }{{0, 0}, {1, 10}, {3, 100}, {40, 1024}, {2, 300 << 10}}
		for i, tc := range cases {
			for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
				req := request(codeEcho, int32(i+1), st)
				req.SetExt("n", strconv.Itoa(tc.n))
				req.Body = make([]byte, tc.size)
				rc.send(req)
				resp := rc.read()
				if resp.Opaque != int32(i+1) {
					t.Fatalf("opaque %d, want %d", resp.Opaque, i+1)
				}
				wantPiecesBody(t, resp, tc.n, tc.size)
			}
		}
		waitFor(t, "every done called", func() bool { return dones.Load() == int64(2*len(cases)) })
	}
}

// Pipelined requests: the writer goroutine batches small and large
// bodies; the frames must come back whole and in order.
func TestReplyPiecesPipelined(t *testing.T) {
	var dones atomic.Int64
	_, addr := startServer(t, ServerConfig{}, func(s *Server) { s.RegisterReply(codeEcho, piecesHandler(&dones, piecesEarly), nil) })
	rc := dialRaw(t, addr)
	const reqs = 40
	var frames []byte
	for i := 0; i < reqs; i++ {
		req := request(codeEcho, int32(i+1), remoting.SerializeRocketMQ)
		req.SetExt("n", strconv.Itoa(1+i%5))
		req.Body = make([]byte, 1+(i%3)*30000)
		f, err := remoting.Encode(req)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f...)
	}
	rc.write(frames)
	for i := 0; i < reqs; i++ {
		resp := rc.read()
		if resp.Opaque != int32(i+1) {
			t.Fatalf("opaque %d, want %d", resp.Opaque, i+1)
		}
		wantPiecesBody(t, resp, 1+i%5, 1+(i%3)*30000)
	}
	waitFor(t, "every done called", func() bool { return dones.Load() == reqs })
}

// done runs for answers that are never written: oneway requests and
// closed connections.
func TestReplyPiecesDoneWhenDropped(t *testing.T) {
	for _, mode := range []int{piecesValue, piecesValueOf} {
		piecesDoneWhenDropped(t, mode)
	}
}

func piecesDoneWhenDropped(t *testing.T, mode int) {
	var dones atomic.Int64
	conns := make(chan *Conn, 1)
	held := make(chan *Responder, 1)
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterReply(codeEcho, piecesHandler(&dones, mode), nil)
		s.RegisterReply(codeEcho+1, func(c *Conn, req *remoting.Command) Reply {
			r := c.Defer(req)
			conns <- c
			held <- r
			return Later(r)
		}, nil)
	})
	rc := dialRaw(t, addr)
	ow := request(codeEcho, 1, remoting.SerializeJSON)
	ow.Flag = remoting.FlagOneway
	ow.SetExt("n", "2")
	rc.send(ow)
	waitFor(t, "done for the oneway answer", func() bool { return dones.Load() == 1 })

	rc.send(request(codeEcho+1, 2, remoting.SerializeJSON))
	c, r := <-conns, <-held
	c.Close()
	<-c.Closed()
	if mode == piecesValueOf {
		r.ReplyPiecesOf(remoting.NewResponse(r.Request(), remoting.Success, ""), [][]byte{[]byte("x")}, countRelease{&dones})
	} else {
		r.ReplyPieces(remoting.NewResponse(r.Request(), remoting.Success, ""), [][]byte{[]byte("x")}, func() { dones.Add(1) })
	}
	// The handler may not have returned yet, and then its return path
	// drops the answer: done runs, but not before ReplyPieces returns.
	waitFor(t, "done for the closed connection's answer", func() bool { return dones.Load() >= 2 })
	if n := dones.Load(); n != 2 {
		t.Fatalf("done calls %d, want 2 (closed connection)", n)
	}
}
