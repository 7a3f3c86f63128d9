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
// request answers later with Conn.Reply, or calls Conn.Forget when it will
// never answer, so the slot is given back.
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
