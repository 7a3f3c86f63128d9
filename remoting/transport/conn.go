package transport

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/remoting"
)

// Handler serves one request. It returns the response, or nil when it
// answers later with c.Reply(req, resp) (or never: oneway requests, and
// requests it calls c.Forget for). The transport sets the response's
// opaque, flag and serialization, so each response must be a fresh command.
// A handler registered without an executor runs on the connection's reader
// goroutine: it must not block, and must never wait for a response on the
// same connection.
type Handler func(c *Conn, req *remoting.Command) *remoting.Command

const (
	readBufferSize  = 32 << 10
	writeBufferSize = 32 << 10
	// minQueuedWrites is the least number of commands that may wait for
	// the writer before the reader stops reading (a peer that sends but
	// never reads); the limit is max(this, 2 x MaxInflightPerConn).
	minQueuedWrites = 4096
)

var (
	readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferSize) }}
	writerPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, writeBufferSize) }}
	callPool   = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}
)

// outItem is one command waiting for the writer. counted marks a response
// whose request holds an in-flight slot. pieces follow cmd.Body on the wire
// (ReplyPieces); done is called once when they are no longer needed.
type outItem struct {
	cmd     *remoting.Command
	counted bool
	request bool
	pieces  [][]byte
	done    func()
}

// release calls the item's done function, if any.
func (it *outItem) release() {
	if it.done != nil {
		it.done()
		it.done = nil
	}
}

// piecesWritevMin is the body size from which ReplyPieces' pieces go to
// the socket with one writev (when nothing is buffered before them)
// instead of being copied into the buffered writer. Below it copying is
// cheaper: a pull of 32 records of 1 KiB spent more in writev's system
// call than the copy it saved.
const piecesWritevMin = 4 * writeBufferSize

// call is a request waiting for its response.
type call struct {
	resp *remoting.Command
	err  error
	done chan struct{} // sync calls: one token when resp/err are set
	cb   func(*remoting.Command, error)
	stop func() bool // async calls: stops the context watcher
}

// heldRequest is a deferred request (its handler returned nil): since when
// it holds its slot, or that it was settled before its handler returned.
type heldRequest struct {
	since   time.Time
	settled bool
}

// connConfig is what a server or client gives a connection.
type connConfig struct {
	id          uint64
	maxFrame    int
	idle        time.Duration
	maxInflight int64
	heldTimeout time.Duration
	// budget is the server's queued-body budget (nil on client conns).
	budget *bodyBudget
	// noDirectWrites sends every response through the writer goroutine
	// (benchmarks compare both).
	noDirectWrites bool
	logger         *slog.Logger
	dispatch       func(c *Conn, req *remoting.Command)
	onClose        func(c *Conn)
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
	writing  bool // a goroutine holds the writer role
	exited   atomic.Int32
	queued   atomic.Int64
	pauses   atomic.Uint64 // times the reader waited for the writer
	wake     chan struct{}
	room     chan struct{}
	scratch  []byte
	vecs     [][]byte // writev scratch of the writer role
	inflight atomic.Int64

	hmu      sync.Mutex
	held     map[*remoting.Command]heldRequest // deferred requests holding a slot
	lastReap time.Time
	// inlineReq is the request whose handler runs on the reader goroutine
	// now; a Reply to it before the handler returns is kept in inlineOut
	// and written by the reader when the handler returns (no hand-off to
	// the writer goroutine). Guarded by hmu.
	inlineReq *remoting.Command
	inlineOut outItem
	// pipelined is set by the reader before dispatch: more bytes of this
	// connection are already buffered, so the request should not run
	// inline and hold them up.
	pipelined bool
	// arrived is set by the reader before dispatch when it read the request
	// after a body-budget pause: the pause's start, so the pause counts as
	// queue wait. Zero otherwise.
	arrived time.Time

	opaque  atomic.Int32
	pmu     sync.Mutex
	pending map[int32]*call

	closeOnce sync.Once
	closed    chan struct{}
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

// start runs the reader and writer goroutines; wg tracks them.
func (c *Conn) start(wg *sync.WaitGroup) {
	wg.Add(2)
	go func() {
		defer wg.Done()
		c.readLoop()
	}()
	go func() {
		defer wg.Done()
		c.writeLoop()
		c.releaseBuffers()
	}()
}

// releaseBuffers returns the buffered reader and writer to their pools
// once both the reader (which may write directly) and the writer are gone.
func (c *Conn) releaseBuffers() {
	if c.exited.Add(1) == 2 {
		c.br.Reset(nil)
		readerPool.Put(c.br)
		c.bw.Reset(nil)
		writerPool.Put(c.bw)
	}
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
		dropped := c.wq
		c.wq = nil
		c.wmu.Unlock()
		for i := range dropped {
			dropped[i].release()
		}
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
		c.releaseBuffers()
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
		c.arrived = time.Time{}
		if c.cfg.budget.over() {
			since := time.Now()
			if !c.cfg.budget.wait(c.closed) {
				return
			}
			c.arrived = since
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
		c.pipelined = c.br.Buffered() > 0
		c.cfg.dispatch(c, cmd)
	}
}

func (c *Conn) maxQueued() int64 {
	return max(minQueuedWrites, 2*c.cfg.maxInflight)
}

// waitRoom blocks the reader until the writer has drained the queue below
// the limit; false when the connection closed.
func (c *Conn) waitRoom() bool {
	c.pauses.Add(1)
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
	signal := len(c.wq) == 1 && !c.writing
	c.wmu.Unlock()
	c.queued.Add(1)
	if signal {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// writeLoop drains the queue into the buffered writer and flushes when the
// queue is empty. The goroutine holding the writer role (c.writing) is the
// only one touching c.bw and c.wspare.
func (c *Conn) writeLoop() {
	for {
		select {
		case <-c.wake:
		case <-c.closed:
			return
		}
		yielded := false
		for {
			c.wmu.Lock()
			if c.writing || len(c.wq) == 0 {
				c.wmu.Unlock()
				break
			}
			c.writing = true
			batch := c.wq
			// wq and wspare never share an array: enqueue appends to one
			// while the writer walks the other.
			c.wq = c.wspare[:0]
			c.wmu.Unlock()
			n := len(batch)
			err := c.writeBatch(batch)
			if err == nil {
				empty := c.queueEmpty()
				if empty && n > 1 && !yielded && c.bw.Buffered() < writeBufferSize/2 {
					// Several commands came at once: others are likely
					// about to follow (pipelining peers, parallel
					// handlers). Let them run once before the system
					// call, so one write carries them all.
					yielded = true
					runtime.Gosched()
					empty = c.queueEmpty()
				}
				if empty {
					yielded = false
					err = c.bw.Flush()
				}
			}
			c.wmu.Lock()
			c.writing = false
			c.wmu.Unlock()
			if err != nil {
				c.closeWith(err)
				return
			}
		}
	}
}

func (c *Conn) queueEmpty() bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return len(c.wq) == 0
}

func (c *Conn) writeBatch(batch []outItem) error {
	for i := range batch {
		if err := c.writeItem(batch[i]); err != nil {
			for j := i + 1; j < len(batch); j++ {
				batch[j].release()
			}
			return err
		}
		batch[i] = outItem{}
	}
	c.wspare = batch[:0]
	c.queued.Add(-int64(len(batch)))
	select {
	case c.room <- struct{}{}:
	default:
	}
	return nil
}

// writeDirect writes it on the calling goroutine (the connection's reader,
// which may block on its own socket) when nothing is queued and no one else
// is writing, saving the hand-off to the writer goroutine; otherwise it
// queues it.
func (c *Conn) writeDirect(it outItem) error {
	c.wmu.Lock()
	if c.wclosed || c.writing || len(c.wq) > 0 {
		c.wmu.Unlock()
		return c.enqueue(it)
	}
	c.writing = true
	c.wmu.Unlock()
	err := c.writeItem(it)
	if err == nil {
		err = c.bw.Flush()
	}
	c.wmu.Lock()
	c.writing = false
	pending := len(c.wq) > 0
	c.wmu.Unlock()
	if err != nil {
		c.closeWith(err)
		return nil // the connection is gone; calls waiting on it fail
	}
	if pending {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// writeItem encodes one command into the buffered writer. The item's done
// function has run when it returns.
func (c *Conn) writeItem(it outItem) error {
	if it.counted {
		defer c.inflight.Add(-1)
	}
	defer it.release()
	cmd := it.cmd
	piecesLen := 0
	for _, p := range it.pieces {
		piecesLen += len(p)
	}
	var err error
	c.scratch, err = c.appendFrameHeader(c.scratch[:0], cmd, piecesLen)
	if errors.Is(err, remoting.ErrCodeOutOfRange) {
		// A code above 32767 cannot travel in a ROCKETMQ header; every
		// client decodes JSON.
		cmd.Serialize = remoting.SerializeJSON
		c.scratch, err = c.appendFrameHeader(c.scratch[:0], cmd, piecesLen)
	}
	if err != nil {
		it.pieces, piecesLen = nil, 0
		if it.request {
			c.fail(cmd.Opaque, fmt.Errorf("encode %s: %w", remoting.RequestName(cmd.Code), err))
			return nil
		}
		// The caller still gets an answer rather than a timeout.
		if c.cfg.logger != nil {
			c.cfg.logger.Error("remoting: response does not encode", "conn", c.cfg.id,
				"code", cmd.Code, "opaque", cmd.Opaque, "err", err)
		}
		cmd = &remoting.Command{Code: remoting.SystemError, Language: "JAVA", Version: remoting.CurrentVersion,
			Opaque: cmd.Opaque, Flag: remoting.FlagResponse, Remark: "response does not encode: " + err.Error()}
		if c.scratch, err = remoting.AppendFrameHeader(c.scratch[:0], cmd); err != nil {
			return nil
		}
	}
	if cap(c.scratch) > 1<<20 {
		defer func() { c.scratch = nil }()
	}
	if piecesLen >= piecesWritevMin && c.bw.Buffered() == 0 {
		// A large body and nothing buffered before it: header and
		// pieces go to the socket with one writev, never copied.
		vecs := append(c.vecs[:0], c.scratch, cmd.Body)
		vecs = append(vecs, it.pieces...)
		nb := net.Buffers(vecs)
		_, err = nb.WriteTo(c.nc)
		clear(vecs) // WriteTo consumed them; drop the references
		c.vecs = vecs[:0]
		return err
	}
	if _, err := c.bw.Write(c.scratch); err != nil {
		return err
	}
	if len(cmd.Body) > 0 {
		if _, err := c.bw.Write(cmd.Body); err != nil {
			return err
		}
	}
	// Otherwise the pieces are copied into the write buffer (a large
	// piece goes straight to the socket when the buffer is empty), which
	// costs no more system calls than a joined body would.
	for _, p := range it.pieces {
		if _, err := c.bw.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// appendFrameHeader is remoting.AppendFrameHeader for a frame whose body
// is cmd.Body followed by extra more bytes.
func (c *Conn) appendFrameHeader(dst []byte, cmd *remoting.Command, extra int) ([]byte, error) {
	start := len(dst)
	dst, err := remoting.AppendFrameHeader(dst, cmd)
	if err != nil || extra == 0 {
		return dst, err
	}
	total := int64(binary.BigEndian.Uint32(dst[start:])) + int64(extra)
	if total > 1<<31-1-4 {
		return dst[:start], fmt.Errorf("%w: %d bytes", remoting.ErrFrameTooLarge, total)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(total))
	return dst, nil
}

// acquire takes an in-flight slot; false when the connection is at its cap.
func (c *Conn) acquire() bool {
	n := c.inflight.Add(1)
	if c.cfg.maxInflight > 0 && n > c.cfg.maxInflight {
		c.inflight.Add(-1)
		if c.reapHeld() == 0 {
			return false
		}
		if c.inflight.Add(1) > c.cfg.maxInflight {
			c.inflight.Add(-1)
			return false
		}
	}
	return true
}

// run calls h for a request holding a slot and finishes it. onReader says
// it runs on the connection's reader goroutine.
func (c *Conn) run(h Handler, req *remoting.Command, onReader bool) {
	if !onReader || req.IsOneway() {
		c.finish(req, c.callHandler(h, req), onReader)
		return
	}
	c.hmu.Lock()
	c.inlineReq = req
	c.hmu.Unlock()
	resp := c.callHandler(h, req)
	c.hmu.Lock()
	early := c.inlineOut
	c.inlineReq, c.inlineOut = nil, outItem{}
	c.hmu.Unlock()
	c.finish(req, resp, true)
	if early.cmd != nil {
		c.replyItem(req, early, true)
	}
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
func (c *Conn) finish(req, resp *remoting.Command, onReader bool) {
	if req.IsOneway() {
		c.inflight.Add(-1)
		return
	}
	if resp != nil {
		c.replyFrom(req, resp, true, onReader)
		return
	}
	// Deferred: the slot stays held until Reply or Forget.
	c.hmu.Lock()
	if st, ok := c.held[req]; ok && st.settled {
		delete(c.held, req) // answered before the handler returned
	} else {
		if c.held == nil {
			c.held = make(map[*remoting.Command]heldRequest)
		}
		c.held[req] = heldRequest{since: time.Now()}
	}
	c.hmu.Unlock()
}

// settle records that req is answered (or forgotten) and reports whether
// the caller gives back its slot: false when it was settled already.
func (c *Conn) settle(req *remoting.Command) bool {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	if st, ok := c.held[req]; ok {
		if st.settled {
			return false
		}
		delete(c.held, req)
		return true
	}
	// The handler has not returned yet (it answered from another
	// goroutine first): finish will find this mark.
	if c.held == nil {
		c.held = make(map[*remoting.Command]heldRequest)
	}
	c.held[req] = heldRequest{since: time.Now(), settled: true}
	return true
}

// reapHeld gives back the slots of deferred requests held longer than the
// held timeout (their handler never answered; the client gave up long
// ago). It runs only when the connection is at its cap, at most once a
// second, and returns how many slots it freed.
func (c *Conn) reapHeld() int {
	c.hmu.Lock()
	now := time.Now()
	if now.Sub(c.lastReap) < time.Second || c.cfg.heldTimeout <= 0 {
		c.hmu.Unlock()
		return 0
	}
	c.lastReap = now
	freed := 0
	for req, st := range c.held {
		if now.Sub(st.since) > c.cfg.heldTimeout {
			delete(c.held, req)
			if !st.settled {
				freed++
			}
		}
	}
	c.hmu.Unlock()
	if freed > 0 {
		c.inflight.Add(-int64(freed))
		if c.cfg.logger != nil {
			c.cfg.logger.Warn("remoting: released in-flight slots of requests never answered", "conn", c.cfg.id,
				"remote", c.nc.RemoteAddr().String(), "count", freed, "held_over", c.cfg.heldTimeout)
		}
	}
	return freed
}

// reject answers a request that held a slot without running it.
func (c *Conn) reject(req *remoting.Command, code int32, remark string, onReader bool) {
	if req.IsOneway() {
		c.inflight.Add(-1)
		return
	}
	c.replyFrom(req, remoting.NewResponse(req, code, remark), true, onReader)
}

// Reply sends resp as the response to req, for a handler that returned nil:
// it copies req's opaque and serialization and sets the response flag (so
// resp must be a fresh command). Nothing is sent when req is oneway or the
// connection has closed. Reply may come before the handler returns; a
// second Reply for the same request is sent but frees no second slot.
func (c *Conn) Reply(req, resp *remoting.Command) {
	c.deferredReply(req, outItem{cmd: resp})
}

// ReplyPieces is Reply for a response whose body is resp.Body followed by
// pieces, written in order without joining them: into the connection's
// write buffer, or, for a large body with nothing buffered before it,
// with one writev of header and pieces. done, when not nil, is called exactly once when the pieces are
// no longer needed: after they were written, or when the answer is
// dropped (oneway request, closed connection). The pieces must stay valid
// and unchanged until then.
func (c *Conn) ReplyPieces(req, resp *remoting.Command, pieces [][]byte, done func()) {
	c.deferredReply(req, outItem{cmd: resp, pieces: pieces, done: done})
}

func (c *Conn) deferredReply(req *remoting.Command, it outItem) {
	if req.IsOneway() {
		it.release()
		return
	}
	it.counted = c.settle(req)
	c.hmu.Lock()
	if c.inlineReq == req && c.inlineOut.cmd == nil {
		// The handler answers before returning, on the reader (e.g. a
		// put completed at once): the reader writes it when the
		// handler returns.
		c.inlineOut = it
		c.hmu.Unlock()
		return
	}
	c.hmu.Unlock()
	c.replyItem(req, it, false)
}

// Forget gives back the in-flight slot of a non-oneway request whose
// handler returned nil and that will never be answered (e.g. END_TRANSACTION
// with commitOrRollback=0, which the Go client sends without the oneway bit
// and expects no answer to). Without it the slot is held until the held
// timeout.
func (c *Conn) Forget(req *remoting.Command) {
	if !req.IsOneway() && c.settle(req) {
		c.inflight.Add(-1)
	}
}

// replyFrom sends a response; onReader lets the reader goroutine write it
// itself when no further request of this connection is already buffered
// (pipelined responses are left to the writer, which batches them).
func (c *Conn) replyFrom(req, resp *remoting.Command, counted, onReader bool) {
	c.replyItem(req, outItem{cmd: resp, counted: counted}, onReader)
}

// replyItem is replyFrom for an item that may carry body pieces.
func (c *Conn) replyItem(req *remoting.Command, it outItem, onReader bool) {
	resp := it.cmd
	resp.Opaque = req.Opaque
	resp.Flag = (resp.Flag | remoting.FlagResponse) &^ remoting.FlagOneway
	resp.Serialize = req.Serialize
	counted := it.counted
	var err error
	if onReader && !c.pipelined && !c.cfg.noDirectWrites {
		err = c.writeDirect(it)
	} else {
		err = c.enqueue(it)
	}
	if err != nil {
		it.release()
		if counted {
			c.inflight.Add(-1)
		}
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
