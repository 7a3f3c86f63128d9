package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/remoting"
)

// Handler serves one request. It returns the response, or nil when it
// answers later with c.Reply(req, resp) (or never, for oneway requests and
// after c.Forget(req)).
type Handler func(c *Conn, req *remoting.Command) *remoting.Command

const (
	readBufferSize  = 32 << 10
	writeBufferSize = 32 << 10
	// maxQueuedWrites is how many commands may wait for the writer before
	// the reader stops reading (a peer that sends but never reads).
	minQueuedWrites = 4096
)

var (
	readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferSize) }}
	writerPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, writeBufferSize) }}
	callPool   = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}
)

// outItem is one command waiting for the writer. counted marks a response
// whose request holds an in-flight slot.
type outItem struct {
	cmd     *remoting.Command
	counted bool
	request bool
}

// call is a request waiting for its response.
type call struct {
	resp *remoting.Command
	err  error
	done chan struct{} // sync calls: one token when resp/err are set
	cb   func(*remoting.Command, error)
	stop func() bool // async calls: stops the context watcher
}

// connConfig is what a server or client gives a connection.
type connConfig struct {
	id          uint64
	maxFrame    int
	idle        time.Duration
	maxInflight int64
	logger      *slog.Logger
	dispatch    func(c *Conn, req *remoting.Command)
	onClose     func(c *Conn)
}

// Conn is one TCP connection carrying commands both ways.
type Conn struct {
	cfg connConfig
	nc  net.Conn
	br  *bufio.Reader
	bw  *bufio.Writer

	wmu      sync.Mutex
	wq       []outItem
	wspare   []outItem
	wclosed  bool
	queued   atomic.Int64
	wake     chan struct{}
	room     chan struct{}
	scratch  []byte
	inflight atomic.Int64

	opaque  atomic.Int32
	pmu     sync.Mutex
	pending map[int32]*call

	closeOnce sync.Once
	closed    chan struct{}
	done      sync.WaitGroup
}

func newConn(nc net.Conn, cfg connConfig) *Conn {
	c := &Conn{
		cfg:     cfg,
		nc:      nc,
		wake:    make(chan struct{}, 1),
		room:    make(chan struct{}, 1),
		pending: make(map[int32]*call),
		closed:  make(chan struct{}),
	}
	if c.cfg.maxFrame <= 0 {
		c.cfg.maxFrame = remoting.MaxFrameSize
	}
	c.br = readerPool.Get().(*bufio.Reader)
	c.br.Reset(nc)
	c.bw = writerPool.Get().(*bufio.Writer)
	c.bw.Reset(nc)
	return c
}

// start runs the reader and writer goroutines; wg (if not nil) tracks them.
func (c *Conn) start(wg *sync.WaitGroup) {
	c.done.Add(2)
	if wg != nil {
		wg.Add(2)
	}
	go func() {
		defer func() {
			c.done.Done()
			if wg != nil {
				wg.Done()
			}
		}()
		c.readLoop()
	}()
	go func() {
		defer func() {
			c.done.Done()
			if wg != nil {
				wg.Done()
			}
		}()
		c.writeLoop()
	}()
}

// ID returns the connection's id, unique within its server or client.
func (c *Conn) ID() uint64 { return c.cfg.id }

// RemoteAddr returns the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// LocalAddr returns the local address.
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// Closed is closed when the connection is.
func (c *Conn) Closed() <-chan struct{} { return c.closed }

// InFlight returns the number of requests holding an in-flight slot.
func (c *Conn) InFlight() int { return int(c.inflight.Load()) }

// Close closes the connection. Calls waiting on it fail with ErrConnClosed.
func (c *Conn) Close() { c.closeWith(nil) }

func (c *Conn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// closeWith closes the connection once, logging reason.
func (c *Conn) closeWith(reason error) {
	c.closeOnce.Do(func() {
		c.wmu.Lock()
		c.wclosed = true
		c.wq = nil
		c.wmu.Unlock()
		close(c.closed)
		_ = c.nc.Close()
		c.logClose(reason)
		c.pmu.Lock()
		calls := c.pending
		c.pending = make(map[int32]*call)
		c.pmu.Unlock()
		for _, cl := range calls {
			cl.deliver(nil, ErrConnClosed)
		}
		if c.cfg.onClose != nil {
			c.cfg.onClose(c)
		}
	})
}

func (c *Conn) logClose(reason error) {
	l := c.cfg.logger
	if l == nil {
		return
	}
	attrs := []any{"conn", c.cfg.id, "remote", c.nc.RemoteAddr().String()}
	switch {
	case reason == nil, errors.Is(reason, net.ErrClosed):
		l.Debug("remoting: connection closed", attrs...)
	case errors.Is(reason, io.EOF):
		l.Debug("remoting: connection closed by peer", attrs...)
	case errors.Is(reason, os.ErrDeadlineExceeded):
		l.Info("remoting: closing idle connection", append(attrs, "idle", c.cfg.idle)...)
	case isCodecError(reason):
		l.Warn("remoting: closing connection after a malformed frame", append(attrs, "reason", reason.Error())...)
	default:
		l.Info("remoting: connection closed", append(attrs, "reason", reason.Error())...)
	}
}

func isCodecError(err error) bool {
	for _, s := range []error{remoting.ErrFrameTooLarge, remoting.ErrFrameTooShort, remoting.ErrHeaderTooLarge,
		remoting.ErrBadSerializeType, remoting.ErrBadHeader, remoting.ErrTooManyExtFields, remoting.ErrExtFieldTooLong} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// readLoop reads frames until the connection fails; responses go to their
// pending calls, requests to the dispatcher.
func (c *Conn) readLoop() {
	var reason error
	defer func() {
		c.closeWith(reason)
		c.br.Reset(nil)
		readerPool.Put(c.br)
	}()
	var lastDeadline time.Time
	step := c.cfg.idle / 8
	if step > time.Second {
		step = time.Second
	}
	for {
		if q := c.queued.Load(); q > c.maxQueued() {
			if !c.waitRoom() {
				return
			}
		}
		if c.cfg.idle > 0 {
			if now := time.Now(); now.Sub(lastDeadline) >= step {
				_ = c.nc.SetReadDeadline(now.Add(c.cfg.idle))
				lastDeadline = now
			}
		}
		cmd, err := remoting.ReadCommand(c.br, c.cfg.maxFrame)
		if err != nil {
			reason = err
			return
		}
		if cmd.IsResponse() {
			c.complete(cmd)
			continue
		}
		c.cfg.dispatch(c, cmd)
	}
}

func (c *Conn) maxQueued() int64 {
	return max(minQueuedWrites, 2*c.cfg.maxInflight)
}

// waitRoom blocks the reader until the writer has drained the queue below
// the limit; false when the connection closed.
func (c *Conn) waitRoom() bool {
	for c.queued.Load() > c.maxQueued() {
		select {
		case <-c.room:
		case <-c.closed:
			return false
		}
	}
	return true
}

// enqueue hands a command to the writer.
func (c *Conn) enqueue(it outItem) error {
	c.wmu.Lock()
	if c.wclosed {
		c.wmu.Unlock()
		return ErrConnClosed
	}
	c.wq = append(c.wq, it)
	n := len(c.wq)
	c.wmu.Unlock()
	c.queued.Add(1)
	if n == 1 {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// writeLoop drains the queue into the buffered writer and flushes when the
// queue is empty.
func (c *Conn) writeLoop() {
	var reason error
	defer func() {
		if reason != nil {
			c.closeWith(reason)
		}
		c.bw.Reset(nil)
		writerPool.Put(c.bw)
	}()
	for {
		c.wmu.Lock()
		batch := c.wq
		if len(batch) > 0 {
			// wq and wspare never share an array: enqueue appends to one
			// while the writer walks the other.
			c.wq = c.wspare[:0]
		}
		c.wmu.Unlock()
		if len(batch) == 0 {
			if c.bw.Buffered() > 0 {
				if err := c.bw.Flush(); err != nil {
					reason = err
					return
				}
			}
			select {
			case <-c.wake:
				continue
			case <-c.closed:
				return
			}
		}
		for i := range batch {
			if err := c.writeItem(batch[i]); err != nil {
				reason = err
				return
			}
			batch[i] = outItem{}
		}
		c.wspare = batch[:0]
		c.queued.Add(-int64(len(batch)))
		select {
		case c.room <- struct{}{}:
		default:
		}
	}
}

// writeItem encodes one command into the buffered writer.
func (c *Conn) writeItem(it outItem) error {
	if it.counted {
		defer c.inflight.Add(-1)
	}
	cmd := it.cmd
	var err error
	c.scratch, err = remoting.AppendFrameHeader(c.scratch[:0], cmd)
	if errors.Is(err, remoting.ErrCodeOutOfRange) {
		// A code above 32767 cannot travel in a ROCKETMQ header; every
		// client decodes JSON.
		cmd.Serialize = remoting.SerializeJSON
		c.scratch, err = remoting.AppendFrameHeader(c.scratch[:0], cmd)
	}
	if err != nil {
		if it.request {
			c.fail(cmd.Opaque, fmt.Errorf("encode %s: %w", remoting.RequestName(cmd.Code), err))
		} else if c.cfg.logger != nil {
			c.cfg.logger.Error("remoting: dropping a response that does not encode", "conn", c.cfg.id,
				"code", cmd.Code, "opaque", cmd.Opaque, "err", err)
		}
		return nil
	}
	if cap(c.scratch) > 1<<20 {
		defer func() { c.scratch = nil }()
	}
	if _, err := c.bw.Write(c.scratch); err != nil {
		return err
	}
	if len(cmd.Body) > 0 {
		if _, err := c.bw.Write(cmd.Body); err != nil {
			return err
		}
	}
	return nil
}

// acquire takes an in-flight slot; false when the connection is at its cap.
func (c *Conn) acquire() bool {
	n := c.inflight.Add(1)
	if c.cfg.maxInflight > 0 && n > c.cfg.maxInflight {
		c.inflight.Add(-1)
		return false
	}
	return true
}

// run calls h for a request holding a slot and finishes it.
func (c *Conn) run(h Handler, req *remoting.Command) {
	c.finish(req, c.callHandler(h, req))
}

func (c *Conn) callHandler(h Handler, req *remoting.Command) (resp *remoting.Command) {
	defer func() {
		if r := recover(); r != nil {
			if c.cfg.logger != nil {
				c.cfg.logger.Error("remoting: handler panic", "code", req.Code, "conn", c.cfg.id,
					"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			}
			resp = remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("handler panic: %v", r))
		}
	}()
	return h(c, req)
}

// finish answers a request that held a slot with resp (nil: answered later).
func (c *Conn) finish(req, resp *remoting.Command) {
	if req.IsOneway() {
		c.inflight.Add(-1)
		return
	}
	if resp != nil {
		c.reply(req, resp, true)
	}
}

// reject answers a request that held a slot without running it.
func (c *Conn) reject(req *remoting.Command, code int32, remark string) {
	if req.IsOneway() {
		c.inflight.Add(-1)
		return
	}
	c.reply(req, remoting.NewResponse(req, code, remark), true)
}

// Reply sends resp as the response to req: it copies req's opaque and
// serialization and sets the response flag. Nothing is sent when req is
// oneway or the connection has closed. Call it at most once per request.
func (c *Conn) Reply(req, resp *remoting.Command) {
	if req.IsOneway() {
		return
	}
	c.reply(req, resp, true)
}

// Forget gives back the in-flight slot of a non-oneway request that will
// never be answered (a handler returned nil and decided not to reply).
func (c *Conn) Forget(req *remoting.Command) {
	if !req.IsOneway() {
		c.inflight.Add(-1)
	}
}

func (c *Conn) reply(req, resp *remoting.Command, counted bool) {
	resp.Opaque = req.Opaque
	resp.Flag = (resp.Flag | remoting.FlagResponse) &^ remoting.FlagOneway
	resp.Serialize = req.Serialize
	if c.enqueue(outItem{cmd: resp, counted: counted}) != nil && counted {
		c.inflight.Add(-1)
	}
}

// register adds a pending call and returns its opaque.
func (c *Conn) register(cl *call) (int32, error) {
	op := c.opaque.Add(1)
	c.pmu.Lock()
	if c.isClosed() {
		c.pmu.Unlock()
		return 0, ErrConnClosed
	}
	c.pending[op] = cl
	c.pmu.Unlock()
	return op, nil
}

// unregister removes the pending call for op if it is still cl; true when
// the caller now owns its completion.
func (c *Conn) unregister(op int32, cl *call) bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.pending[op] == cl {
		delete(c.pending, op)
		return true
	}
	return false
}

// complete delivers a response to its pending call; unknown opaques are
// dropped (the caller gave up).
func (c *Conn) complete(resp *remoting.Command) {
	c.pmu.Lock()
	cl := c.pending[resp.Opaque]
	if cl != nil {
		delete(c.pending, resp.Opaque)
	}
	c.pmu.Unlock()
	if cl == nil {
		if c.cfg.logger != nil {
			c.cfg.logger.Debug("remoting: response for no pending call", "conn", c.cfg.id, "opaque", resp.Opaque)
		}
		return
	}
	cl.deliver(resp, nil)
}

// fail completes the pending call for op with err.
func (c *Conn) fail(op int32, err error) {
	c.pmu.Lock()
	cl := c.pending[op]
	delete(c.pending, op)
	c.pmu.Unlock()
	if cl != nil {
		cl.deliver(nil, err)
	}
}

func (cl *call) deliver(resp *remoting.Command, err error) {
	if cl.cb != nil {
		if cl.stop != nil {
			cl.stop()
		}
		go cl.cb(resp, err)
		return
	}
	cl.resp, cl.err = resp, err
	cl.done <- struct{}{}
}

func prepareRequest(req *remoting.Command, oneway bool) {
	req.Flag &^= remoting.FlagResponse | remoting.FlagOneway
	if oneway {
		req.Flag |= remoting.FlagOneway
	}
}

// Invoke sends req to the peer and waits for its response, until ctx ends
// or the connection closes. It sets req's opaque and clears its flag bits.
// Do not call it from a handler running inline on this connection's reader.
func (c *Conn) Invoke(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	prepareRequest(req, false)
	cl := callPool.Get().(*call)
	op, err := c.register(cl)
	if err != nil {
		callPool.Put(cl)
		return nil, err
	}
	req.Opaque = op
	if err := c.enqueue(outItem{cmd: req, request: true}); err != nil {
		if c.unregister(op, cl) {
			callPool.Put(cl)
			return nil, err
		}
		<-cl.done
		return c.finishCall(cl)
	}
	select {
	case <-cl.done:
		return c.finishCall(cl)
	case <-ctx.Done():
		if c.unregister(op, cl) {
			callPool.Put(cl)
			return nil, ctxError(ctx, req, c)
		}
		<-cl.done
		return c.finishCall(cl)
	}
}

func (c *Conn) finishCall(cl *call) (*remoting.Command, error) {
	resp, err := cl.resp, cl.err
	cl.resp, cl.err = nil, nil
	callPool.Put(cl)
	return resp, err
}

func ctxError(ctx context.Context, req *remoting.Command, c *Conn) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %s (opaque %d) to %s: %w", ErrTimeout, remoting.RequestName(req.Code),
			req.Opaque, c.nc.RemoteAddr(), err)
	}
	return fmt.Errorf("transport: %s (opaque %d) to %s: %w", remoting.RequestName(req.Code), req.Opaque,
		c.nc.RemoteAddr(), err)
}

// InvokeAsync sends req and calls cb (on its own goroutine) with the
// response, or with an error when ctx ends or the connection closes first.
// cb is called exactly once unless InvokeAsync returns an error.
func (c *Conn) InvokeAsync(ctx context.Context, req *remoting.Command, cb func(*remoting.Command, error)) error {
	prepareRequest(req, false)
	cl := &call{cb: cb}
	// The watcher is installed before the call is visible, so deliver
	// always sees cl.stop.
	var op int32
	if ctx.Done() != nil {
		var ready = make(chan struct{})
		cl.stop = context.AfterFunc(ctx, func() {
			<-ready
			if c.unregister(op, cl) {
				cb(nil, ctxError(ctx, req, c))
			}
		})
		defer close(ready)
	}
	var err error
	op, err = c.register(cl)
	if err != nil {
		if cl.stop != nil {
			cl.stop()
		}
		return err
	}
	req.Opaque = op
	if err := c.enqueue(outItem{cmd: req, request: true}); err != nil {
		if c.unregister(op, cl) {
			if cl.stop != nil {
				cl.stop()
			}
			return err
		}
	}
	return nil
}

// InvokeOneway sends req with the oneway flag set and waits for nothing.
func (c *Conn) InvokeOneway(req *remoting.Command) error {
	prepareRequest(req, true)
	req.Opaque = c.opaque.Add(1)
	return c.enqueue(outItem{cmd: req})
}
