package transport

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/spoolmq/spool/remoting"
)

// TestAdmission runs the scenarios of testdata/admission: a server with
// one executor and one raw connection whose handler defers every request,
// driven command by command (see admissionRig.run for the commands).
func TestAdmission(t *testing.T) {
	datadriven.RunTest(t, "testdata/admission", func(t *testing.T, d *datadriven.TestData) string {
		return rigFor(t, d).run(t, d)
	})
}

var (
	rigsMu sync.Mutex
	rigs   = map[*testing.T]*admissionRig{}
)

// rigFor returns the rig of the running file (made by "start").
func rigFor(t *testing.T, d *datadriven.TestData) *admissionRig {
	rigsMu.Lock()
	defer rigsMu.Unlock()
	if d.Cmd == "start" || rigs[t] == nil {
		rigs[t] = &admissionRig{}
		t.Cleanup(func() {
			rigsMu.Lock()
			delete(rigs, t)
			rigsMu.Unlock()
		})
	}
	return rigs[t]
}

type admissionRig struct {
	srv   *Server
	ex    *Executor
	rc    *rawConn
	resps chan *remoting.Command

	mu    sync.Mutex
	conn  *Conn
	held  map[int32]*Responder
	gates map[int32]chan struct{}
	runs  map[int32]bool // resumed runs started

	drainErr chan error
}

func (g *admissionRig) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "start":
		// start max-inflight=N workers=W queue=Q: the executor's Reject
		// hook refuses requests sent with "reject".
		var maxInflight, workers, queue int
		d.ScanArgs(t, "max-inflight", &maxInflight)
		d.ScanArgs(t, "workers", &workers)
		d.ScanArgs(t, "queue", &queue)
		g.held, g.gates, g.runs = map[int32]*Responder{}, map[int32]chan struct{}{}, map[int32]bool{}
		var addr string
		g.srv, addr = startServer(t, ServerConfig{MaxInflightPerConn: maxInflight}, func(s *Server) {
			g.ex = s.NewExecutor(ExecutorConfig{Name: "pull", Workers: workers, QueueCapacity: queue,
				Reject: func(req *remoting.Command) string {
					if req.Ext("reject") != "" {
						return "[REJECTREQUEST]the owner's remark"
					}
					return ""
				}})
			s.RegisterReply(codeEcho, g.handle, g.ex)
		})
		t.Cleanup(func() { // a failed scenario leaves no worker blocked
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, gate := range g.gates {
				select {
				case <-gate:
				default:
					close(gate)
				}
			}
		})
		g.rc = dialRaw(t, addr)
		g.resps = make(chan *remoting.Command, 64)
		go func() {
			defer close(g.resps)
			for {
				cmd, err := remoting.ReadCommand(g.rc.br, 0)
				if err != nil {
					return
				}
				g.resps <- cmd
			}
		}()
		return "ok"

	case "send":
		// send opaque=N [value] [oneway] [reject]: the handler answers
		// at once (value) or defers (default).
		var op int
		d.ScanArgs(t, "opaque", &op)
		req := request(codeEcho, int32(op), remoting.SerializeJSON)
		if d.HasArg("value") {
			req.SetExt("value", "1")
		}
		if d.HasArg("reject") {
			req.SetExt("reject", "1")
		}
		if d.HasArg("oneway") {
			req.Flag = remoting.FlagOneway
		}
		g.rc.send(req)
		if d.HasArg("oneway") {
			waitFor(t, "the oneway handler", func() bool { return g.handled(int32(op)) })
			return "no answer (oneway)"
		}
		return g.outcome(t, int32(op), func() (string, bool) {
			g.mu.Lock()
			r := g.held[int32(op)]
			g.mu.Unlock()
			if r != nil && r.state.Load() == respHeld {
				return "held", true
			}
			return "", false
		})

	case "complete":
		// complete opaque=N [twice] [forget]
		r := g.responder(t, d)
		if d.HasArg("forget") {
			r.Forget()
			return "forgotten"
		}
		r.Reply(remoting.NewResponse(r.Request(), remoting.Success, fmt.Sprintf("done %d", r.Request().Opaque)))
		out := g.answer(t)
		if d.HasArg("twice") {
			out += "\nsecond completion: " + panicOf(func() { r.Reply(remoting.NewResponse(r.Request(), remoting.Success, "again")) })
		}
		return out

	case "complete-dropped":
		// complete-dropped opaque=N: a completion after the connection
		// closed; its pieces are released and nothing is written.
		r := g.responder(t, d)
		released := false
		r.ReplyPieces(remoting.NewResponse(r.Request(), remoting.Success, ""), [][]byte{[]byte("x")}, func() { released = true })
		return fmt.Sprintf("pieces released: %v", released)

	case "resume":
		// resume opaque=N [block]: run the held request again on the
		// executor (a woken pull); block keeps the worker until unblock.
		r := g.responder(t, d)
		op := r.Request().Opaque
		gate := make(chan struct{})
		if !d.HasArg("block") {
			close(gate)
		}
		g.mu.Lock()
		g.gates[op] = gate
		g.mu.Unlock()
		queued := g.ex.Stats().Resumed
		g.ex.Resume(r, func(r *Responder) {
			g.mu.Lock()
			g.runs[op] = true
			g.mu.Unlock()
			<-gate
			r.Reply(remoting.NewResponse(r.Request(), remoting.Success, fmt.Sprintf("resumed %d", op)))
		})
		if !d.HasArg("block") {
			return g.answer(t)
		}
		return g.outcome(t, op, func() (string, bool) {
			g.mu.Lock()
			ran := g.runs[op]
			g.mu.Unlock()
			switch {
			case ran:
				return "running", true
			case g.ex.Stats().Resumed > queued && g.ex.QueueLen() > 0 && g.queuedHas(op):
				return "queued", true
			}
			return "", false
		})

	case "unblock":
		// unblock opaque=N: the blocked run answers; every answer that
		// follows (queued runs) is printed as it comes, n of them.
		var op, n int
		d.ScanArgs(t, "opaque", &op)
		n = 1
		if d.HasArg("answers") {
			d.ScanArgs(t, "answers", &n)
		}
		g.mu.Lock()
		close(g.gates[int32(op)])
		delete(g.gates, int32(op))
		g.mu.Unlock()
		var out []string
		for range n {
			out = append(out, g.answer(t))
		}
		return strings.Join(out, "\n")

	case "state":
		c := g.serverConn(t)
		return fmt.Sprintf("in-flight=%d held=%d queued=%d rejected-by-cap=%d", c.InFlight(), c.Held(), g.ex.QueueLen(),
			g.srv.Stats().RejectedInflight)

	case "close":
		c := g.serverConn(t)
		c.Close()
		<-c.Closed()
		return fmt.Sprintf("in-flight=%d held=%d", c.InFlight(), c.Held())

	case "drain":
		g.drainErr = make(chan error, 1)
		go func() { g.drainErr <- g.srv.Drain(context.Background()) }()
		return "draining"

	case "shutdown":
		g.drainErr = make(chan error, 1)
		go func() { g.drainErr <- g.srv.Shutdown(context.Background()) }()
		waitFor(t, "draining", g.srv.draining.Load)
		return "shutting down"

	case "drained?":
		// While a slot is taken Drain cannot return, so "no" is stable.
		select {
		case err := <-g.drainErr:
			return fmt.Sprintf("yes (%v)", err)
		default:
			return "no"
		}

	case "wait-drained":
		select {
		case err := <-g.drainErr:
			return fmt.Sprintf("drained (%v)", err)
		case <-time.After(10 * time.Second):
			t.Fatal("drain did not end")
		}
	}
	t.Fatalf("unknown command %q", d.Cmd)
	return ""
}

// handle is the rig's handler: a value answer for ext "value", else the
// request is deferred and kept for "complete" and "resume".
func (g *admissionRig) handle(c *Conn, req *remoting.Command) Reply {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.conn = c
	if req.Ext("value") != "" {
		return Respond(remoting.NewResponse(req, remoting.Success, fmt.Sprintf("value %d", req.Opaque)))
	}
	r := c.Defer(req)
	g.held[req.Opaque] = r
	return Later(r)
}

func (g *admissionRig) handled(op int32) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held[op] != nil
}

// queuedHas reports whether op waits in the queue while every worker is
// busy (so that it stays there until a worker is freed).
func (g *admissionRig) queuedHas(op int32) bool {
	g.ex.mu.Lock()
	defer g.ex.mu.Unlock()
	if g.ex.busy < g.ex.cfg.Workers {
		return false
	}
	for i := range g.ex.q.size {
		if t := g.ex.q.buf[(g.ex.q.head+i)%len(g.ex.q.buf)]; t.req.Opaque == op {
			return true
		}
	}
	return false
}

func (g *admissionRig) responder(t *testing.T, d *datadriven.TestData) *Responder {
	var op int
	d.ScanArgs(t, "opaque", &op)
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.held[int32(op)]
	if r == nil {
		t.Fatalf("no deferred request %d", op)
	}
	return r
}

func (g *admissionRig) serverConn(t *testing.T) *Conn {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conn == nil {
		t.Fatal("no request reached a handler yet")
	}
	return g.conn
}

// outcome waits until the request op is answered or settled says where
// it is.
func (g *admissionRig) outcome(t *testing.T, op int32, settled func() (string, bool)) string {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case resp, ok := <-g.resps:
			if !ok {
				return "connection closed"
			}
			if resp.Opaque != op {
				t.Fatalf("answer to %d while waiting for %d", resp.Opaque, op)
			}
			return describe(resp)
		default:
		}
		if s, ok := settled(); ok {
			return s
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("request %d: no outcome", op)
	return ""
}

// answer waits for the next answer on the connection.
func (g *admissionRig) answer(t *testing.T) string {
	select {
	case resp, ok := <-g.resps:
		if !ok {
			return "connection closed"
		}
		return describe(resp)
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
	return ""
}

func describe(resp *remoting.Command) string {
	code := map[int32]string{remoting.Success: "SUCCESS", remoting.SystemBusy: "SYSTEM_BUSY"}[resp.Code]
	if code == "" {
		code = fmt.Sprint(resp.Code)
	}
	return fmt.Sprintf("answer %d: %s %s", resp.Opaque, code, resp.Remark)
}

func panicOf(f func()) (msg string) {
	defer func() {
		if p := recover(); p != nil {
			msg = fmt.Sprint(p)
		}
	}()
	f()
	return "no panic"
}
