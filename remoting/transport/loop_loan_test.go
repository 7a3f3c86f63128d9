package transport

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/spoolmq/spool/remoting"
)

const (
	codeBorrow int32 = 77
	codeOwn    int32 = 78
)

// bodyOf is the body of request i in the loan tests.
func bodyOf(i int32) []byte {
	b := bytes.Repeat([]byte{'b'}, 200)
	binary.BigEndian.PutUint32(b, uint32(i))
	return b
}

// keeper records the bodies handlers kept past their return (which a
// borrowing handler must not do; here it does, to see what it would get).
type keeper struct {
	mu     sync.Mutex
	bodies map[int32][]byte
}

func (k *keeper) handler(t *testing.T) ReplyHandler {
	return func(c *Conn, req *remoting.Command) Reply {
		code := int32(remoting.Success)
		if !bytes.Equal(req.Body, bodyOf(req.Opaque)) {
			t.Errorf("opaque %d: the handler saw a body not the one sent", req.Opaque)
			code = remoting.SystemError
		}
		k.mu.Lock()
		k.bodies[req.Opaque] = req.Body
		k.mu.Unlock()
		return Respond(remoting.NewResponse(req, code, ""))
	}
}

func sendBodies(t *testing.T, addr string, code int32, n int) {
	rc := dialRaw(t, addr)
	for i := range int32(n) {
		req := request(code, i, remoting.SerializeRocketMQ)
		req.Body = bodyOf(i)
		rc.send(req)
	}
	for range n {
		if a := rc.read(); a.Code != remoting.Success {
			t.Fatalf("answer %d: code %d", a.Opaque, a.Code)
		}
	}
}

// An event loop lends a borrowing handler the body in its read buffer:
// the handler sees it whole while it runs, and a body kept past the return
// is overwritten (by the poison of test binaries, then by the next read),
// which shows it was not copied. A handler that does not borrow gets a body of its own, which
// stays as it was.
func TestLoopLendsBodiesToBorrowingHandlers(t *testing.T) {
	borrowed, owned := &keeper{bodies: map[int32][]byte{}}, &keeper{bodies: map[int32][]byte{}}
	_, addr := startServer(t, ServerConfig{EventLoops: 1}, func(s *Server) {
		s.RegisterReply(codeBorrow, borrowed.handler(t), nil)
		s.RegisterReply(codeOwn, owned.handler(t), nil)
		s.BorrowsBody(codeBorrow)
	})
	sendBodies(t, addr, codeBorrow, 64)
	sendBodies(t, addr, codeOwn, 64)
	// A kept borrowed body is overwritten once its handler returned: with
	// the poison at once, then with whatever the loop reads next into the
	// same buffer. A frame that arrived in pieces is read into a buffer of
	// its own, which its body then keeps (no copy, no loan): those stay
	// whole.
	changed := 0
	for i, b := range borrowed.bodies {
		if !bytes.Equal(b, bodyOf(i)) {
			changed++
		}
	}
	if changed == 0 {
		t.Errorf("none of %d borrowed bodies changed after its handler returned: the loop copied them", len(borrowed.bodies))
	}
	for i, b := range owned.bodies {
		if !bytes.Equal(b, bodyOf(i)) {
			t.Errorf("owned body %d changed after its handler returned", i)
		}
	}
}

// A request of a borrowing code that waits for a worker gets its body
// copied before the loop reads on: the handler, run later, sees it whole
// and may even keep it.
func TestQueuedBorrowingRequestOwnsItsBody(t *testing.T) {
	k := &keeper{bodies: map[int32][]byte{}}
	_, addr := startServer(t, ServerConfig{EventLoops: 1}, func(s *Server) {
		// Not RunsOnLoop: every request of the code goes to a worker.
		s.RegisterReply(codeBorrow, k.handler(t), s.NewExecutor(ExecutorConfig{Workers: 1}))
		s.BorrowsBody(codeBorrow)
	})
	sendBodies(t, addr, codeBorrow, 64)
	for i, b := range k.bodies {
		if !bytes.Equal(b, bodyOf(i)) {
			t.Errorf("queued body %d changed after the loop read on", i)
		}
	}
	if len(k.bodies) != 64 {
		t.Fatalf("%d requests handled, want 64", len(k.bodies))
	}
}
