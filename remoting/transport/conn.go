package transport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spoolmq/spool/remoting"
)

// Handler serves one request and returns its response value; nil means
// the request is never answered (a oneway request, or one whose answer
// the protocol leaves out). A handler that answers later is a
// ReplyHandler. The transport sets the response's opaque, flag and
// serialization, so each response must be a fresh command. A handler
// registered without an executor runs on the connection's reader
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
	owner   Releaser // released after done
}

// release calls the item's done function and releases its owner, if any.
func (it *outItem) release() {
	if it.done != nil {
		it.done()
		it.done = nil
	}
	if it.owner != nil {
		it.owner.Release()
		it.owner = nil
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
	// onReply observes answers (Server.OnReply); nil on client conns.
	onReply *ReplyObserver
	// inlineResponses leaves responses' ext fields in their inline table
	// (ClientConfig.InlineResponses).
	inlineResponses bool
}

// Conn is one TCP connection carrying commands both ways.
type Conn struct {
	cfg connConfig
	nc  net.Conn
	br  *bufio.Reader
	bw  *bufio.Writer

	wmu     sync.Mutex
	wq      []outItem
	wspare  []outItem
	wclosed bool
	writing bool // a goroutine holds the writer role
	exited  atomic.Int32
	queued  atomic.Int64
	pauses  atomic.Uint64 // times the reader waited for the writer
	wake    chan struct{}
	room    chan struct{}
	scratch []byte
	vecs    [][]byte // writev scratch of the writer role
	// raw writes without blocking (writeNow): a plain TCP connection's
	// descriptor; nil for others (TLS), which never write that way.
	raw syscall.RawConn
	// lp is the state of a connection served by an event loop (loop.go);
	// nil for one served by a reader and a writer goroutine.
	lp *loopConn
	// tail is what a non-blocking write left of its frame, for the writer
	// goroutine to write before anything else (set and taken under wmu).
	tail     []byte
	inflight atomic.Int64

	// hmu guards the held list: responders whose handler returned and
	// that are not completed yet, oldest first (reply.go).
	hmu        sync.Mutex
	heldHead   *Responder
	heldTail   *Responder
	heldClosed bool
	lastReap   time.Time
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

	// Server connections' limits (limits.go): the source IP counted,
	// the refusal remark of a connection over a limit, the
	// authentication state and its deadline's timer.
	ipKey         string
	refusal       string
	authenticated atomic.Bool
	authTimer     *time.Timer
	srcIP         atomic.Pointer[string]
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
	if tc, ok := nc.(*net.TCPConn); ok {
		c.raw, _ = tc.SyscallConn()
	}
	return c
}

// newLoopConn returns a connection served by loop l on descriptor fd.
func newLoopConn(l *eventLoop, fd int, local, remote net.Addr, cfg connConfig) *Conn {
	c := &Conn{
		cfg:     cfg,
		pending: make(map[int32]*call),
		closed:  make(chan struct{}),
		lp:      &loopConn{l: l, fd: fd, local: local, remote: remote},
	}
	c.lp.refs.Store(1)
	c.nc = loopNetConn{c}
	if c.cfg.maxFrame <= 0 {
		c.cfg.maxFrame = remoting.MaxFrameSize
	}
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
			c.drop(dropped[i])
		}
		c.releaseAllHeld()
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
		// Requests keep their ext fields inline until the dispatcher
		// knows whether their handler wants the map.
		read := remoting.ReadCommandInline
		if c.cfg.inlineResponses {
			read = remoting.ReadCommandCompact // the client's owner keeps no field
		}
		cmd, err := read(c.br, c.cfg.maxFrame)
		if err != nil {
			reason = err
			return
		}
		if cmd.IsResponse() {
			if !c.cfg.inlineResponses {
				cmd.ExtMap()
			}
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
	if c.lp != nil {
		return c.loopSend(it)
	}
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
			if c.writing || len(c.wq) == 0 && c.tail == nil {
				c.wmu.Unlock()
				break
			}
			c.writing = true
			batch, tail := c.wq, c.tail
			// wq and wspare never share an array: enqueue appends to one
			// while the writer walks the other.
			c.wq, c.tail = c.wspare[:0], nil
			c.wmu.Unlock()
			n := len(batch)
			var err error
			if tail != nil {
				_, err = c.bw.Write(tail)
			}
			if err == nil {
				err = c.writeBatch(batch)
			} else {
				c.dropBatch(batch)
			}
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
			c.dropBatch(batch[i+1:])
			return err
		}
		batch[i] = outItem{}
	}
	c.releaseBatch(batch)
	return nil
}

// dropBatch drops the items of a batch that will not be written.
func (c *Conn) dropBatch(batch []outItem) {
	for i := range batch {
		c.drop(batch[i])
	}
}

// releaseBatch gives a written batch's array back and counts its items
// out of the queue.
func (c *Conn) releaseBatch(batch []outItem) {
	c.wspare = batch[:0]
	c.queued.Add(-int64(len(batch)))
	select {
	case c.room <- struct{}{}:
	default:
	}
}

// writeDirect writes it on the calling goroutine (the connection's reader,
// which may block on its own socket) when nothing is queued and no one else
// is writing, saving the hand-off to the writer goroutine; otherwise it
// queues it.
func (c *Conn) writeDirect(it outItem) error {
	if !c.takeWriter() {
		return c.enqueue(it)
	}
	err := c.writeItem(it)
	if err == nil {
		err = c.bw.Flush()
	}
	c.doneWriting(err, nil)
	return nil // on an error the connection is gone; calls waiting on it fail
}

// takeWriter takes the writer role for a direct write when it is free and
// nothing waits for the writer goroutine (queued items, a tail); false:
// the item is to be queued.
func (c *Conn) takeWriter() bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.wclosed || c.writing || len(c.wq) > 0 || c.tail != nil {
		return false
	}
	c.writing = true
	return true
}

// doneWriting gives up the writer role taken for a direct write, leaving
// tail (what the socket did not take) to the writer goroutine: an error
// closes the connection, and the writer goroutine is woken when something
// queued meanwhile or a tail is left.
func (c *Conn) doneWriting(err error, tail []byte) {
	c.wmu.Lock()
	c.writing = false
	c.tail = tail
	pending := len(c.wq) > 0 || c.tail != nil
	c.wmu.Unlock()
	if err != nil {
		c.closeWith(err)
		return
	}
	if pending {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// directWriteMax bounds the frames writeNow encodes and writes itself;
// larger ones go to the writer goroutine, whose writev spares the copy.
const directWriteMax = 64 << 10

// writeNow writes it on the calling goroutine without ever blocking. When
// no one else is writing and nothing waits for the writer, the frame is
// encoded into the writer role's scratch and written with one
// non-blocking write; what the socket does not take is left to the writer
// goroutine (c.tail), which writes it before anything queued after it. A
// connection without a raw descriptor (TLS), a frame over directWriteMax
// or a busy writer queues it instead. An error means the connection is
// closed and it was not taken (the caller drops it).
func (c *Conn) writeNow(it outItem) error {
	if c.lp != nil {
		return c.loopSend(it)
	}
	if c.raw == nil || len(it.cmd.Body)+piecesLen(it.pieces) > directWriteMax {
		return c.enqueue(it)
	}
	if !c.takeWriter() {
		return c.enqueue(it)
	}
	frame := c.encodeFrame(it)
	n, err := c.writeNonblocking(frame)
	var tail []byte
	if err == nil && n < len(frame) {
		tail = append([]byte(nil), frame[n:]...)
	}
	c.trimScratch()
	c.doneWriting(err, tail)
	return nil // on an error the connection is gone; calls waiting on it fail
}

// encodeFrame encodes it's whole frame into c.scratch (the writer
// role's), releases it and gives back its slot; nil when nothing is to be
// written.
func (c *Conn) encodeFrame(it outItem) []byte {
	if it.counted {
		defer c.inflight.Add(-1)
	}
	defer it.release()
	cmd, _, ok := c.encodeHeader(&it)
	if !ok {
		return nil
	}
	c.scratch = append(c.scratch, cmd.Body...)
	for _, p := range it.pieces {
		c.scratch = append(c.scratch, p...)
	}
	return c.scratch
}

// writeNonblocking writes what the socket takes of b now, without waiting
// for room: n < len(b) with a nil error when it is full.
func (c *Conn) writeNonblocking(b []byte) (n int, err error) {
	var werr error
	err = c.raw.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, e := syscall.Write(int(fd), b[n:])
			if m > 0 {
				n += m
			}
			if e == syscall.EINTR {
				continue
			}
			if e != nil {
				if e != syscall.EAGAIN {
					werr = e
				}
				break
			}
		}
		return true
	})
	if werr != nil {
		return n, werr
	}
	return n, err
}

func piecesLen(pieces [][]byte) int {
	n := 0
	for _, p := range pieces {
		n += len(p)
	}
	return n
}

// writeItem encodes one command into the buffered writer. The item's done
// function has run when it returns.
func (c *Conn) writeItem(it outItem) error {
	if it.counted {
		defer c.inflight.Add(-1)
	}
	defer it.release()
	defer c.trimScratch()
	cmd, extra, ok := c.encodeHeader(&it)
	if !ok {
		return nil
	}
	if extra >= piecesWritevMin && c.bw.Buffered() == 0 {
		// A large body and nothing buffered before it: header and
		// pieces go to the socket with one writev, never copied.
		vecs := append(c.vecs[:0], c.scratch, cmd.Body)
		vecs = append(vecs, it.pieces...)
		nb := net.Buffers(vecs)
		_, err := nb.WriteTo(c.nc)
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

// encodeHeader encodes the frame header of it's command into c.scratch
// (the writer role's) and returns the command whose body follows the
// header, and the pieces' length. ok is false when nothing is to be
// written: a request that does not encode has failed its call. A response
// that does not encode is replaced by a SYSTEM_ERROR answer (it.pieces
// dropped), so the caller gets an answer rather than a timeout.
func (c *Conn) encodeHeader(it *outItem) (cmd *remoting.Command, extra int, ok bool) {
	cmd, extra = it.cmd, piecesLen(it.pieces)
	var err error
	c.scratch, err = c.appendFrameHeader(c.scratch[:0], cmd, extra)
	if errors.Is(err, remoting.ErrCodeOutOfRange) {
		// A code above 32767 cannot travel in a ROCKETMQ header; every
		// client decodes JSON.
		cmd.Serialize = remoting.SerializeJSON
		c.scratch, err = c.appendFrameHeader(c.scratch[:0], cmd, extra)
	}
	if err == nil {
		return cmd, extra, true
	}
	it.pieces = nil
	if it.request {
		c.fail(cmd.Opaque, fmt.Errorf("encode %s: %w", remoting.RequestName(cmd.Code), err))
		return nil, 0, false
	}
	if c.cfg.logger != nil {
		c.cfg.logger.Error("remoting: response does not encode", "conn", c.cfg.id,
			"code", cmd.Code, "opaque", cmd.Opaque, "err", err)
	}
	cmd = &remoting.Command{Code: remoting.SystemError, Language: "JAVA", Version: remoting.CurrentVersion,
		Opaque: cmd.Opaque, Flag: remoting.FlagResponse, Remark: "response does not encode: " + err.Error()}
	if c.scratch, err = remoting.AppendFrameHeader(c.scratch[:0], cmd); err != nil {
		return nil, 0, false
	}
	return cmd, 0, true
}

// trimScratch lets go of a scratch buffer grown past 1 MiB by one frame.
func (c *Conn) trimScratch() {
	if cap(c.scratch) > 1<<20 {
		c.scratch = nil
	}
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

// reject answers a request that held a slot without running it.
func (c *Conn) reject(req *remoting.Command, code int32, remark string, onReader bool) {
	if req.IsOneway() {
		c.inflight.Add(-1)
		return
	}
	c.replyFrom(req, remoting.NewResponse(req, code, remark), true, onReader)
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
	var err error
	switch {
	case c.lp != nil && onReader:
		err = c.loopQueue(it)
	case c.lp != nil:
		err = c.loopSend(it)
	case c.cfg.noDirectWrites:
		err = c.enqueue(it)
	case onReader && !c.pipelined && c.raw == nil:
		err = c.writeDirect(it)
	case onReader && !c.pipelined, c.inflight.Load() <= 1:
		// The reader's answer when no further request is buffered, or
		// another goroutine's when it is the connection's only request
		// in flight: nothing else would share the write.
		err = c.writeNow(it)
	default:
		err = c.enqueue(it)
	}
	if err != nil {
		c.drop(it)
	}
}

// drop releases an item that will not be written and gives back its slot.
func (c *Conn) drop(it outItem) {
	it.release()
	if it.counted {
		c.inflight.Add(-1)
	}
}
