package transport

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
)

func TestExecutorRejectHook(t *testing.T) {
	ran := make(chan int32, 4)
	var ex *Executor
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		ex = s.NewExecutor(ExecutorConfig{Name: "send", Workers: 1, QueueCapacity: 4,
			Reject: func(req *remoting.Command) string {
				if req.Opaque == 2 {
					return "[REJECTREQUEST]system busy, start flow control for a while, test"
				}
				return ""
			}})
		s.Register(codeEcho, func(c *Conn, req *remoting.Command) *remoting.Command {
			ran <- req.Opaque
			return echo(c, req)
		}, ex)
		s.RunsOnLoop(codeEcho)
	})
	c := dialRaw(t, addr)
	c.send(request(codeEcho, 2, remoting.SerializeJSON))
	if r := c.read(); r.Code != remoting.SystemBusy || r.Opaque != 2 ||
		r.Remark != "[REJECTREQUEST]system busy, start flow control for a while, test" {
		t.Fatalf("rejected answer %+v", r)
	}
	c.send(request(codeEcho, 3, remoting.SerializeJSON))
	if r := c.read(); r.Code != remoting.Success || r.Opaque != 3 {
		t.Fatalf("admitted answer %+v", r)
	}
	if op := <-ran; op != 3 {
		t.Fatalf("handler ran for %d", op)
	}
	if st := ex.Stats(); st.Rejected != 1 || st.Inline != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestExecutorDrain(t *testing.T) {
	ex, addr, started, gate := gatedServer(t, ExecutorConfig{Workers: 1, QueueCapacity: 10})
	c1, c2, c3 := dialRaw(t, addr), dialRaw(t, addr), dialRaw(t, addr)
	c1.send(request(codeEcho, 1, remoting.SerializeJSON))
	<-started
	c2.send(request(codeEcho, 2, remoting.SerializeJSON))
	waitFor(t, "first queued request", func() bool { return ex.QueueLen() == 1 })
	c3.send(request(codeEcho, 3, remoting.SerializeRocketMQ))
	waitFor(t, "second queued request", func() bool { return ex.QueueLen() == 2 })
	n := ex.Drain(func(wait time.Duration, left int) string {
		return fmt.Sprintf("[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: %dms, size of queue: %d",
			wait.Milliseconds(), left)
	})
	if n != 2 || ex.QueueLen() != 0 {
		t.Fatalf("drained %d, queue %d", n, ex.QueueLen())
	}
	r2, r3 := c2.read(), c3.read()
	if r2.Code != remoting.SystemBusy || !strings.HasSuffix(r2.Remark, "size of queue: 1") ||
		!strings.HasPrefix(r2.Remark, "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: ") {
		t.Fatalf("first drained answer %+v", r2)
	}
	if r3.Code != remoting.SystemBusy || r3.Serialize != remoting.SerializeRocketMQ || !strings.HasSuffix(r3.Remark, "size of queue: 0") {
		t.Fatalf("second drained answer %+v", r3)
	}
	close(gate)
	if r := c1.read(); r.Code != remoting.Success {
		t.Fatalf("running request %+v", r)
	}
	if st := ex.Stats(); st.Drained != 2 {
		t.Fatalf("stats %+v", st)
	}
	select {
	case op := <-started:
		t.Fatalf("drained request %d ran", op)
	default:
	}
}

// bodyRequest is an echo request carrying n body bytes.
func bodyRequest(opaque int32, n int) *remoting.Command {
	req := request(codeEcho, opaque, remoting.SerializeJSON)
	req.Body = make([]byte, n)
	return req
}

func TestBodyBudgetPausesReaders(t *testing.T) {
	started := make(chan int32, 16)
	gate := make(chan struct{})
	var ex *Executor
	srv, addr := startServer(t, ServerConfig{MaxQueuedBodyBytes: 10}, func(s *Server) {
		ex = s.NewExecutor(ExecutorConfig{Workers: 1, QueueCapacity: 10})
		s.Register(codeEcho, func(c *Conn, req *remoting.Command) *remoting.Command {
			started <- req.Opaque
			<-gate
			return echo(c, req)
		}, ex)
	})
	c1, c2 := dialRaw(t, addr), dialRaw(t, addr)
	c1.send(bodyRequest(1, 16))
	<-started // running: no longer queued, not counted
	if st := srv.Stats(); st.QueuedBodyBytes != 0 {
		t.Fatalf("running request counted: %+v", st)
	}
	// A reader goroutine ran request 1 inline and counted nothing; an
	// event loop queued it for the worker and may have paused its
	// connections until the worker took it.
	before := srv.Stats().BodyBudgetPauses
	c2.send(bodyRequest(2, 16))
	waitFor(t, "the reader pause", func() bool {
		st := srv.Stats()
		return st.BodyBudgetPauses > before && st.QueuedBodyBytes == 16
	})
	// Sent but not read while the budget is spent.
	c2.send(bodyRequest(3, 1))
	c1.send(bodyRequest(4, 1))
	if ex.QueueLen() != 1 {
		t.Fatalf("queue %d while paused", ex.QueueLen())
	}
	close(gate)
	for _, want := range []int32{1, 4} {
		if r := c1.read(); r.Code != remoting.Success || r.Opaque != want {
			t.Fatalf("c1 answer %+v, want opaque %d", r, want)
		}
	}
	for _, want := range []int32{2, 3} {
		if r := c2.read(); r.Code != remoting.Success || r.Opaque != want {
			t.Fatalf("c2 answer %+v, want opaque %d", r, want)
		}
	}
	st := srv.Stats()
	if st.QueuedBodyBytes != 0 || st.BodyBudgetPaused <= 0 {
		t.Fatalf("stats after %+v", st)
	}
}

func TestBodyBudgetPauseCountsAsQueueWait(t *testing.T) {
	started := make(chan int32, 16)
	gate := make(chan struct{})
	var ex *Executor
	srv, addr := startServer(t, ServerConfig{MaxQueuedBodyBytes: 10}, func(s *Server) {
		ex = s.NewExecutor(ExecutorConfig{Workers: 1, QueueCapacity: 10, MaxQueueWait: 20 * time.Millisecond})
		s.Register(codeEcho, func(c *Conn, req *remoting.Command) *remoting.Command {
			started <- req.Opaque
			<-gate
			return echo(c, req)
		}, ex)
	})
	defer close(gate)
	c1, c2 := dialRaw(t, addr), dialRaw(t, addr)
	c1.send(bodyRequest(1, 1))
	<-started
	c2.send(bodyRequest(2, 16))
	c2.send(bodyRequest(3, 1))
	// The cleaner answers request 2 after its wait; that frees the budget
	// and the reader reads request 3, whose wait began with the pause.
	// (The two answers may come in either order.)
	seen := map[int32]bool{}
	for range 2 {
		r := c2.read()
		if r.Code != remoting.SystemBusy || (r.Opaque != 2 && r.Opaque != 3) || seen[r.Opaque] ||
			!strings.HasPrefix(r.Remark, "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: ") ||
			!strings.HasSuffix(r.Remark, "limit: 20ms") {
			t.Fatalf("answer %+v, want timeouts of 2 and 3", r)
		}
		seen[r.Opaque] = true
	}
	if st := ex.Stats(); st.TimedOut != 2 {
		t.Fatalf("executor stats %+v", st)
	}
	if st := srv.Stats(); st.BodyBudgetPauses != 1 || st.QueuedBodyBytes != 0 {
		t.Fatalf("server stats %+v", st)
	}
	select {
	case op := <-started:
		t.Fatalf("request %d ran after its wait", op)
	default:
	}
}
