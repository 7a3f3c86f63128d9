package transport

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// reusedState is a handler's per-request memory taken from a free list and
// given back by the answer's owner release, as a broker pools the state of
// a send: the responder and the answer's body live in it.
type reusedState struct {
	rs   Responder
	body [8]byte
	free chan *reusedState
}

// Release overwrites the state, as its next request would, and gives it
// back.
func (st *reusedState) Release() {
	free := st.free
	*st = reusedState{free: free}
	st.body = [8]byte{'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x'}
	select {
	case free <- st:
	default:
	}
}

// Once a responder's owner is released the transport touches neither the
// responder nor the answer: a handler may reuse that memory for its next
// request. Answers completed early, from other goroutines and after the
// handler returned all carry their own body (written from the state), and
// the race detector sees no access to a state after its release.
func TestResponderMemoryReusedAfterOwnerRelease(t *testing.T) {
	free := make(chan *reusedState, 512)
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply {
			var st *reusedState
			select {
			case st = <-free:
			default:
				st = &reusedState{free: free}
			}
			r := c.DeferIn(&st.rs, req)
			if r != &st.rs {
				t.Errorf("a released state's responder was not reused")
			}
			binary.BigEndian.PutUint64(st.body[:], uint64(req.Opaque))
			resp := remoting.NewResponse(req, remoting.Success, "")
			resp.Body = st.body[:]
			switch req.Opaque % 3 {
			case 0:
				r.ReplyPiecesOf(resp, nil, st) // before the handler returns
			case 1:
				go r.ReplyPiecesOf(resp, nil, st)
			default:
				go func() {
					time.Sleep(time.Duration(req.Opaque%7) * 10 * time.Microsecond)
					r.ReplyPiecesOf(resp, nil, st)
				}()
			}
			return Later(r)
		}, nil)
	})
	var wg sync.WaitGroup
	for range 4 {
		rc := dialRaw(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 30 {
				for i := range 64 {
					rc.send(request(codeEcho, int32(round*64+i), remoting.SerializeRocketMQ))
				}
				seen := map[int32]bool{}
				for range 64 {
					a := rc.read()
					if a.Code != remoting.Success || len(a.Body) != 8 || int32(binary.BigEndian.Uint64(a.Body)) != a.Opaque || seen[a.Opaque] {
						t.Errorf("answer for opaque %d: code %d body %q (reused before it was written?)", a.Opaque, a.Code, a.Body)
						return
					}
					seen[a.Opaque] = true
				}
			}
		}()
	}
	wg.Wait()
}
