package transport

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
)

// Reply is what a ReplyHandler returns for its request: a response value
// (Respond, RespondPieces), the request's Responder when the answer comes
// later (Later), or no answer at all (NoReply). The zero Reply is NoReply.
type Reply struct {
	resp   *remoting.Command
	pieces [][]byte
	done   func()
	owner  Releaser
	later  *Responder
}

// Releaser owns the pieces of an answer (RespondPiecesOf): Release runs
// exactly once when they are no longer needed. Passing the owner rather
// than its method value spares an allocation per answer.
type Releaser interface{ Release() }

// release gives the pieces back: done, then the owner.
func (rep *Reply) release() {
	if rep.done != nil {
		rep.done()
	}
	if rep.owner != nil {
		rep.owner.Release()
	}
}

// Respond answers with resp (nil: NoReply).
func Respond(resp *remoting.Command) Reply { return Reply{resp: resp} }

// RespondPieces answers with resp whose body is resp.Body followed by
// pieces, written in order and never joined. done, when not nil, runs
// exactly once when the pieces are no longer needed (written, or the
// answer dropped because the request was oneway or the connection closed);
// the pieces must stay valid and unchanged until then.
func RespondPieces(resp *remoting.Command, pieces [][]byte, done func()) Reply {
	return Reply{resp: resp, pieces: pieces, done: done}
}

// RespondPiecesOf is RespondPieces with the pieces' owner in place of
// done: owner.Release runs exactly once when they are no longer needed.
func RespondPiecesOf(resp *remoting.Command, pieces [][]byte, owner Releaser) Reply {
	return Reply{resp: resp, pieces: pieces, owner: owner}
}

// Later says the request is answered through r, which must be the
// Responder that Conn.Defer returned for this request.
func Later(r *Responder) Reply { return Reply{later: r} }

// NoReply says the request is never answered (e.g. END_TRANSACTION with
// commitOrRollback=0, which the Go client sends without the oneway bit and
// expects no answer to); its in-flight slot is given back at once.
func NoReply() Reply { return Reply{} }

// IsNone reports whether rep is NoReply.
func (rep Reply) IsNone() bool { return rep.resp == nil && rep.later == nil }

// Response returns the response of a value Reply (nil for Later and
// NoReply).
func (rep Reply) Response() *remoting.Command { return rep.resp }

// ReplyHandler serves one request and returns its Reply. A handler
// registered without an executor runs on the connection's reader
// goroutine: it must not block, and must never wait for a response on the
// same connection.
type ReplyHandler func(c *Conn, req *remoting.Command) Reply

// States of a Responder. A responder is created running; its handler's
// return moves it to held unless it was completed first (early). held ends
// in done (completed) or released (connection closed, held too long).
const (
	respRunning  int32 = iota // the handler has not returned
	respEarly                 // completed before the handler returned; out waits for the return
	respHeld                  // the handler returned; linked in the connection's held list
	respDone                  // completed after the handler returned
	respReleased              // slot given back without an answer; a completion is dropped
)

// Responder answers one deferred request: Reply or ReplyPieces completes
// it, exactly once, from any goroutine, before or after the handler
// returned Later(r). See the package doc for the contract.
type Responder struct {
	c     *Conn
	req   *remoting.Command
	state atomic.Int32
	once  atomic.Bool // a completion was made
	out   outItem     // the answer of an early completion
	start int64       // monoNow when its handler began, with a reply observer (set by the handler's return path)
	long  atomic.Bool // MarkLongPolled was called

	// Guarded by c.hmu: the held list, oldest first.
	linked     bool
	since      int64 // monoNow when it was held
	prev, next *Responder
}

// OnLoop, asked by req's handler, says an event loop is running it
// inline (a code declared with Server.RunsOnLoop), where it must not wait:
// a handler that finds it would (a read of data not in memory) hands the
// request to its executor's workers (Defer, then Executor.Resume) and
// returns Later. It answers for the loop, not for the goroutine asking:
// a worker given the request may ask before the loop's handler has
// returned and still hear true, so the work handed off carries its own
// word of where it runs.
func (c *Conn) OnLoop(req *remoting.Command) bool {
	return c.lp != nil && c.lp.inline.Load() == req
}

// Defer returns the Responder of req, for a handler that answers later:
// the handler returns Later(r) and completes r once, when the answer is
// known (possibly before it returns).
func (c *Conn) Defer(req *remoting.Command) *Responder {
	return &Responder{c: c, req: req}
}

// DeferIn is Defer with the Responder placed in r: memory of the
// handler's own (a field of the state it allocates for the request
// anyway), so that answering later costs no allocation of its own. r must
// be a zero Responder, used for this one request and never copied; one
// already used gets a Responder of its own, as from Defer. When r is
// completed with an owner (ReplyPiecesOf), the transport touches r no
// more once it releases the owner, so the owner's Release may give r's
// memory back for another request's DeferIn.
func (c *Conn) DeferIn(r *Responder, req *remoting.Command) *Responder {
	if r == nil || r.c != nil {
		return c.Defer(req)
	}
	r.c, r.req = c, req
	return r
}

// Conn returns the connection the request came on.
func (r *Responder) Conn() *Conn { return r.c }

// MarkLongPolled says the request is held waiting for data (a suspended
// pull): the reply observer reports its answer as long-polled.
func (r *Responder) MarkLongPolled() { r.long.Store(true) }

// Request returns the request r answers.
func (r *Responder) Request() *remoting.Command { return r.req }

// Reply completes r with resp: the transport copies the request's opaque
// and serialization and sets the response flag, so resp must be a fresh
// command. Nothing is sent when the request was oneway, or its connection
// closed or released the responder.
func (r *Responder) Reply(resp *remoting.Command) { r.complete(outItem{cmd: resp}) }

// ReplyPieces completes r with resp followed by pieces (see RespondPieces
// for pieces and done).
func (r *Responder) ReplyPieces(resp *remoting.Command, pieces [][]byte, done func()) {
	r.complete(outItem{cmd: resp, pieces: pieces, done: done})
}

// ReplyPiecesOf is ReplyPieces with the pieces' owner in place of done
// (see RespondPiecesOf).
func (r *Responder) ReplyPiecesOf(resp *remoting.Command, pieces [][]byte, owner Releaser) {
	r.complete(outItem{cmd: resp, pieces: pieces, owner: owner})
}

// Forget completes r without an answer: its slot is given back and
// nothing is sent (the deferred form of NoReply).
func (r *Responder) Forget() { r.complete(outItem{}) }

// Send completes r with a value Reply (Respond or RespondPieces).
func (r *Responder) Send(rep Reply) {
	if rep.later != nil || rep.resp == nil {
		misuse(r.c, r.req, "Responder.Send needs a response value")
		return
	}
	r.complete(outItem{cmd: rep.resp, pieces: rep.pieces, done: rep.done, owner: rep.owner})
}

// complete hands it to whoever writes it: the handler's return path when
// the handler is still running (no lock, no hand-off), else the writer.
func (r *Responder) complete(it outItem) {
	if !r.once.CompareAndSwap(false, true) {
		c, req := r.c, r.req
		it.release()
		misuse(c, req, "request completed twice")
		return
	}
	r.out = it
	if r.state.CompareAndSwap(respRunning, respEarly) {
		return // the return path writes it
	}
	r.out = outItem{}
	if r.state.Load() == respReleased {
		r.unsent(it)
		return
	}
	c := r.c
	c.hmu.Lock()
	if !r.state.CompareAndSwap(respHeld, respDone) {
		c.hmu.Unlock()
		r.unsent(it) // released meanwhile
		return
	}
	c.unlinkHeld(r)
	c.hmu.Unlock()
	if it.cmd == nil {
		c.inflight.Add(-1) // Forget
		return
	}
	it.counted = true
	c.answer(r.req, it, false, r.start, r.long.Load())
}

// unsent drops the completion of a released responder; the observer sees
// it as unsent.
func (r *Responder) unsent(it outItem) {
	if o := r.c.cfg.onReply; o != nil && it.cmd != nil && !r.req.IsOneway() {
		(*o)(r.req, Answer{Code: it.cmd.Code, Elapsed: time.Duration(monoNow() - r.start), LongPolled: r.long.Load(), Unsent: true})
	}
	it.release() // last: the owner may reuse r's memory
}

// answer passes a response to the server's reply observer, if any, and
// hands it to the writer (the observer runs first: once the writer has
// the response, the peer may have it before the observer ran).
func (c *Conn) answer(req *remoting.Command, it outItem, onReader bool, start int64, long bool) {
	if o := c.cfg.onReply; o != nil {
		(*o)(req, Answer{Code: it.cmd.Code, Elapsed: time.Duration(monoNow() - start), LongPolled: long, Unsent: c.isClosed()})
	}
	c.replyItem(req, it, onReader)
}

// contractError is the panic value of a broken reply contract in a test
// binary; handler recovery lets it through, so the test fails.
type contractError string

func (e contractError) Error() string { return string(e) }

// misuse reports a broken contract: it panics in test binaries, so tests
// catch it, and logs an error otherwise.
func misuse(c *Conn, req *remoting.Command, what string) {
	msg := fmt.Sprintf("transport: %s: %s (opaque %d) on conn %d", what, remoting.RequestName(req.Code), req.Opaque, c.cfg.id)
	if testing.Testing() {
		panic(contractError(msg))
	}
	if c.cfg.logger != nil {
		c.cfg.logger.Error("remoting: reply contract broken", "what", what, "code", req.Code,
			"opaque", req.Opaque, "conn", c.cfg.id, "stack", string(debug.Stack()))
	}
}

// run calls h for a request holding a slot and answers it. onReader says
// it runs on the connection's reader goroutine.
func (c *Conn) run(h ReplyHandler, req *remoting.Command, onReader bool) {
	var start int64
	if c.cfg.onReply != nil {
		start = monoNow()
	}
	c.finish(req, c.callHandler(h, req), onReader, start)
}

func (c *Conn) callHandler(h ReplyHandler, req *remoting.Command) (rep Reply) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(contractError); ok {
				panic(r)
			}
			if c.cfg.logger != nil {
				c.cfg.logger.Error("remoting: handler panic", "code", req.Code, "conn", c.cfg.id,
					"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			}
			rep = Respond(remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("handler panic: %v", r)))
		}
	}()
	return h(c, req)
}

// finish is the handler's return path: it writes a value or an early
// completion, holds a responder still to be completed, and gives back the
// slot of a request never answered.
func (c *Conn) finish(req *remoting.Command, rep Reply, onReader bool, start int64) {
	r := rep.later
	if r != nil && (r.req != req || r.c != c) {
		misuse(c, req, "Later with the responder of another request")
		r = nil
	}
	if req.IsOneway() {
		if r != nil && !r.state.CompareAndSwap(respRunning, respReleased) {
			it := r.out // completed early: nothing is sent
			r.out = outItem{}
			it.release() // last: the owner may reuse r's memory
		}
		rep.release()
		c.inflight.Add(-1)
		return
	}
	switch {
	case r != nil:
		// The handler's start, read once by run: nothing reads r.start
		// before the return path (an early completion leaves its answer
		// to it; a later one takes r from the held list).
		r.start = start
		if c.hold(r) {
			return
		}
		it := r.out // completed before the handler returned
		r.out = outItem{}
		if it.cmd == nil {
			c.inflight.Add(-1) // Forget
			return
		}
		it.counted = true
		c.answer(req, it, onReader, r.start, r.long.Load())
	case rep.resp != nil:
		c.answer(req, outItem{cmd: rep.resp, pieces: rep.pieces, done: rep.done, owner: rep.owner, counted: true}, onReader, start, false)
	default:
		rep.release()
		c.inflight.Add(-1)
	}
}

// hold moves a responder whose handler returned uncompleted to held and
// links it into the held list, or releases it when the connection has
// closed; false when it was completed early (the caller writes its
// answer). The move and the link are one step under c.hmu, which a later
// completion takes before it answers: r is never touched here once its
// answer may have been written and its owner released (which may reuse
// r's memory, see DeferIn).
func (c *Conn) hold(r *Responder) bool {
	c.hmu.Lock()
	if !r.state.CompareAndSwap(respRunning, respHeld) {
		c.hmu.Unlock() // completed early
		return false
	}
	if c.heldClosed {
		r.state.Store(respReleased)
		c.hmu.Unlock()
		c.inflight.Add(-1)
		return true
	}
	if r.since = r.start; r.since == 0 {
		r.since = monoNow() // no observer: the time is read for the held timeout only
	}
	r.linked = true
	r.prev = c.heldTail
	if c.heldTail != nil {
		c.heldTail.next = r
	} else {
		c.heldHead = r
	}
	c.heldTail = r
	c.hmu.Unlock()
	return true
}

// unlinkHeld removes r from the held list; c.hmu is held.
func (c *Conn) unlinkHeld(r *Responder) {
	if !r.linked {
		return
	}
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		c.heldHead = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		c.heldTail = r.prev
	}
	r.prev, r.next, r.linked = nil, nil, false
}

// releaseHeld releases the held responders that satisfy pred, oldest
// first, stopping at the first that does not; c.hmu is held. It returns
// how many slots it freed (the caller gives them back).
func (c *Conn) releaseHeld(pred func(*Responder) bool) int {
	n := 0
	for r := c.heldHead; r != nil && pred(r); r = c.heldHead {
		c.unlinkHeld(r)
		r.state.Store(respReleased)
		n++
	}
	return n
}

// releaseAllHeld releases every held responder when the connection closes
// and refuses to hold more: their slots are given back, their answers
// dropped when they come.
func (c *Conn) releaseAllHeld() {
	c.hmu.Lock()
	c.heldClosed = true
	n := c.releaseHeld(func(*Responder) bool { return true })
	c.hmu.Unlock()
	c.inflight.Add(-int64(n))
}

// reapHeld gives back the slots of responders held longer than the held
// timeout (their handler never answered; the client gave up long ago). It
// runs only when the connection is at its cap, at most once a second, and
// returns how many slots it freed.
func (c *Conn) reapHeld() int {
	c.hmu.Lock()
	now := time.Now()
	if now.Sub(c.lastReap) < time.Second || c.cfg.heldTimeout <= 0 {
		c.hmu.Unlock()
		return 0
	}
	c.lastReap = now
	mono := monoNow()
	freed := c.releaseHeld(func(r *Responder) bool { return time.Duration(mono-r.since) > c.cfg.heldTimeout })
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

// Held returns the number of responders whose handler returned and that
// are not completed yet.
func (c *Conn) Held() int {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	n := 0
	for r := c.heldHead; r != nil; r = r.next {
		n++
	}
	return n
}

// valueHandler adapts a Handler: its response is the Reply's value (nil:
// NoReply).
func valueHandler(h Handler) ReplyHandler {
	return func(c *Conn, req *remoting.Command) Reply { return Reply{resp: h(c, req)} }
}

// monoEpoch anchors monoNow.
var monoEpoch = time.Now()

// monoNow is the time on the monotonic clock, in nanoseconds since the
// package was loaded, plus one (never zero, which means unset): the
// transport's elapsed-time measurements (reply observers, held
// responders) read it, one clock read where time.Now takes two.
func monoNow() int64 { return int64(time.Since(monoEpoch)) + 1 }
