// Package transport carries remoting commands over TCP: the Server (accept
// loop, connections, handlers, executors) and the Client (one connection per
// address, opaque matching, timeouts, oneway, server-initiated requests).
//
// It owns sockets, goroutines and admission, never request semantics: a
// handler decides what a request means. It must never block a connection's
// reader on a full executor (a full queue is answered SYSTEM_BUSY at once),
// never let one malformed connection disturb another, and never allocate for
// a frame before its length has passed the frame limit.
//
// # Goroutines per connection
//
//	        socket
//	          │
//	reader ───┴── ReadCommand ─▶ response? ─▶ pending call (opaque) ─▶ caller
//	          │                     │
//	          │                  request ─▶ in-flight cap ─▶ executor
//	          │                                   │ idle: run inline on the reader
//	          │                                   │ busy: bounded queue ─▶ worker
//	          │                                   │ full / waited too long: SYSTEM_BUSY
//	          ▼                                   ▼
//	writer ◀── queue ◀─────────────── Reply / Invoke / InvokeOneway
//	  drains the queue into a bufio.Writer, flushes when the queue is empty
//
// A response produced on the reader goroutine, when nothing is queued, no
// one is writing and no further request is already buffered, is written and
// flushed by the reader itself: a goroutine hand-off costs more than the
// write. That includes a deferred answer completed before its handler
// returned (a put the store completed at once): the handler's return path
// finds it in the Responder and writes it, with no lock, map or hand-off.
// A pipelining connection's requests go to the executor's workers and their
// responses through the writer, which batches them: when it drained more
// than one command it yields once before its system call, so that commands
// about to be queued share the write. A peer that sends without reading
// stops being read once its write queue is full.
//
// A response that is the connection's only request in flight, or that the
// reader answers with nothing more buffered, is written at once on the
// goroutine that has it, without blocking: what the socket does not take
// goes to the writer goroutine first in line. A client's call that is the
// connection's only one is written the same way.
//
// # Event loops
//
// With ServerConfig.EventLoops, the connections accepted by Listen are
// served by that many event loops instead (loop.go): each waits in
// epoll_wait for all of its connections and, per wake-up, reads each ready
// one once, dispatches its complete frames exactly as a reader would, and
// writes each connection's answers of the pass with one system call. A
// request runs inline on a loop only when its code was declared never to
// block (RunsOnLoop) and nothing waits before it in its executor's queue
// (pipelined or not, busy workers or not); its handler can tell
// (Conn.OnLoop) and hand work that would wait to the executor's workers
// (Defer, Executor.Resume, Later). Such a request finding the queue's head
// to be requests its loop may run (queued while the loop was held, below)
// first runs those itself, 32 at most, so that clients keeping their
// windows full cannot keep the queue from emptying;
// every other request goes to the executor's workers, whose answers are
// written by the goroutine that completes them, without blocking, joining
// a write in progress when there is one. A full socket is finished by the
// loop on EPOLLOUT. A request's body is copied out of the loop's read
// buffer before the request goes anywhere but a handler of a code declared
// to read it only until it returns (BorrowsBody), which the loop runs with
// the body where it was read. A watchdog has another goroutine serve a
// loop whose frame (or pass end) has been under way for 50 ms, counted
// from the first of its 5 ms looks that saw it, unless a goroutine dump
// finds the loop's goroutine only waiting for a core; until the held handler
// returns, that loop's requests go to the workers, and the loop takes
// back those still queued as it serves its next ones. Pauses (write queue,
// body budget), idle closing, frame limits and every rule below are the
// same in both modes;
// TLS listeners and clients always use goroutines.
//
// # Admission
//
// Before a request reaches its executor it must pass, in order: the
// server's Authorize hook when one is set (run on the reader; a non-nil
// answer, e.g. NO_PERMISSION, is written instead and the request never
// takes an in-flight slot), the connection's in-flight cap (SYSTEM_BUSY "[REJECTREQUEST]... limit: N"),
// the executor's Reject hook (the owner's remark, e.g. a busy page cache),
// and the executor's queue bound ("[OVERLOAD]"). A queued request that
// waited longer than MaxQueueWait is answered "[TIMEOUT_CLEAN_QUEUE]"; the
// owner may answer a whole queue at once with Executor.Drain. The server's
// MaxQueuedBodyBytes counts the bodies of queued requests: while it is
// reached, readers stop before their next frame, and the pause counts as
// that request's queue wait.
//
// # Ownership
//
// A command handed to Reply, Invoke, InvokeAsync or InvokeOneway belongs to
// the transport until it is written; after a timed-out call the writer may
// still be reading it, so callers build a fresh command per call.
// RespondPieces and Responder.ReplyPieces answer with a body given as
// several slices (a pull's stored records) that are written in order and
// never joined: copied into the write buffer, or, for a body of 128 KiB or
// more with nothing buffered before it, sent with the header in one
// writev. Their done function runs exactly once when the slices are no
// longer needed (written, or the answer dropped because the request was
// oneway or the connection closed), so the owner releases them there
// (RespondPiecesOf and ReplyPiecesOf take the owner itself, a Releaser,
// which spares the method value's allocation):
//
//	frame = [len][hdrlen][header][resp.Body][piece 0][piece 1]...[piece n-1]
//	        len = 4 + hdrlen + len(resp.Body) + sum(len(piece i))
//
// # Ext fields
//
// The reader decodes a frame with remoting.ReadCommandInline: a request's
// ext fields stay in the command's inline table until the dispatcher has
// its code. Codes declared with Server.ReadsExtInline reach their handler
// that way (no map is built; the handler reads with Command.LookupExt and
// Command.Ext); every other request, every request while an Authorize hook
// is set, every response (unless its client was made with
// InlineResponses) and every server-initiated request on a client has its
// ExtFields map built first. The header text the table points
// into is the one string the header is decoded from, so the fields belong
// to the handler for good, as the map's strings do.
//
// # Responses
//
// A response copies the request's opaque, sets flag bit 0 and is written in
// the request's serialization. A request with flag bit 1 (oneway) gets no
// response. A request whose code has no handler gets REQUEST_CODE_NOT_SUPPORTED
// (3), "request type N not supported".
//
// # Replies
//
// A handler's answer is a value. A Handler returns the response (nil: no
// answer). A ReplyHandler (Server.RegisterReply) returns a Reply: a
// response (Respond, RespondPieces), no answer (NoReply), or Later(r) for
// the Responder r that c.Defer(req) made when the answer comes later (a
// put completed by the store, a held pull). The contract:
//
//   - Who completes: whoever the handler gave r to, from any goroutine,
//     before or after the handler returns. A completion before the return
//     is written by the handler's return path (on the reader when it ran
//     there); one after it goes to the writer.
//   - Exactly once: r.Reply, r.ReplyPieces, r.Send or r.Forget (no
//     answer, slot given back), one call. A second
//     completion, or Later with another request's responder, breaks the
//     contract: it panics in test binaries (testing.Testing), so a test
//     that does it fails, and is logged at error level and dropped
//     otherwise. A responder that is never completed holds its slot until
//     its connection closes or HeldTimeout releases it.
//   - Closing: when the connection closes, every responder whose handler
//     returned is released (its slot given back) and one still in its
//     handler is released when the handler returns; a later completion is
//     dropped (pieces released, nothing written). A completion on a oneway
//     request is dropped too.
//   - Resuming: Executor.Resume runs a held request again on that
//     executor's workers within its bounds (queue capacity, MaxQueueWait,
//     Drain), without taking a second slot; a refusal completes the
//     responder with the SYSTEM_BUSY answer a new request would get.
//
// # In-flight accounting and draining
//
// The transport alone counts what is in flight. Each request that passes
// the per-connection cap (MaxInflightPerConn) holds one slot: while it
// waits in an executor queue, while its handler runs, while its responder
// is held, and until its response leaves the write queue (written, or
// dropped with its connection). A oneway request holds it until its
// handler returns; NoReply gives it back when the handler returns. A held
// responder older than HeldTimeout loses its slot when the connection hits
// its cap, with a warning naming the connection. Server.Drain waits until
// no connection of the server has a slot taken or a command waiting to be
// written; Server.Shutdown refuses new requests ("[REJECTREQUEST]... the
// server is shutting down"), drains, then closes.
package transport

import "errors"

// Errors of the transport.
var (
	// ErrConnClosed: the connection closed before the call completed.
	ErrConnClosed = errors.New("transport: connection closed")
	// ErrTimeout: the call's context deadline passed before the response.
	ErrTimeout = errors.New("transport: call timed out")
	// ErrClientClosed: the client was closed.
	ErrClientClosed = errors.New("transport: client closed")
	// ErrServerClosed: the server was closed.
	ErrServerClosed = errors.New("transport: server closed")
	// ErrDial: the connection to an address could not be made.
	ErrDial = errors.New("transport: dial failed")
)
