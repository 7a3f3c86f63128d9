package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/time/rate"

	"github.com/spoolmq/spool/remoting"
)

// ServerConfig configures a Server. Zero values take the defaults.
type ServerConfig struct {
	// MaxFrameSize bounds 4 + frame length (default 16 MiB).
	MaxFrameSize int
	// IdleTimeout closes a connection that received nothing for this long
	// (default 120 s; negative = never).
	IdleTimeout time.Duration
	// MaxInflightPerConn bounds the requests of one connection that are
	// running, queued or awaiting their response; more are answered
	// SYSTEM_BUSY at once (default 1024; negative = no bound).
	MaxInflightPerConn int
	// HeldTimeout bounds how long a deferred request (its handler returned
	// nil) keeps its in-flight slot without being answered; when the
	// connection is at its cap, older ones are released with a warning
	// (default 60 s, above every client timeout; negative = never).
	HeldTimeout time.Duration
	// MaxQueuedBodyBytes bounds the bytes of request bodies waiting in
	// this server's executor queues; while it is reached, connection
	// readers pause before their next frame, and the pause counts as queue
	// wait of the request read after it (0 = no bound).
	MaxQueuedBodyBytes int64
	// Logger receives connection events (default: discard).
	Logger *slog.Logger
	// Authorize, when set, sees every request on its connection's reader
	// before admission and the handler; a non-nil answer is written
	// instead of running the request (nothing for a oneway request) and
	// the request is dropped. It must be quick and must not block: it runs
	// on the reader goroutine. nil costs one nil check per request.
	Authorize func(c *Conn, req *remoting.Command) *remoting.Command
	// MaxConns bounds the open connections of the server, MaxConnsPerIP
	// those from one source IP (0: no bound). A connection over either is
	// answered SYSTEM_BUSY "[REJECTREQUEST]too many connections..." on its
	// first request and closed (limits.go).
	MaxConns      int
	MaxConnsPerIP int
	// AuthTimeout closes a connection that Authorize has not marked
	// authenticated (Conn.MarkAuthenticated) within this time of its
	// accept (0: never). Only meaningful with an Authorize hook that
	// authenticates.
	AuthTimeout time.Duration
	// EventLoops serves the connections accepted by Listen with this many
	// event loops (loop.go) instead of a reader and a writer goroutine
	// each; 0 keeps the goroutines. Connections of listeners given to
	// Serve (TLS, wrapped listeners) always have their goroutines.
	EventLoops int
	// LoopPassBegin and LoopPassEnd, when set, bracket each event loop
	// pass that dispatches more than one frame: Begin before the pass's
	// second frame, and, when Begin returned true, End after its last and
	// before the answers of the pass are written (the connections served
	// after Begin have their answers held until then, so the answers End
	// completes leave with the others). End counts toward the loop's
	// stall limit, as a handler does. The broker gathers a pass's
	// CommitLog writes into one there.
	LoopPassBegin func() bool
	LoopPassEnd   func()
	// LoopPassStart and LoopPassDone, when set, bracket every event loop
	// pass that dispatches a frame: Start before its first frame, and,
	// when Start returned true, Done after LoopPassEnd and after the
	// pass's answers are written, so that a long Done holds no
	// connection's answers (those it completes are written as they
	// complete). Done counts toward the stall limit as End does. The
	// broker makes a pass's SYNC_FLUSH group commit there.
	LoopPassStart func() bool
	LoopPassDone  func()

	noDirectWrites bool // see connConfig
}

// route is what a request code maps to.
type route struct {
	h  ReplyHandler
	ex *Executor
}

// routeTable is replaced whole on registration, so lookups take no lock.
type routeTable struct {
	m   map[int32]route
	def ReplyHandler
	// flags holds what codes declared of their handlers: extInline (they
	// read ext fields through Command.LookupExt and Ext, so their requests
	// keep the inline table), onLoop (they never block, so an event
	// loop may run them inline) and borrowsBody (they read the body only
	// until they return).
	flags map[int32]routeFlags
}

// routeFlags are a code's declarations (ReadsExtInline, RunsOnLoop).
type routeFlags uint8

const (
	extInline routeFlags = 1 << iota
	onLoop
	borrowsBody
)

// withFlags returns a copy of t whose codes have f set too.
func (t *routeTable) withFlags(f routeFlags, codes []int32) *routeTable {
	n := &routeTable{m: t.m, def: t.def, flags: make(map[int32]routeFlags, len(t.flags)+len(codes))}
	for k, v := range t.flags {
		n.flags[k] = v
	}
	for _, c := range codes {
		n.flags[c] |= f
	}
	return n
}

// Server accepts connections and serves requests with registered handlers.
type Server struct {
	cfg    ServerConfig
	logger *slog.Logger
	routes atomic.Pointer[routeTable]
	regMu  sync.Mutex
	nextID atomic.Uint64

	rejectedInflight atomic.Uint64
	draining         atomic.Bool
	budget           *bodyBudget

	refusedTotal, refusedPerIP, authTimeouts atomic.Uint64
	refusalLogs                              *rate.Limiter

	mu        sync.Mutex
	closed    bool
	listeners []net.Listener
	conns     map[uint64]*Conn
	perIP     map[string]int // open connections by source IP (with limits)
	refusing  int            // connections in refusal mode, in conns but not counted
	execs     []*Executor
	loops     []*eventLoop
	watchStop chan struct{}
	loopLns   []*loopListener
	nextLoop  int
	onClose   []func(*Conn)
	onReply   atomic.Pointer[ReplyObserver]
	wg        sync.WaitGroup
}

// ServerStats are a server's figures.
type ServerStats struct {
	Conns            int    // open connections
	RejectedInflight uint64 // requests answered SYSTEM_BUSY by the in-flight cap
	// QueuedBodyBytes is the body bytes waiting in executor queues now.
	QueuedBodyBytes int64
	// BodyBudgetPauses counts reader pauses for MaxQueuedBodyBytes and
	// BodyBudgetPaused is their total length.
	BodyBudgetPauses uint64
	BodyBudgetPaused time.Duration
	// RefusedConnsTotal and RefusedConnsPerIP count connections refused
	// by MaxConns and MaxConnsPerIP; AuthTimeouts those closed by
	// AuthTimeout.
	RefusedConnsTotal uint64
	RefusedConnsPerIP uint64
	AuthTimeouts      uint64
}

// NewServer returns a server that is not yet listening.
func NewServer(cfg ServerConfig) *Server {
	if cfg.MaxFrameSize <= 0 {
		cfg.MaxFrameSize = remoting.MaxFrameSize
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 120 * time.Second
	} else if cfg.IdleTimeout < 0 {
		cfg.IdleTimeout = 0
	}
	if cfg.MaxInflightPerConn == 0 {
		cfg.MaxInflightPerConn = 1024
	} else if cfg.MaxInflightPerConn < 0 {
		cfg.MaxInflightPerConn = 0
	}
	if cfg.HeldTimeout == 0 {
		cfg.HeldTimeout = 60 * time.Second
	} else if cfg.HeldTimeout < 0 {
		cfg.HeldTimeout = 0
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, logger: cfg.Logger, conns: make(map[uint64]*Conn), perIP: make(map[string]int),
		refusalLogs: rate.NewLimiter(rate.Limit(5), 20),
		budget:      &bodyBudget{limit: max(cfg.MaxQueuedBodyBytes, 0)}}
	s.routes.Store(&routeTable{m: map[int32]route{}, def: valueHandler(NotSupported)})
	return s
}

// NotSupported is the default handler for unknown codes: it answers
// REQUEST_CODE_NOT_SUPPORTED naming the code.
func NotSupported(_ *Conn, req *remoting.Command) *remoting.Command {
	return remoting.NewResponse(req, remoting.RequestCodeNotSupported,
		fmt.Sprintf("request type %d not supported", req.Code))
}

// NewExecutor creates an executor owned by the server (stopped by Close).
func (s *Server) NewExecutor(cfg ExecutorConfig) *Executor {
	e := newExecutor(cfg, s.budget)
	s.mu.Lock()
	s.execs = append(s.execs, e)
	s.mu.Unlock()
	return e
}

// Register routes code to h, run on ex (nil: inline on the reader).
func (s *Server) Register(code int32, h Handler, ex *Executor) {
	s.RegisterReply(code, valueHandler(h), ex)
}

// RegisterReply routes code to h, a handler that may answer later, run on
// ex (nil: inline on the reader).
func (s *Server) RegisterReply(code int32, h ReplyHandler, ex *Executor) {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	old := s.routes.Load()
	t := &routeTable{m: make(map[int32]route, len(old.m)+1), def: old.def, flags: old.flags}
	for k, v := range old.m {
		t.m[k] = v
	}
	t.m[code] = route{h: h, ex: ex}
	s.routes.Store(t)
}

// RegisterDefault sets the handler for codes with no route (run inline).
func (s *Server) RegisterDefault(h Handler) {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	old := s.routes.Load()
	s.routes.Store(&routeTable{m: old.m, def: valueHandler(h), flags: old.flags})
}

// ReadsExtInline declares that the handlers of codes read a request's ext
// fields only through Command.LookupExt and Command.Ext (or call
// Command.ExtMap first), so their requests arrive with the fields in the
// command's inline table and no map is built for them. Every other
// request, and every request while an Authorize hook is set, has its
// ExtFields map built before anything sees it. It may be called before or
// after the codes are registered.
func (s *Server) ReadsExtInline(codes ...int32) {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	s.routes.Store(s.routes.Load().withFlags(extInline, codes))
}

// RunsOnLoop declares that the handlers of codes never block (whatever
// waits, they defer), so an event loop may run their requests inline when
// their executor has a worker slot free, as a reader goroutine does for
// every code. Requests of other codes read by a loop always go to their
// executor's workers, since a blocked handler would stall every connection
// of the loop. Handlers registered without an executor run inline
// everywhere, as always. It may be called before or after the codes are
// registered.
func (s *Server) RunsOnLoop(codes ...int32) {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	s.routes.Store(s.routes.Load().withFlags(onLoop, codes))
}

// BorrowsBody declares that the handlers of codes read a request's body
// only until they return (one that keeps it, or a part of it, copies it).
// An event loop then runs such a request, when it runs it inline, with
// the body where it was read, in the loop's buffer, instead of copying it
// out; a request handed to a worker gets a copy first, as does every
// request of other codes. It may be called before or after the codes are
// registered.
func (s *Server) BorrowsBody(codes ...int32) {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	s.routes.Store(s.routes.Load().withFlags(borrowsBody, codes))
}

// ReplyObserver sees every response the server's handlers give to a
// request that is not oneway, just before the response is handed to the
// connection's writer (or dropped, the connection being closed). It runs
// on the goroutine that answers and must be quick.
type ReplyObserver func(req *remoting.Command, a Answer)

// Answer is what a ReplyObserver learns of one response.
type Answer struct {
	// Code is the response's code.
	Code int32
	// Elapsed is the time from the start of the request's handler to the
	// response's hand-off to the writer.
	Elapsed time.Duration
	// LongPolled says the request waited for data before it was answered
	// (Responder.MarkLongPolled).
	LongPolled bool
	// Unsent says the response is not sent: its connection had closed,
	// or had released the request's responder, when it was given. A
	// write that fails later is not seen here.
	Unsent bool
}

// OnReply sets the observer of answers for the connections accepted from
// then on (set it before Listen); nil costs one nil check per request.
func (s *Server) OnReply(fn ReplyObserver) {
	if fn == nil {
		s.onReply.Store(nil)
		return
	}
	s.onReply.Store(&fn)
}

// OnConnClose adds fn to the functions called when a connection closes.
func (s *Server) OnConnClose(fn func(c *Conn)) {
	s.mu.Lock()
	s.onClose = append(s.onClose, fn)
	s.mu.Unlock()
}

// Stats returns the server's figures.
func (s *Server) Stats() ServerStats {
	s.mu.Lock()
	n := len(s.conns)
	s.mu.Unlock()
	return ServerStats{Conns: n, RejectedInflight: s.rejectedInflight.Load(),
		QueuedBodyBytes: s.budget.used.Load(), BodyBudgetPauses: s.budget.pauses.Load(),
		BodyBudgetPaused:  time.Duration(s.budget.pausedNs.Load()),
		RefusedConnsTotal: s.refusedTotal.Load(), RefusedConnsPerIP: s.refusedPerIP.Load(),
		AuthTimeouts: s.authTimeouts.Load()}
}

// Listen listens on addr ("host:port", port 0 for any) and serves in the
// background. It may be called several times (e.g. for the VIP port).
func (s *Server) Listen(addr string) (net.Addr, error) {
	lc := net.ListenConfig{KeepAlive: 30 * time.Second}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("transport: listen %s: %w", addr, err)
	}
	if s.cfg.EventLoops > 0 {
		return s.serveLoops(ln.(*net.TCPListener))
	}
	return s.Serve(ln)
}

// serveLoops has the event loops accept and serve ln's connections,
// starting the loops on first use.
func (s *Server) serveLoops(tl *net.TCPListener) (net.Addr, error) {
	raw, err := tl.SyscallConn()
	if err != nil {
		tl.Close()
		return nil, fmt.Errorf("transport: listener descriptor: %w", err)
	}
	ln := &loopListener{ln: tl, raw: raw}
	_ = raw.Control(func(fd uintptr) { ln.fd = int(fd) })
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		tl.Close()
		return nil, ErrServerClosed
	}
	if len(s.loops) == 0 {
		for range s.cfg.EventLoops {
			l, err := newEventLoop(s)
			if err != nil {
				for _, l := range s.loops {
					l.post(loopReq{kind: reqStop})
				}
				s.loops = nil
				tl.Close()
				return nil, err
			}
			s.loops = append(s.loops, l)
			l.start(&s.wg)
		}
		s.watchStop = make(chan struct{})
		s.wg.Add(1)
		go func(loops []*eventLoop, stop <-chan struct{}) {
			defer s.wg.Done()
			watchLoops(loops, &s.wg, stop)
		}(s.loops, s.watchStop)
	}
	s.listeners = append(s.listeners, tl)
	s.loopLns = append(s.loopLns, ln)
	s.loops[0].post(loopReq{kind: reqListen, ln: ln})
	return tl.Addr(), nil
}

// serveLoopFD serves a connection accepted by loop from: admitted as
// serve admits one, then given to the loop with the fewest connections.
func (s *Server) serveLoopFD(from *loopRun, fd int, local, remote net.Addr) {
	s.mu.Lock()
	if s.closed || len(s.loops) == 0 {
		s.mu.Unlock()
		unix.Close(fd)
		return
	}
	l := s.loops[s.nextLoop%len(s.loops)]
	s.nextLoop++
	c := newLoopConn(l, fd, local, remote, s.connConfig())
	if !s.registerLocked(c, remote) {
		s.mu.Unlock()
		unix.Close(fd)
		return
	}
	s.mu.Unlock()
	s.logger.Debug("remoting: connection accepted", "conn", c.ID(), "remote", remote.String(), "loop", true)
	if c.refusal != "" {
		s.logRefusal(c, c.refusal)
		time.AfterFunc(refusalGrace, func() { c.closeWith(errOverLimit) })
	} else if s.cfg.AuthTimeout > 0 {
		s.watchAuth(c)
	}
	if l == from.l {
		from.add(c)
	} else if !l.post(loopReq{kind: reqAdd, c: c}) {
		c.closeWith(ErrServerClosed)
	}
}

// connConfig is what the server gives each of its connections.
func (s *Server) connConfig() connConfig {
	return connConfig{
		id:             s.nextID.Add(1),
		maxFrame:       s.cfg.MaxFrameSize,
		idle:           s.cfg.IdleTimeout,
		maxInflight:    int64(s.cfg.MaxInflightPerConn),
		heldTimeout:    s.cfg.HeldTimeout,
		budget:         s.budget,
		noDirectWrites: s.cfg.noDirectWrites,
		logger:         s.logger,
		dispatch:       s.dispatch,
		onClose:        s.connClosed,
		onReply:        s.onReply.Load(),
	}
}

func (s *Server) acceptLoop(ln net.Listener) {
	defer s.wg.Done()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors and the like: back off and retry.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.logger.Warn("remoting: accept failed", "addr", ln.Addr().String(), "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s.serve(nc)
	}
}

// registerLocked admits c from remote (a refused connection is kept to
// be told why, counted) and adds it to the server's connections; false
// when too many wait for their refusal already and c is to be closed at
// once. s.mu is held.
func (s *Server) registerLocked(c *Conn, remote net.Addr) bool {
	if s.limited() {
		c.ipKey = sourceIP(remote)
		if c.refusal = s.admitLocked(c.ipKey); c.refusal != "" && s.refusing >= maxRefusing {
			return false
		} else if c.refusal != "" {
			s.refusing++
		} else {
			s.perIP[c.ipKey]++
		}
	}
	s.conns[c.ID()] = c
	return true
}

func (s *Server) serve(nc net.Conn) {
	c := newConn(nc, s.connConfig())
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if !s.registerLocked(c, nc.RemoteAddr()) {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.mu.Unlock()
	s.logger.Debug("remoting: connection accepted", "conn", c.ID(), "remote", nc.RemoteAddr().String())
	if c.refusal != "" {
		s.logRefusal(c, c.refusal)
		time.AfterFunc(refusalGrace, func() { c.closeWith(errOverLimit) })
	} else if s.cfg.AuthTimeout > 0 {
		s.watchAuth(c)
	}
	c.start(&s.wg)
}

func (s *Server) connClosed(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c.ID())
	if c.authTimer != nil {
		c.authTimer.Stop()
	}
	if s.limited() {
		if c.refusal != "" {
			s.refusing--
		} else if n := s.perIP[c.ipKey] - 1; n > 0 {
			s.perIP[c.ipKey] = n
		} else {
			delete(s.perIP, c.ipKey)
		}
	}
	fns := s.onClose
	s.mu.Unlock()
	for _, fn := range fns {
		fn(c)
	}
}

// dispatch admits and routes one request read by c's reader.
func (s *Server) dispatch(c *Conn, req *remoting.Command) {
	if c.refusal != "" {
		s.refuseConn(c, req)
		return
	}
	t := s.routes.Load()
	flags := t.flags[req.Code]
	if flags&borrowsBody == 0 {
		c.ownBody(req)
	}
	if s.cfg.Authorize != nil || flags&extInline == 0 {
		req.ExtMap()
	}
	if s.cfg.Authorize != nil {
		if resp := s.cfg.Authorize(c, req); resp != nil {
			if !req.IsOneway() {
				c.replyFrom(req, resp, false, true)
			}
			return
		}
	}
	r, ok := t.m[req.Code]
	if !ok {
		r = route{h: t.def}
	}
	if s.draining.Load() {
		if !req.IsOneway() {
			c.replyFrom(req, remoting.NewResponse(req, remoting.SystemBusy,
				"[REJECTREQUEST]system busy, the server is shutting down"), false, true)
		}
		return
	}
	if !c.acquire() {
		s.rejectedInflight.Add(1)
		if !req.IsOneway() {
			c.replyFrom(req, remoting.NewResponse(req, remoting.SystemBusy, fmt.Sprintf(
				"[REJECTREQUEST]system busy, too many requests in flight on this connection, limit: %d",
				c.cfg.maxInflight)), false, true)
		}
		return
	}
	if r.ex == nil {
		c.run(r.h, req, true)
		return
	}
	var loop *eventLoop // the loop that may run it, if any
	if c.lp != nil && flags&onLoop != 0 {
		loop = c.lp.l
	}
	r.ex.submit(c, req, r.h, c.lp == nil || loop != nil && loop.stalled.Load() == 0, loop)
}

// Shutdown stops accepting, answers new requests SYSTEM_BUSY, waits until
// every request in flight has been answered and written (or ctx ends), then
// closes like Close. It returns ctx's error when it gave up waiting.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.stopLoopListeners()
	s.mu.Lock()
	lns := s.listeners
	s.listeners = nil
	s.mu.Unlock()
	for _, ln := range lns {
		ln.Close()
	}
	err := s.Drain(ctx)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}

// Drain waits until no connection has a request in flight (running,
// queued, deferred and not completed, or answered and not yet written) and
// nothing waits to be written, or until ctx ends (its error is returned).
// It refuses nothing: requests that arrive meanwhile are served and
// counted.
func (s *Server) Drain(ctx context.Context) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !s.drained() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// drained reports whether no connection has a request in flight or a
// command waiting to be written.
func (s *Server) drained() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		if c.InFlight() > 0 || c.queued.Load() > 0 {
			return false
		}
		c.wmu.Lock()
		var busy bool
		if c.lp != nil {
			busy = c.writing || c.lp.blocked
		} else {
			busy = c.writing || c.tail != nil || c.bw.Buffered() > 0
		}
		c.wmu.Unlock()
		if busy {
			return false
		}
	}
	return true
}

// Close stops accepting, closes every connection, stops the executors and
// waits for the connection goroutines (and so for inline handlers) to end.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.stopLoopListeners()
	s.mu.Lock()
	lns := s.listeners
	conns := make([]*Conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	execs := s.execs
	loops := s.loops
	watchStop := s.watchStop
	s.mu.Unlock()
	var first error
	for _, ln := range lns {
		if err := ln.Close(); err != nil && first == nil {
			first = err
		}
	}
	for _, c := range conns {
		c.Close()
	}
	for _, e := range execs {
		e.close()
	}
	for _, l := range loops {
		if l.post(loopReq{kind: reqStop}) {
			<-l.done
		}
	}
	if watchStop != nil {
		close(watchStop)
	}
	s.wg.Wait()
	return first
}

// stopLoopListeners makes the loops stop accepting, before the listeners
// close (so no descriptor number they reuse is taken for a listener's).
func (s *Server) stopLoopListeners() {
	s.mu.Lock()
	lns := s.loopLns
	s.loopLns = nil
	var l *eventLoop
	if len(s.loops) > 0 {
		l = s.loops[0]
	}
	s.mu.Unlock()
	if l == nil {
		return
	}
	for _, ln := range lns {
		done := make(chan struct{})
		if l.post(loopReq{kind: reqStopListen, ln: ln, done: done}) {
			select {
			case <-done:
			case <-l.done:
			}
		}
	}
}
