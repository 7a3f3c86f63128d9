package transport

import (
	"io"
	"net"
	"syscall"
)

// RawIO reads and writes a plain TCP connection with the event loops'
// system calls (loop_io.go) inside the connection's own poller: a read
// or write that the socket can serve makes no hand-off of the P, and so
// does not wake the runtime's monitor thread after each idle wait for the
// network, as net.Conn's do. Deadlines set on the connection apply as to
// its own Read and Write.
type RawIO struct {
	rc syscall.RawConn
}

// NewRawIO returns the RawIO of nc, or nil when nc is not a plain TCP
// connection (TLS, a pipe): the caller then uses nc itself.
func NewRawIO(nc net.Conn) *RawIO {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return &RawIO{rc: rc}
}

// Read reads what the socket holds, up to len(p), waiting in the poller
// while it holds nothing; io.EOF when the peer closed.
func (r *RawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var e syscall.Errno
	if err := r.rc.Read(func(fd uintptr) bool {
		n, e = rawRead(int(fd), p)
		return e != syscall.EAGAIN
	}); err != nil {
		return 0, err
	}
	switch {
	case e != 0:
		return 0, e
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p, waiting in the poller while the socket takes
// nothing.
func (r *RawIO) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		var n int
		var e syscall.Errno
		if err := r.rc.Write(func(fd uintptr) bool {
			n, e = rawWrite(int(fd), p[done:])
			return e != syscall.EAGAIN
		}); err != nil {
			return done, err
		}
		if e != 0 {
			return done, e
		}
		done += n
	}
	return done, nil
}

// RawRead and RawWrite are the event loops' read and write of a
// non-blocking socket, for a caller that polls the descriptor itself
// (outside the Go poller): one system call, unix.EAGAIN when the socket
// holds nothing or takes nothing.
func RawRead(fd int, p []byte) (int, error) {
	n, e := rawRead(fd, p)
	if e != 0 {
		return 0, e
	}
	return n, nil
}

// RawWrite: see RawRead.
func RawWrite(fd int, p []byte) (int, error) {
	n, e := rawWrite(fd, p)
	if e != 0 {
		return 0, e
	}
	return n, nil
}
