package transport

import (
	"sync/atomic"
	"testing"

	"github.com/spoolmq/spool/remoting"
)

// A responder whose handler is still running when its connection closes
// is released when the handler returns: no slot stays taken, and its
// completion afterwards is dropped.
func TestResponderReleasedWhenHandlerReturnsAfterClose(t *testing.T) {
	entered, closed := make(chan *Conn, 1), make(chan struct{})
	rs := make(chan *Responder, 1)
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply {
			r := c.Defer(req)
			entered <- c
			<-closed
			rs <- r
			return Later(r)
		}, s.NewExecutor(ExecutorConfig{Workers: 1}))
	})
	rc := dialRaw(t, addr)
	rc.send(request(codeEcho, 1, remoting.SerializeJSON))
	c := <-entered
	c.Close()
	<-c.Closed()
	close(closed)
	r := <-rs
	waitFor(t, "the slot to be given back", func() bool { return c.InFlight() == 0 })
	if n := c.Held(); n != 0 {
		t.Fatalf("%d held", n)
	}
	released := false
	r.ReplyPieces(remoting.NewResponse(r.Request(), remoting.Success, ""), [][]byte{[]byte("x")}, func() { released = true })
	if !released || c.InFlight() != 0 {
		t.Fatalf("completion after close: pieces released %v, in flight %d", released, c.InFlight())
	}
}

// A completion before the handler returns is written by the return path
// (inline on the reader here): once, and the slot is given back.
func TestEarlyCompletionWrittenOnce(t *testing.T) {
	var conn atomic.Pointer[Conn]
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply {
			conn.Store(c)
			return echoEarly(c, req)
		}, nil)
	})
	rc := dialRaw(t, addr)
	for i := range 3 {
		rc.send(request(codeEcho, int32(i), remoting.SerializeJSON))
		if r := rc.read(); r.Opaque != int32(i) || r.Code != remoting.Success {
			t.Fatalf("answer %d: %+v", i, r)
		}
	}
	rc.send(request(codeEcho, 9, remoting.SerializeJSON))
	if r := rc.read(); r.Opaque != 9 {
		t.Fatalf("an answer twice: %+v", r)
	}
	c := conn.Load()
	waitFor(t, "the slots to be given back", func() bool { return c.InFlight() == 0 })
	if c.Held() != 0 {
		t.Fatalf("held %d", c.Held())
	}
}

// A responder placed in the handler's memory (DeferIn) answers as one from
// Defer does, early or from another goroutine; a used one is not reused.
func TestDeferInAnswers(t *testing.T) {
	type state struct{ rs Responder }
	var reused atomic.Int64
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply {
			st := &state{}
			r := c.DeferIn(&st.rs, req)
			if r != &st.rs {
				t.Errorf("DeferIn did not use the given responder")
			}
			if c.DeferIn(&st.rs, req) != &st.rs {
				reused.Add(1) // a second DeferIn on a used one gets its own
			}
			resp := remoting.NewResponse(req, remoting.Success, "")
			if req.Opaque%2 == 0 {
				r.Reply(resp)
			} else {
				go r.Reply(resp)
			}
			return Later(r)
		}, nil)
	})
	rc := dialRaw(t, addr)
	for i := range 6 {
		rc.send(request(codeEcho, int32(i), remoting.SerializeRocketMQ))
		if r := rc.read(); r.Opaque != int32(i) || r.Code != remoting.Success {
			t.Fatalf("answer %d: %+v", i, r)
		}
	}
	if reused.Load() != 6 {
		t.Fatalf("a used responder was handed out again (%d of 6 refused)", reused.Load())
	}
}
