package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
)

const codeEcho int32 = 1

// echo answers with the request's ext fields and body.
func echo(_ *Conn, req *remoting.Command) *remoting.Command {
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.ExtFields = req.ExtFields
	resp.Body = req.Body
	return resp
}

// logRecorder collects log records for assertions.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.records = append(l.records, r.Clone())
	l.mu.Unlock()
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// find returns the first record at level whose message contains msg.
func (l *logRecorder) find(level slog.Level, msg string) (slog.Record, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.records {
		if r.Level == level && strings.Contains(r.Message, msg) {
			return r, true
		}
	}
	return slog.Record{}, false
}

func startServer(t testing.TB, cfg ServerConfig, setup func(s *Server)) (*Server, string) {
	t.Helper()
	if cfg.EventLoops == 0 {
		cfg.EventLoops = testEventLoops
	}
	s := NewServer(cfg)
	if setup != nil {
		setup(s)
	}
	addr, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, addr.String()
}

// rawConn is a test peer that writes and reads frames by hand.
type rawConn struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second)) // a hung test fails instead of hanging
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (r *rawConn) send(cmd *remoting.Command) {
	r.t.Helper()
	frame, err := remoting.Encode(cmd)
	if err != nil {
		r.t.Fatal(err)
	}
	r.write(frame)
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawConn) read() *remoting.Command {
	r.t.Helper()
	cmd, err := remoting.ReadCommand(r.br, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	return cmd
}

// expectClosed reads until the server closes the connection.
func (r *rawConn) expectClosed() {
	r.t.Helper()
	if _, err := io.Copy(io.Discard, r.br); err != nil {
		r.t.Fatalf("waiting for close: %v", err)
	}
}

func request(code, opaque int32, st remoting.SerializeType) *remoting.Command {
	req := remoting.NewRequest(code, map[string]string{"k": "v"}, []byte("body"))
	req.Opaque = opaque
	req.Serialize = st
	req.Language = "GO"
	return req
}

func TestResponseEchoesOpaqueAndSerialization(t *testing.T) {
	_, addr := startServer(t, ServerConfig{}, func(s *Server) { s.Register(codeEcho, echo, nil) })
	rc := dialRaw(t, addr)
	for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		rc.send(request(codeEcho, 42, st))
		resp := rc.read()
		if resp.Opaque != 42 || !resp.IsResponse() || resp.Serialize != st || resp.Code != remoting.Success ||
			resp.Ext("k") != "v" || string(resp.Body) != "body" || resp.Version != remoting.CurrentVersion {
			t.Fatalf("serialize %d: response %+v", st, resp)
		}
	}
}

func TestUnknownCode(t *testing.T) {
	_, addr := startServer(t, ServerConfig{}, nil)
	rc := dialRaw(t, addr)
	for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		rc.send(request(9999, 7, st))
		resp := rc.read()
		if resp.Code != remoting.RequestCodeNotSupported || resp.Remark != "request type 9999 not supported" ||
			resp.Opaque != 7 || resp.Serialize != st {
			t.Fatalf("response %+v", resp)
		}
	}
	// codes above a short travel in JSON only
	rc.send(request(200050, 8, remoting.SerializeJSON))
	if resp := rc.read(); resp.Code != remoting.RequestCodeNotSupported || resp.Remark != "request type 200050 not supported" {
		t.Fatalf("response %+v", resp)
	}
}

func TestOnewayGetsNoReply(t *testing.T) {
	got := make(chan *remoting.Command, 4)
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(codeEcho, func(c *Conn, req *remoting.Command) *remoting.Command {
			got <- req
			return echo(c, req)
		}, nil)
	})
	rc := dialRaw(t, addr)
	ow := request(codeEcho, 1, remoting.SerializeJSON)
	ow.Flag = remoting.FlagOneway
	rc.send(ow)
	owUnknown := request(9999, 2, remoting.SerializeJSON)
	owUnknown.Flag = remoting.FlagOneway
	rc.send(owUnknown)
	rc.send(request(codeEcho, 3, remoting.SerializeJSON))
	if resp := rc.read(); resp.Opaque != 3 {
		t.Fatalf("first response has opaque %d; the oneway requests were answered", resp.Opaque)
	}
	if r := <-got; !r.IsOneway() || r.Opaque != 1 {
		t.Fatalf("handler saw %+v", r)
	}
}

// A Go client never sets the oneway bit: its "oneway" requests are answered.
func TestNoOnewayInferenceFromCode(t *testing.T) {
	_, addr := startServer(t, ServerConfig{}, func(s *Server) { s.Register(remoting.UpdateConsumerOffset, echo, nil) })
	rc := dialRaw(t, addr)
	rc.send(request(remoting.UpdateConsumerOffset, 5, remoting.SerializeJSON))
	if resp := rc.read(); resp.Opaque != 5 {
		t.Fatalf("response %+v", resp)
	}
}

func TestMalformedFrameClosesOnlyThatConnection(t *testing.T) {
	frame := func(total, word uint32, rest string) []byte {
		b := binary.BigEndian.AppendUint32(nil, total)
		b = binary.BigEndian.AppendUint32(b, word)
		return append(b, rest...)
	}
	cases := map[string][]byte{
		"garbage":                  []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"2^31-1 length":            frame(1<<31-1, 2, "{}"),
		"header longer than frame": frame(10, 100, "{}"),
		"bad json":                 frame(8, 4, "{]x}"),
		"unknown serialize type":   frame(6, 9<<24|2, "{}"),
	}
	long := `{"extFields":{"a":"` + strings.Repeat("x", remoting.MaxExtValueLen+1) + `"}}`
	cases["ext value too long"] = frame(4+uint32(len(long)), uint32(len(long)), long)

	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			logs := &logRecorder{}
			closedConns := make(chan uint64, 4)
			_, addr := startServer(t, ServerConfig{Logger: slog.New(logs)}, func(s *Server) {
				s.Register(codeEcho, echo, nil)
				s.OnConnClose(func(c *Conn) { closedConns <- c.ID() })
			})
			good := dialRaw(t, addr)
			good.send(request(codeEcho, 1, remoting.SerializeJSON))
			good.read()
			badConn := dialRaw(t, addr)
			badConn.write(bad)
			badConn.expectClosed()
			<-closedConns
			rec, ok := logs.find(slog.LevelWarn, "malformed frame")
			if !ok {
				t.Fatal("no warning logged")
			}
			var reason string
			rec.Attrs(func(a slog.Attr) bool {
				if a.Key == "reason" {
					reason = a.Value.String()
				}
				return true
			})
			if reason == "" {
				t.Fatal("warning without a reason")
			}
			good.send(request(codeEcho, 2, remoting.SerializeRocketMQ))
			if resp := good.read(); resp.Opaque != 2 {
				t.Fatalf("other connection: %+v", resp)
			}
		})
	}
}

func TestMaxFrameSizeConfig(t *testing.T) {
	_, addr := startServer(t, ServerConfig{MaxFrameSize: 1024}, func(s *Server) { s.Register(codeEcho, echo, nil) })
	rc := dialRaw(t, addr)
	req := request(codeEcho, 1, remoting.SerializeJSON)
	req.Body = make([]byte, 2000)
	rc.send(req)
	rc.expectClosed()
}

func TestIdleConnectionClosed(t *testing.T) {
	closed := make(chan *Conn, 1)
	_, addr := startServer(t, ServerConfig{IdleTimeout: 50 * time.Millisecond}, func(s *Server) {
		s.OnConnClose(func(c *Conn) { closed <- c })
	})
	rc := dialRaw(t, addr)
	rc.expectClosed()
	c := <-closed
	if c.RemoteAddr().String() != rc.nc.LocalAddr().String() {
		t.Fatalf("closed %v, want %v", c.RemoteAddr(), rc.nc.LocalAddr())
	}
	select {
	case <-c.Closed():
	default:
		t.Fatal("Closed() not closed")
	}
}

func TestInflightCap(t *testing.T) {
	held := make(chan *Responder, 8)
	var conn *Conn
	var mu sync.Mutex
	srv, addr := startServer(t, ServerConfig{MaxInflightPerConn: 2}, func(s *Server) {
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply {
			mu.Lock()
			conn = c
			mu.Unlock()
			r := c.Defer(req)
			held <- r // answered later
			return Later(r)
		}, nil)
	})
	rc := dialRaw(t, addr)
	rc.send(request(codeEcho, 1, remoting.SerializeJSON))
	rc.send(request(codeEcho, 2, remoting.SerializeJSON))
	rc.send(request(codeEcho, 3, remoting.SerializeRocketMQ))
	resp := rc.read()
	if resp.Opaque != 3 || resp.Code != remoting.SystemBusy || !strings.HasPrefix(resp.Remark, "[REJECTREQUEST]") ||
		resp.Serialize != remoting.SerializeRocketMQ {
		t.Fatalf("third request: %+v", resp)
	}
	if srv.Stats().RejectedInflight != 1 {
		t.Fatalf("stats %+v", srv.Stats())
	}
	r1, r2 := <-held, <-held
	mu.Lock()
	c := conn
	mu.Unlock()
	if c.InFlight() != 2 {
		t.Fatalf("in flight %d", c.InFlight())
	}
	r1.Reply(remoting.NewResponse(r1.Request(), remoting.Success, ""))
	if resp := rc.read(); resp.Opaque != 1 || resp.Code != remoting.Success {
		t.Fatalf("deferred reply %+v", resp)
	}
	r2.Forget()
	// both slots are free again
	rc.send(request(codeEcho, 4, remoting.SerializeJSON))
	rc.send(request(codeEcho, 5, remoting.SerializeJSON))
	r4, r5 := <-held, <-held
	r4.Reply(remoting.NewResponse(r4.Request(), remoting.Success, ""))
	r5.Reply(remoting.NewResponse(r5.Request(), remoting.Success, ""))
	if a, b := rc.read(), rc.read(); a.Code != remoting.Success || b.Code != remoting.Success {
		t.Fatalf("after release: %+v %+v", a, b)
	}
}

func TestHandlerPanicAnswersSystemError(t *testing.T) {
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(codeEcho, func(*Conn, *remoting.Command) *remoting.Command { panic("boom") }, nil)
	})
	rc := dialRaw(t, addr)
	rc.send(request(codeEcho, 9, remoting.SerializeJSON))
	if resp := rc.read(); resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "boom") {
		t.Fatalf("response %+v", resp)
	}
}

// gatedServer registers codeEcho on an executor whose handler blocks until
// gate is closed, and reports each start on started.
func gatedServer(t *testing.T, cfg ExecutorConfig) (ex *Executor, addr string, started chan int32, gate chan struct{}) {
	started = make(chan int32, 16)
	gate = make(chan struct{})
	_, addr = startServer(t, ServerConfig{}, func(s *Server) {
		ex = s.NewExecutor(cfg)
		s.Register(codeEcho, func(c *Conn, req *remoting.Command) *remoting.Command {
			started <- req.Opaque
			<-gate
			return echo(c, req)
		}, ex)
	})
	return ex, addr, started, gate
}

// waitFor polls cond; the executor's queue has no event to wait on.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestExecutorOverload(t *testing.T) {
	ex, addr, started, gate := gatedServer(t, ExecutorConfig{Name: "send", Workers: 1, QueueCapacity: 1})
	c1, c2, c3 := dialRaw(t, addr), dialRaw(t, addr), dialRaw(t, addr)
	c1.send(request(codeEcho, 1, remoting.SerializeJSON))
	if op := <-started; op != 1 {
		t.Fatalf("started %d", op)
	}
	c2.send(request(codeEcho, 2, remoting.SerializeJSON))
	waitFor(t, "a queued request", func() bool { return ex.QueueLen() == 1 })
	if ex.HeadWait() < 0 {
		t.Fatal("negative head wait")
	}
	c3.send(request(codeEcho, 3, remoting.SerializeJSON))
	resp := c3.read()
	want := "[OVERLOAD]system busy, start flow control for a while, queue size: 1, capacity: 1"
	if resp.Code != remoting.SystemBusy || resp.Remark != want || resp.Opaque != 3 {
		t.Fatalf("overload response %+v", resp)
	}
	close(gate)
	if r := c1.read(); r.Code != remoting.Success {
		t.Fatalf("c1 %+v", r)
	}
	if r := c2.read(); r.Code != remoting.Success {
		t.Fatalf("c2 %+v", r)
	}
	// A reader goroutine ran request 1 inline; an event loop queued it
	// (the handler blocks, so it may not run on the loop).
	st := ex.Stats()
	inline := uint64(1)
	if testEventLoops > 0 {
		inline = 0
	}
	if st.Inline != inline || st.Inline+st.Queued != 2 || st.Overload != 1 || ex.Name() != "send" {
		t.Fatalf("stats %+v", st)
	}
}

func TestExecutorTimeoutCleanWhileWorkersStuck(t *testing.T) {
	ex, addr, started, gate := gatedServer(t, ExecutorConfig{Workers: 1, QueueCapacity: 10, MaxQueueWait: 20 * time.Millisecond})
	c1, c2 := dialRaw(t, addr), dialRaw(t, addr)
	c1.send(request(codeEcho, 1, remoting.SerializeJSON))
	<-started
	c2.send(request(codeEcho, 2, remoting.SerializeRocketMQ))
	// The only worker slot is still held: the answer must come from the
	// queue cleaner, not from a worker picking the request up.
	resp := c2.read()
	if resp.Code != remoting.SystemBusy || resp.Opaque != 2 || resp.Serialize != remoting.SerializeRocketMQ ||
		!strings.HasPrefix(resp.Remark, "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: ") ||
		!strings.HasSuffix(resp.Remark, "ms, size of queue: 0, limit: 20ms") {
		t.Fatalf("timeout response %+v", resp)
	}
	close(gate)
	c1.read()
	if st := ex.Stats(); st.TimedOut != 1 {
		t.Fatalf("stats %+v", st)
	}
	select {
	case op := <-started:
		t.Fatalf("request %d ran after being answered busy", op)
	default:
	}
}

func TestExecutorRunsInlineWhenIdle(t *testing.T) {
	var ex *Executor
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		ex = s.NewExecutor(ExecutorConfig{Workers: 2, QueueCapacity: 4})
		s.Register(codeEcho, echo, ex)
		s.RunsOnLoop(codeEcho)
	})
	rc := dialRaw(t, addr)
	for i := range 10 {
		rc.send(request(codeEcho, int32(i), remoting.SerializeJSON))
		rc.read()
	}
	if st := ex.Stats(); st.Inline != 10 || st.Queued != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestExecutorQueuedRequestsRunOnWorkers(t *testing.T) {
	ex, addr, started, gate := gatedServer(t, ExecutorConfig{Workers: 2, QueueCapacity: 100})
	const n = 8
	conns := make([]*rawConn, n)
	for i := range conns {
		conns[i] = dialRaw(t, addr)
		conns[i].send(request(codeEcho, int32(i), remoting.SerializeJSON))
	}
	<-started
	<-started
	waitFor(t, "queued requests", func() bool { return ex.QueueLen() == n-2 })
	close(gate)
	for i, c := range conns {
		if r := c.read(); r.Opaque != int32(i) || r.Code != remoting.Success {
			t.Fatalf("conn %d: %+v", i, r)
		}
	}
	if st := ex.Stats(); st.Inline+st.Queued != n {
		t.Fatalf("stats %+v", st)
	}
}

func TestServerInvokesClient(t *testing.T) {
	got := make(chan *remoting.Command, 1)
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply {
			r := c.Defer(req)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				check := remoting.NewRequest(remoting.CheckTransactionState, map[string]string{"tx": "1"}, nil)
				resp, err := c.Invoke(ctx, check)
				if err != nil {
					r.Reply(remoting.NewResponse(req, remoting.SystemError, err.Error()))
					return
				}
				ow := remoting.NewRequest(remoting.NotifyConsumerIdsChanged, nil, nil)
				if err := c.InvokeOneway(ow); err != nil {
					r.Reply(remoting.NewResponse(req, remoting.SystemError, err.Error()))
					return
				}
				r.Reply(remoting.NewResponse(req, remoting.Success, resp.Remark))
			}()
			return Later(r)
		}, nil)
	})
	cl := NewClient(ClientConfig{Handler: func(c *Conn, req *remoting.Command) *remoting.Command {
		if req.Code == remoting.NotifyConsumerIdsChanged {
			got <- req
			return nil
		}
		return remoting.NewResponse(req, remoting.Success, "checked "+req.Ext("tx"))
	}})
	defer cl.Close()
	resp, err := cl.Invoke(context.Background(), addr, request(codeEcho, 0, remoting.SerializeJSON))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != remoting.Success || resp.Remark != "checked 1" {
		t.Fatalf("response %+v", resp)
	}
	if n := <-got; !n.IsOneway() {
		t.Fatalf("oneway notify without the oneway bit: %+v", n)
	}
}

func TestServerCloseFailsServerInvoke(t *testing.T) {
	errs := make(chan error, 1)
	srv, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(codeEcho, func(c *Conn, req *remoting.Command) *remoting.Command {
			go func() {
				_, err := c.Invoke(context.Background(), remoting.NewRequest(remoting.CheckTransactionState, nil, nil))
				errs <- err
			}()
			return nil
		}, nil)
	})
	rc := dialRaw(t, addr)
	rc.send(request(codeEcho, 1, remoting.SerializeJSON))
	// the raw peer reads the server's request and never answers
	if r := rc.read(); r.Code != remoting.CheckTransactionState || r.IsResponse() {
		t.Fatalf("server request %+v", r)
	}
	srv.Close()
	if err := <-errs; !errors.Is(err, ErrConnClosed) {
		t.Fatalf("err %v", err)
	}
	if _, err := srv.Listen("127.0.0.1:0"); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("listen after close: %v", err)
	}
}

func TestListenTwice(t *testing.T) {
	srv, addr := startServer(t, ServerConfig{}, func(s *Server) { s.Register(codeEcho, echo, nil) })
	vip, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{addr, vip.String()} {
		rc := dialRaw(t, a)
		rc.send(request(codeEcho, 1, remoting.SerializeJSON))
		rc.read()
	}
	if n := srv.Stats().Conns; n != 2 {
		t.Fatalf("%d conns", n)
	}
}

// A peer that sends without reading must not grow the write queue without
// bound: once it holds maxQueued commands the reader stops reading.
func TestWriteQueueBackpressure(t *testing.T) {
	var conn atomic.Pointer[Conn]
	_, addr := startServer(t, ServerConfig{MaxInflightPerConn: -1}, func(s *Server) {
		s.Register(codeEcho, func(c *Conn, req *remoting.Command) *remoting.Command {
			conn.Store(c)
			return echo(c, req)
		}, nil)
	})
	rc := dialRaw(t, addr)
	req := request(codeEcho, 1, remoting.SerializeJSON)
	req.Body = make([]byte, 2<<10)
	frame, _ := remoting.Encode(req)
	const n = 8000 // far more than socket buffers and the queue limit hold
	done := make(chan error, 1)
	go func() {
		batch := bytes.Repeat(frame, 100)
		for range n / 100 {
			if _, err := rc.nc.Write(batch); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	waitFor(t, "the reader to pause", func() bool { c := conn.Load(); return c != nil && c.pauses.Load() > 0 })
	c := conn.Load()
	if q := c.queued.Load(); q > c.maxQueued()+1 {
		t.Fatalf("%d queued, limit %d", q, c.maxQueued())
	}
	for range n {
		rc.read()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A handler that answers from another goroutine before it returns nil
// gives its slot back all the same.
func TestReplyBeforeHandlerReturns(t *testing.T) {
	var conn atomic.Pointer[Conn]
	_, addr := startServer(t, ServerConfig{MaxInflightPerConn: 1}, func(s *Server) {
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply {
			conn.Store(c)
			r := c.Defer(req)
			done := make(chan struct{})
			go func() {
				r.Reply(echo(c, req))
				close(done)
			}()
			<-done
			return Later(r)
		}, nil)
	})
	rc := dialRaw(t, addr)
	for i := range 5 {
		rc.send(request(codeEcho, int32(i), remoting.SerializeJSON))
		if r := rc.read(); r.Code != remoting.Success {
			t.Fatalf("request %d: %+v", i, r)
		}
	}
	c := conn.Load()
	if n := c.Held(); n != 0 || c.InFlight() != 0 {
		t.Fatalf("held %d, in flight %d", c.Held(), c.InFlight())
	}
}

// A deferred request nobody answers loses its slot after HeldTimeout once
// the connection is at its cap.
func TestHeldRequestsReaped(t *testing.T) {
	logs := &logRecorder{}
	held := make(chan *remoting.Command, 1)
	_, addr := startServer(t, ServerConfig{MaxInflightPerConn: 1, HeldTimeout: 5 * time.Millisecond, Logger: slog.New(logs)},
		func(s *Server) {
			s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply {
				if req.Opaque == 1 {
					held <- req
					return Later(c.Defer(req)) // never answered
				}
				return Respond(echo(c, req))
			}, nil)
		})
	rc := dialRaw(t, addr)
	rc.send(request(codeEcho, 1, remoting.SerializeJSON))
	<-held
	time.Sleep(10 * time.Millisecond) // let the held request age past HeldTimeout
	rc.send(request(codeEcho, 2, remoting.SerializeJSON))
	if r := rc.read(); r.Opaque != 2 || r.Code != remoting.Success {
		t.Fatalf("after reaping: %+v", r)
	}
	if _, ok := logs.find(slog.LevelWarn, "never answered"); !ok {
		t.Fatal("no warning")
	}
}

func TestResponsesThatDoNotFitROCKETMQFallBack(t *testing.T) {
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(codeEcho, func(c *Conn, req *remoting.Command) *remoting.Command {
			return remoting.NewResponse(req, 40000, "big code") // no short holds it
		}, nil)
		s.Register(2, func(c *Conn, req *remoting.Command) *remoting.Command {
			resp := remoting.NewResponse(req, remoting.Success, "")
			resp.SetExt(strings.Repeat("k", 40000), "v") // key longer than a short
			return resp
		}, nil)
	})
	rc := dialRaw(t, addr)
	rc.send(request(codeEcho, 1, remoting.SerializeRocketMQ))
	if r := rc.read(); r.Code != 40000 || r.Serialize != remoting.SerializeJSON || r.Opaque != 1 {
		t.Fatalf("response %+v", r)
	}
	rc.send(request(2, 2, remoting.SerializeRocketMQ))
	if r := rc.read(); r.Code != remoting.SystemError || r.Opaque != 2 || !strings.Contains(r.Remark, "does not encode") {
		t.Fatalf("response %+v", r)
	}
}

func TestShutdownDrainsInflight(t *testing.T) {
	held := make(chan *Responder, 1)
	srv, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply {
			if req.Opaque == 1 {
				r := c.Defer(req)
				held <- r
				return Later(r)
			}
			return Respond(echo(c, req))
		}, nil)
	})
	rc := dialRaw(t, addr)
	rc.send(request(codeEcho, 1, remoting.SerializeJSON))
	r := <-held
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	// new requests are refused while the held one drains
	waitFor(t, "draining", srv.draining.Load)
	rc.send(request(codeEcho, 2, remoting.SerializeJSON))
	if r := rc.read(); r.Opaque != 2 || r.Code != remoting.SystemBusy || !strings.Contains(r.Remark, "shutting down") {
		t.Fatalf("during drain: %+v", r)
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	default:
	}
	r.Reply(remoting.NewResponse(r.Request(), remoting.Success, "late but delivered"))
	if r := rc.read(); r.Opaque != 1 || r.Remark != "late but delivered" {
		t.Fatalf("drained response %+v", r)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rc.expectClosed()
}

func TestShutdownGivesUp(t *testing.T) {
	held := make(chan struct{}, 1)
	srv, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply { held <- struct{}{}; return Later(c.Defer(req)) }, nil)
	})
	rc := dialRaw(t, addr)
	rc.send(request(codeEcho, 1, remoting.SerializeJSON))
	<-held
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	rc.expectClosed()
}

// echoEarly defers and completes its responder before returning it, as the
// broker's send handler does when the store completes a put at once.
func echoEarly(c *Conn, req *remoting.Command) Reply {
	r := c.Defer(req)
	r.Reply(echo(c, req))
	return Later(r)
}

// A handler running inline that answers with Reply before it returns: the
// answer arrives, once, and the in-flight slot is given back.
func TestReplyBeforeInlineHandlerReturns(t *testing.T) {
	var srvConn atomic.Pointer[Conn]
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		ex := s.NewExecutor(ExecutorConfig{Name: "send", Workers: 1})
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply {
			srvConn.Store(c)
			return echoEarly(c, req)
		}, ex)
	})
	cl := NewClient(ClientConfig{})
	defer cl.Close()
	for i := range 50 {
		req := remoting.NewRequest(codeEcho, map[string]string{"n": strconv.Itoa(i)}, []byte("x"))
		resp, err := cl.Invoke(context.Background(), addr, req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Ext("n") != strconv.Itoa(i) || resp.Opaque != req.Opaque {
			t.Fatalf("answer %d: %+v", i, resp)
		}
	}
	c := srvConn.Load()
	if n := c.InFlight(); n != 0 {
		t.Fatalf("in flight %d after every answer", n)
	}
	if held := c.Held(); held != 0 {
		t.Fatalf("%d held marks left", held)
	}
}
