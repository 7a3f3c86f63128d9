package transport

import (
	"sync"
	"testing"

	"github.com/spoolmq/spool/remoting"
)

const (
	codeTries int32 = 91 // runs on the loop; hands every other request to its workers
	codeQueue int32 = 92 // not a loop code: always on a worker
)

// TestOnLoopSaysWhereAHandlerRuns checks Conn.OnLoop as handlers ask it:
// true only while an event loop runs the request's own handler inline (a
// code declared with RunsOnLoop, when its executor has a slot free; else
// it runs on a worker), false for a code the loop does not run, for
// another request, and everywhere without event loops; a request a loop
// handler hands to its executor (Defer, Resume, Later) is answered by the
// worker, and once the loop's handler has returned the request is on the
// loop no more.
func TestOnLoopSaysWhereAHandlerRuns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		loops  int
		onLoop bool // whether a loop code's handler ever runs on the loop
	}{
		{"event loop", 1, true},
		{"goroutines", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string]int{}
			note := func(what string) {
				mu.Lock()
				seen[what]++
				mu.Unlock()
			}
			type asking struct {
				c   *Conn
				req *remoting.Command
			}
			var asked []asking
			var ex *Executor
			var other *remoting.Command // a request of another connection's past: never on the loop now
			_, addr := startServer(t, ServerConfig{EventLoops: tc.loops}, func(s *Server) {
				ex = s.NewExecutor(ExecutorConfig{Workers: 2, QueueCapacity: 64})
				s.RegisterReply(codeTries, func(c *Conn, req *remoting.Command) Reply {
					if c.OnLoop(req) {
						note("on the loop")
					}
					mu.Lock()
					asked = append(asked, asking{c, req})
					mu.Unlock()
					if other != nil && c.OnLoop(other) {
						t.Errorf("opaque %d: OnLoop true for another request", req.Opaque)
					}
					if req.Opaque%2 == 1 {
						r := c.Defer(req)
						ex.Resume(r, func(r *Responder) {
							note("handed off")
							r.Reply(remoting.NewResponse(r.Request(), remoting.Success, ""))
						})
						return Later(r)
					}
					note("inline")
					return Respond(remoting.NewResponse(req, remoting.Success, ""))
				}, ex)
				s.RegisterReply(codeQueue, func(c *Conn, req *remoting.Command) Reply {
					if c.OnLoop(req) {
						t.Errorf("opaque %d: OnLoop true for a code the loop does not run", req.Opaque)
					}
					note("worker")
					return Respond(remoting.NewResponse(req, remoting.Success, ""))
				}, ex)
				s.RunsOnLoop(codeTries)
			})
			other = request(codeTries, 999, remoting.SerializeJSON)
			rc := dialRaw(t, addr)
			const n = 40
			for i := range int32(n) {
				code := codeTries
				if i >= n/2 {
					code = codeQueue
				}
				rc.send(request(code, i, remoting.SerializeRocketMQ))
			}
			for range n {
				if a := rc.read(); a.Code != remoting.Success {
					t.Fatalf("answer %d: code %d %q", a.Opaque, a.Code, a.Remark)
				}
			}
			// The loop dispatches a connection's frames one after another:
			// once this one is answered, every handler before it returned.
			rc.send(request(codeQueue, 1000, remoting.SerializeRocketMQ))
			if a := rc.read(); a.Code != remoting.Success || a.Opaque != 1000 {
				t.Fatalf("last answer: opaque %d code %d", a.Opaque, a.Code)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, a := range asked {
				if a.c.OnLoop(a.req) {
					t.Fatalf("opaque %d: OnLoop true after its handler returned", a.req.Opaque)
				}
			}
			seen["worker"]-- // the last request
			if seen["inline"] != n/4 || seen["handed off"] != n/4 || seen["worker"] != n/2 {
				t.Fatalf("handled %v, want %d inline, %d handed off, %d on workers", seen, n/4, n/4, n/2)
			}
			if got := seen["on the loop"] > 0; got != tc.onLoop {
				t.Fatalf("a loop code's handler ran on the loop %d times of %d", seen["on the loop"], n/2)
			}
		})
	}
}
