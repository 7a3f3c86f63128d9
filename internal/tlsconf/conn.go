package tlsconf

import (
	"crypto/tls"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// The states of a Conn's opening.
const (
	statePending uint32 = iota // first byte not read yet
	stateReady                 // plain or TLS, handshake done
	stateFailed                // refused or failed; err says why
)

// Conn is a connection accepted by a Listener. Its first Read or Write
// reads the first byte and, for TLS, runs the handshake (bounded by the
// listener's HandshakeTimeout); deadlines set before that apply after it.
type Conn struct {
	l     *Listener
	raw   net.Conn
	ipKey string

	state atomic.Uint32
	mu    sync.Mutex // held while opening
	err   error      // stateFailed's error
	// active is what Read and Write use once ready: raw, a prefixed raw
	// (the sniffed byte given back) or a *tls.Conn over it.
	active net.Conn
	tc     *tls.Conn

	dmu    sync.Mutex // deadlines set before the connection is ready
	rd, wd time.Time

	authed    atomic.Bool
	authCh    chan struct{}
	authOnce  sync.Once
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

func newConn(l *Listener, raw net.Conn, ipKey string) *Conn {
	c := &Conn{l: l, raw: raw, ipKey: ipKey, authCh: make(chan struct{}), done: make(chan struct{})}
	if l.cfg.Mode == Disabled {
		c.active = raw
		c.state.Store(stateReady)
	}
	return c
}

// open reads the first byte and runs the handshake, once.
func (c *Conn) open() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state.Load() {
	case stateReady:
		return nil
	case stateFailed:
		return c.err
	}
	err := c.handshake()
	if err != nil {
		c.err = err
		c.state.Store(stateFailed)
		c.Close()
		return err
	}
	c.dmu.Lock()
	_ = c.raw.SetReadDeadline(c.rd)
	_ = c.raw.SetWriteDeadline(c.wd)
	c.state.Store(stateReady)
	c.dmu.Unlock()
	return nil
}

func (c *Conn) handshake() error {
	l := c.l
	_ = c.raw.SetDeadline(time.Now().Add(l.cfg.HandshakeTimeout))
	var first [1]byte
	if _, err := io.ReadFull(c.raw, first[:]); err != nil {
		l.refuse(HandshakeFail, c.raw.RemoteAddr(), err)
		return err
	}
	useTLS, r := sniff(l.cfg.Mode, first[0])
	if r != Admitted {
		l.refuse(r, c.raw.RemoteAddr(), nil)
		return ErrPlainRefused
	}
	pc := &prefixConn{Conn: c.raw, first: first[0], has: true}
	if !useTLS {
		c.active = pc
		l.plainConns.Add(1)
		return nil
	}
	tc := tls.Server(pc, l.cfg.TLS)
	if err := tc.Handshake(); err != nil {
		l.refuse(HandshakeFail, c.raw.RemoteAddr(), err)
		return err
	}
	c.tc, c.active = tc, tc
	l.tlsConns.Add(1)
	return nil
}

// Handshake opens the connection now (the first Read or Write does it
// otherwise).
func (c *Conn) Handshake() error {
	if c.state.Load() == stateReady {
		return nil
	}
	return c.open()
}

// Read reads from the connection, opening it first.
func (c *Conn) Read(b []byte) (int, error) {
	if c.state.Load() != stateReady {
		if err := c.open(); err != nil {
			return 0, err
		}
	}
	return c.active.Read(b)
}

// Write writes to the connection, opening it first.
func (c *Conn) Write(b []byte) (int, error) {
	if c.state.Load() != stateReady {
		if err := c.open(); err != nil {
			return 0, err
		}
	}
	return c.active.Write(b)
}

// Close closes the socket (no TLS close_notify is sent: it could block
// on a peer that stopped reading, and remoting frames carry their own
// length) and releases the connection's place in the limits.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		// Released first, so that a peer that saw the close and dials
		// again finds the place free.
		c.l.release(c)
		c.closeErr = c.raw.Close()
	})
	return c.closeErr
}

// LocalAddr is the socket's local address.
func (c *Conn) LocalAddr() net.Addr { return c.raw.LocalAddr() }

// RemoteAddr is the socket's remote address.
func (c *Conn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }

// SetDeadline sets both deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline sets the read deadline; before the connection is open
// it is kept and applied once the handshake is done.
func (c *Conn) SetReadDeadline(t time.Time) error {
	if c.state.Load() == stateReady {
		return c.raw.SetReadDeadline(t)
	}
	c.dmu.Lock()
	defer c.dmu.Unlock()
	c.rd = t
	if c.state.Load() == stateReady {
		return c.raw.SetReadDeadline(t)
	}
	return nil
}

// SetWriteDeadline is SetReadDeadline's write side.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	if c.state.Load() == stateReady {
		return c.raw.SetWriteDeadline(t)
	}
	c.dmu.Lock()
	defer c.dmu.Unlock()
	c.wd = t
	if c.state.Load() == stateReady {
		return c.raw.SetWriteDeadline(t)
	}
	return nil
}

// TLS returns the TLS state of an open TLS connection (the peer's
// certificates among it), or false for a plain or unopened one.
func (c *Conn) TLS() (tls.ConnectionState, bool) {
	if c.state.Load() != stateReady || c.tc == nil {
		return tls.ConnectionState{}, false
	}
	return c.tc.ConnectionState(), true
}

// MarkAuthenticated lifts the listener's AuthDeadline for c.
func (c *Conn) MarkAuthenticated() {
	c.authOnce.Do(func() {
		c.authed.Store(true)
		close(c.authCh)
	})
}

// Authenticated reports whether MarkAuthenticated was called.
func (c *Conn) Authenticated() bool { return c.authed.Load() }

// authWatch closes c when due fires before it is authenticated or closed.
func (c *Conn) authWatch(due <-chan time.Time) {
	select {
	case <-due:
		if c.authed.Load() {
			return
		}
		select {
		case <-c.done:
			return
		default:
		}
		c.l.refuse(AuthDeadline, c.raw.RemoteAddr(), nil)
		c.Close()
	case <-c.authCh:
	case <-c.done:
	}
}

// prefixConn gives back the sniffed byte before reading on.
type prefixConn struct {
	net.Conn
	first byte
	has   bool // only the opening goroutine, then the reader, touch it
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if p.has {
		if len(b) == 0 {
			return 0, nil
		}
		b[0] = p.first
		p.has = false
		return 1, nil
	}
	return p.Conn.Read(b)
}
