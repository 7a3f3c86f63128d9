package transport

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
)

// dialSmallWindow connects with a receive buffer of a few KiB, so the
// server's socket fills after one large answer the peer does not read.
func dialSmallWindow(t *testing.T, addr string) *rawConn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// Answers written by other goroutines than the reader (a worker, the
// completion of a deferred answer) while the peer reads nothing: the
// socket takes part of one, and the rest, and the answers after it,
// still arrive whole, each once, once the peer reads. (Their order is the
// order the completing goroutines ran in, which a loaded machine may
// swap.)
func TestAnswersOutgrowAFullSocket(t *testing.T) {
	body := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 60<<10) }
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		ex := s.NewExecutor(ExecutorConfig{Workers: 1, QueueCapacity: 100})
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply {
			r := c.Defer(req)
			go func() {
				resp := remoting.NewResponse(req, remoting.Success, "")
				resp.Body = body(int(req.Opaque))
				r.Reply(resp)
			}()
			return Later(r)
		}, ex)
	})
	rc := dialSmallWindow(t, addr)
	const n = 120 // 7 MiB of answers, more than a socket's send buffer grows to
	for i := range n {
		// One at a time: each answer is the only one in flight, the
		// case in which it is written on the completing goroutine.
		rc.send(request(codeEcho, int32(i), remoting.SerializeJSON))
		time.Sleep(2 * time.Millisecond)
	}
	seen := make(map[int32]bool, n)
	for i := range n {
		r := rc.read()
		if r.Opaque < 0 || r.Opaque >= n || seen[r.Opaque] || !bytes.Equal(r.Body, body(int(r.Opaque))) {
			t.Fatalf("answer %d: opaque %d (seen before: %v), %d body bytes", i, r.Opaque, seen[r.Opaque], len(r.Body))
		}
		seen[r.Opaque] = true
	}
}

// Frames split anywhere across reads (one byte at a time, random chunks,
// a frame larger than a loop's read buffer) are all served, in order.
func TestFramesSplitAcrossReads(t *testing.T) {
	_, addr := startServer(t, ServerConfig{}, func(s *Server) { s.Register(codeEcho, echo, nil) })
	var frames [][]byte
	var want []int
	for i := range 40 {
		req := request(codeEcho, int32(i), remoting.SerializeRocketMQ)
		size := 10 + (i%7)*300
		if i%13 == 5 {
			size = 200 << 10 // over the loop's 64 KiB read buffer
		}
		req.Body = bytes.Repeat([]byte{byte(i)}, size)
		f, err := remoting.Encode(req)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
		want = append(want, size)
	}
	all := bytes.Join(frames, nil)
	for _, mode := range []string{"bytes", "chunks"} {
		t.Run(mode, func(t *testing.T) {
			rc := dialRaw(t, addr)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				rnd := rand.New(rand.NewPCG(1, 2))
				for off := 0; off < len(all); {
					n := 1
					if mode == "chunks" {
						n = 1 + rnd.IntN(70000)
					} else if off > 4096 {
						n = 1 + rnd.IntN(64) // byte by byte for the first frames
					}
					n = min(n, len(all)-off)
					if _, err := rc.nc.Write(all[off : off+n]); err != nil {
						t.Error(err)
						return
					}
					off += n
				}
			}()
			for i, size := range want {
				r := rc.read()
				if r.Opaque != int32(i) || len(r.Body) != size || (size > 0 && r.Body[size-1] != byte(i)) {
					t.Fatalf("answer %d: opaque %d, body %d bytes, want %d", i, r.Opaque, len(r.Body), size)
				}
			}
			wg.Wait()
		})
	}
}

// Connections opened and closed while answers to them are still being
// completed elsewhere: every answer a client reads is one of its own
// requests' (a descriptor reused by a new connection never receives an
// old connection's bytes).
func TestClosesWhileAnswersAreWritten(t *testing.T) {
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		ex := s.NewExecutor(ExecutorConfig{Workers: 2, QueueCapacity: 10000})
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply {
			r := c.Defer(req)
			go func() {
				time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
				r.Reply(echo(c, req))
			}()
			return Later(r)
		}, ex)
	})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 25 {
				nc, err := net.Dial("tcp", addr)
				if err != nil {
					t.Error(err)
					return
				}
				tag := fmt.Sprintf("g%d-r%d", g, round)
				for i := range 5 {
					req := request(codeEcho, int32(i), remoting.SerializeJSON)
					req.ExtFields["tag"] = tag
					f, _ := remoting.Encode(req)
					if _, err := nc.Write(f); err != nil {
						t.Error(err)
						nc.Close()
						return
					}
				}
				br := bufio.NewReader(nc)
				_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
				// Read some of the answers, then close with the rest
				// still being completed.
				for range round % 5 {
					r, err := remoting.ReadCommand(br, 0)
					if err != nil {
						t.Errorf("%s: %v", tag, err)
						break
					}
					if got := r.Ext("tag"); got != tag {
						t.Errorf("connection %s read an answer of %s", tag, got)
					}
				}
				nc.Close()
			}
		}()
	}
	wg.Wait()
}

// heldLoop is a server with one event loop whose codeEcho handler runs on
// the loop, in an executor of the given workers, and holds a request with
// ext block=1 until release; a's such request is held when it returns,
// and b is a second connection.
type heldLoop struct {
	srv     *Server
	ex      *Executor
	a, b    *rawConn
	release func()
}

// startHeldLoop starts it; onWorker, if set, runs before the answer of a
// request run off the loop.
func startHeldLoop(t *testing.T, workers int, onWorker func()) heldLoop {
	gate := make(chan struct{})
	entered := make(chan struct{}, 1)
	var h heldLoop
	var addr string
	h.srv, addr = startServer(t, ServerConfig{EventLoops: 1}, func(s *Server) {
		h.ex = s.NewExecutor(ExecutorConfig{Workers: workers, QueueCapacity: 1000})
		s.Register(codeEcho, func(c *Conn, req *remoting.Command) *remoting.Command {
			switch {
			case req.Ext("block") == "1":
				entered <- struct{}{}
				<-gate
			case onWorker != nil && !c.OnLoop(req):
				onWorker()
			}
			return echo(c, req)
		}, h.ex)
		s.RunsOnLoop(codeEcho)
	})
	// A failure must not leave the handler held: the server's Close, run
	// after the test, waits for it.
	var open sync.Once
	h.release = func() { open.Do(func() { close(gate) }) }
	t.Cleanup(h.release)
	h.a, h.b = dialRaw(t, addr), dialRaw(t, addr)
	held := request(codeEcho, 1, remoting.SerializeJSON)
	held.ExtFields["block"] = "1"
	h.a.send(held)
	<-entered
	return h
}

// A handler declared never to block that blocks all the same, on an
// event loop: after loopStallLimit another run serves the loop's other
// connections (their requests of that code going to the workers while
// the handler is held), the held connection is not read until its
// handler returns, and then everything runs inline again.
func TestLoopRunDisplacedByAHeldHandler(t *testing.T) {
	h := startHeldLoop(t, 4, nil)
	a, b, ex := h.a, h.b, h.ex
	for i := range 5 {
		b.send(request(codeEcho, int32(10+i), remoting.SerializeJSON))
		if r := b.read(); r.Opaque != int32(10+i) || r.Code != remoting.Success {
			t.Fatalf("b's answer %+v while a's handler is held", r)
		}
	}
	if st := ex.Stats(); st.Queued < 5 {
		t.Fatalf("while held, b's requests ran inline: %+v", st)
	}
	a.send(request(codeEcho, 2, remoting.SerializeJSON))
	h.release()
	for _, want := range []int32{1, 2} {
		if r := a.read(); r.Opaque != want || r.Code != remoting.Success {
			t.Fatalf("a's answer %+v, want opaque %d", r, want)
		}
	}
	waitFor(t, "the held run to end", func() bool { return h.srv.loops[0].stalled.Load() == 0 })
	inline := ex.Stats().Inline
	b.send(request(codeEcho, 20, remoting.SerializeJSON))
	b.read()
	if st := ex.Stats(); st.Inline != inline+1 {
		t.Fatalf("after the handler returned, not inline: %+v", st)
	}
}

// Requests queued for the workers while a displaced run held the loop
// are taken back by the loop once the run's handler returns: a client
// that keeps its window full (each answer lets it send one more) must not
// keep the executor's queue from emptying, with every later request
// queued behind it and run on the workers, slower than the loop (here a
// worker's run sleeps; in the broker a worker's put is not grouped with
// the pass's and its answer is a write of its own), until its waits pass
// MaxQueueWait.
func TestLoopTakesBackItsQueueAfterADisplacement(t *testing.T) {
	h := startHeldLoop(t, 1, func() { time.Sleep(2 * time.Millisecond) })
	a, b, ex := h.a, h.b, h.ex
	waitFor(t, "the watchdog to displace the held run", func() bool { return h.srv.loops[0].stalled.Load() == 1 })
	const window, answers = 32, 400
	for i := range window {
		b.send(request(codeEcho, int32(100+i), remoting.SerializeJSON))
	}
	waitFor(t, "the window to be queued while the run is held", func() bool { return ex.Stats().Queued == window })
	h.release()
	if r := a.read(); r.Opaque != 1 || r.Code != remoting.Success {
		t.Fatalf("a's answer %+v", r)
	}
	waitFor(t, "the held run to end", func() bool { return h.srv.loops[0].stalled.Load() == 0 })
	before := ex.Stats()
	next := int32(100 + window)
	for range answers {
		if r := b.read(); r.Code != remoting.Success {
			t.Fatalf("b's answer %+v", r)
		}
		b.send(request(codeEcho, next, remoting.SerializeJSON))
		next++
	}
	for range window {
		b.read()
	}
	st := ex.Stats()
	// The window's first requests, queued during the hold, were counted
	// before; they may be taken back too.
	queued, taken := int64(st.Queued-before.Queued), int64(st.TakenBack-before.TakenBack)
	if onWorkers := queued - taken; onWorkers > answers/2 {
		t.Fatalf("of %d requests sent after the held run ended, %d ran on the workers (%d queued, %d taken back by the loop, %d inline): the queue never emptied",
			answers, onWorkers, queued, taken, st.Inline-before.Inline)
	}
	if st.TimedOut != 0 || ex.QueueLen() != 0 {
		t.Fatalf("executor after the run: %+v", st)
	}
}

// passEchoes answers the echo requests a loop pass dispatches only when a
// pass hook releases them, and records the hooks' calls.
type passEchoes struct {
	mu     sync.Mutex
	held   []*Responder
	inPass bool
	calls  []string
}

// hook records a hook's call, opening the pass when start.
func (p *passEchoes) hook(name string, start bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, name)
	if start {
		p.inPass = true
	}
	return true
}

// release records a hook's call, closes the pass and answers what it held.
func (p *passEchoes) release(name string) {
	p.mu.Lock()
	p.calls = append(p.calls, name)
	p.inPass = false
	rs := p.held
	p.held = nil
	p.mu.Unlock()
	for _, r := range rs {
		r.Reply(echo(r.Conn(), r.Request()))
	}
}

func (p *passEchoes) count(name string) int {
	n := 0
	for _, c := range p.calls {
		if c == name {
			n++
		}
	}
	return n
}

// serve registers codeEcho on the loop: held within a pass, answered at
// once (after outside) when dispatched outside one.
func (p *passEchoes) serve(outside func(req *remoting.Command)) func(s *Server) {
	return func(s *Server) {
		ex := s.NewExecutor(ExecutorConfig{Workers: 1, QueueCapacity: 100})
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply {
			p.mu.Lock()
			defer p.mu.Unlock()
			if !p.inPass {
				outside(req)
				return Respond(echo(c, req))
			}
			r := c.Defer(req)
			p.held = append(p.held, r)
			return Later(r)
		}, ex)
		s.RunsOnLoop(codeEcho)
	}
}

// echoBurst sends echo requests from..to in one write (most likely one
// read and one pass) and reads their answers.
func echoBurst(t *testing.T, rc *rawConn, from, to int) {
	t.Helper()
	var frames []byte
	for i := from; i <= to; i++ {
		f, _ := remoting.Encode(request(codeEcho, int32(i), remoting.SerializeJSON))
		frames = append(frames, f...)
	}
	rc.write(frames)
	for i := from; i <= to; i++ {
		if r := rc.read(); r.Opaque != int32(i) || r.Code != remoting.Success {
			t.Fatalf("answer %+v, want opaque %d", r, i)
		}
	}
}

// LoopPassBegin and LoopPassEnd bracket a loop pass that dispatches more
// than one frame (not a lone frame), and the answers End completes are
// written after it with the pass's others.
func TestLoopPassHooks(t *testing.T) {
	p := &passEchoes{}
	cfg := ServerConfig{EventLoops: 1,
		LoopPassBegin: func() bool { return p.hook("begin", true) },
		LoopPassEnd:   func() { p.release("end") }}
	_, addr := startServer(t, cfg, p.serve(func(*remoting.Command) {})) // a lone frame: answered at once
	rc := dialRaw(t, addr)
	rc.send(request(codeEcho, 1, remoting.SerializeJSON))
	if r := rc.read(); r.Opaque != 1 {
		t.Fatalf("lone frame's answer %+v", r)
	}
	p.mu.Lock()
	if n := p.count("begin"); n != 0 {
		t.Fatalf("a lone frame began %d passes", n)
	}
	p.mu.Unlock()
	echoBurst(t, rc, 2, 9)
	p.mu.Lock()
	defer p.mu.Unlock()
	if begins, ends := p.count("begin"), p.count("end"); begins == 0 || begins != ends || len(p.held) != 0 {
		t.Fatalf("%d begins, %d ends, %d answers still held", begins, ends, len(p.held))
	}
}

// LoopPassStart and LoopPassDone bracket every loop pass that dispatches a
// frame, a lone frame's too; Done runs after LoopPassEnd, and the answers
// Done completes reach the client.
func TestLoopPassStartAndDone(t *testing.T) {
	p := &passEchoes{}
	cfg := ServerConfig{EventLoops: 1,
		LoopPassBegin: func() bool { return true },
		LoopPassEnd:   func() { p.hook("end", false) },
		LoopPassStart: func() bool { return p.hook("start", true) },
		LoopPassDone:  func() { p.release("done") }}
	_, addr := startServer(t, cfg, p.serve(func(req *remoting.Command) {
		t.Errorf("request %d dispatched outside a started pass", req.Opaque)
	}))
	rc := dialRaw(t, addr)
	rc.send(request(codeEcho, 1, remoting.SerializeJSON))
	if r := rc.read(); r.Opaque != 1 || r.Code != remoting.Success {
		t.Fatalf("lone frame's answer %+v", r)
	}
	p.mu.Lock()
	if got := strings.Join(p.calls, " "); got != "start done" {
		t.Fatalf("a lone frame's pass: %q, want start and done", got)
	}
	p.calls = nil
	p.mu.Unlock()
	echoBurst(t, rc, 2, 9)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.held) != 0 {
		t.Fatalf("%d answers still held", len(p.held))
	}
	// Each pass: start, then end (a pass of more than one frame) before done.
	for i := 0; i < len(p.calls); {
		switch {
		case p.calls[i] == "start" && i+1 < len(p.calls) && p.calls[i+1] == "done":
			i += 2
		case p.calls[i] == "start" && i+2 < len(p.calls) && p.calls[i+1] == "end" && p.calls[i+2] == "done":
			i += 3
		default:
			t.Fatalf("hook order %q", strings.Join(p.calls, " "))
		}
	}
}

// Requests posted to a loop from several goroutines while it sleeps in
// epoll_wait are all taken, none left for a later wake-up: a post between
// the loop clearing its pending flag and draining the eventfd once lost
// its wake-up, and a loop with no connection slept for good (a server's
// Close then hung waiting for its listeners to stop).
func TestLoopTakesEveryPostedRequest(t *testing.T) {
	srv, _ := startServer(t, ServerConfig{EventLoops: 1}, func(s *Server) {})
	l := srv.loops[0]
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5000 {
				done := make(chan struct{})
				if !l.post(loopReq{kind: reqBudget, done: done}) {
					t.Error("the loop stopped")
					return
				}
				select {
				case <-done:
				case <-time.After(10 * time.Second): // a hang, not a speed
					t.Errorf("goroutine %d: request %d not taken after 10 s", g, i)
					return
				}
			}
		}()
	}
	wg.Wait()
}
