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
// write. That includes a Reply to the inline request made before its
// handler returns (a put the store completed at once): it is kept and
// written by the reader when the handler returns. A pipelining connection's
// requests go to the executor's workers and their responses through the
// writer, which batches them: when it drained more than one command it
// yields once before its system call, so that commands about to be queued
// share the write. A peer that sends without reading stops being read once
// its write queue is full.
//
// # Admission
//
// Before a request reaches its executor it must pass, in order: the
// connection's in-flight cap (SYSTEM_BUSY "[REJECTREQUEST]... limit: N"),
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
// Conn.ReplyPieces answers with a body given as several slices (a pull's
// stored records) that are written in order and never joined: copied into
// the write buffer, or, for a body of 128 KiB or more with nothing buffered
// before it, sent with the header in one writev. Its done function runs
// exactly once when the slices are no longer needed (written, or the
// answer dropped because the request was oneway or the connection closed),
// so the owner releases them there:
//
//	frame = [len][hdrlen][header][resp.Body][piece 0][piece 1]...[piece n-1]
//	        len = 4 + hdrlen + len(resp.Body) + sum(len(piece i))
//
// # Responses
//
// A response copies the request's opaque, sets flag bit 0 and is written in
// the request's serialization. A request with flag bit 1 (oneway) gets no
// response. A request whose code has no handler gets REQUEST_CODE_NOT_SUPPORTED
// (3), "request type N not supported".
//
// # In-flight accounting
//
// Each request that passes the per-connection cap (MaxInflightPerConn) holds
// one slot until its response leaves the write queue; a oneway request holds
// it until its handler returns. A handler that returns nil for a non-oneway
// request answers later with Conn.Reply (before or after it returns), or
// calls Conn.Forget when it will never answer. A deferred request left
// unanswered longer than HeldTimeout loses its slot when the connection hits
// its cap, with a warning naming the connection.
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
