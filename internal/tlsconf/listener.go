package tlsconf

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/spoolmq/spool/internal/clock"
)

// ListenerConfig configures a Listener. Zero values take the defaults.
type ListenerConfig struct {
	// Name names the listener in logs ("broker", "vip", "ha", "namesrv",
	// "controller").
	Name string
	// Mode is tls.server.mode; TLS is required unless it is Disabled.
	Mode Mode
	TLS  *tls.Config
	// HandshakeTimeout bounds the wait for the first byte and the TLS
	// handshake (default 10 s).
	HandshakeTimeout time.Duration
	// MaxConns bounds the open connections of the listener, MaxConnsPerIP
	// those from one source address (0: no bound).
	MaxConns      int
	MaxConnsPerIP int
	// AuthDeadline closes a connection not marked authenticated within
	// this time of its accept (0: never).
	AuthDeadline time.Duration
	// Clock measures AuthDeadline (default: the real clock).
	Clock clock.Clock
	// Logger receives refusals, at most a few a second (default: discard).
	Logger *slog.Logger
}

// ListenerStats are a listener's figures.
type ListenerStats struct {
	Open     int    // connections open now
	Accepted uint64 // connections handed on
	TLS      uint64 // connections that completed a TLS handshake
	Plain    uint64 // plain connections let in (disabled or permissive)
	// Refused counts closed connections by reason (OverTotal, OverPerIP,
	// PlainRefused, HandshakeFail, AuthDeadline).
	Refused map[Refusal]uint64
}

// Listener wraps a net.Listener with the server mode, the connection
// limits and the authentication deadline. Its Accept returns *Conn values
// (or, when nothing is configured, the inner connection as is).
type Listener struct {
	inner net.Listener
	cfg   ListenerConfig
	clk   clock.Clock
	logs  *rate.Limiter

	mu    sync.Mutex
	open  int
	perIP map[string]int
	conns map[string]*Conn // by remote address

	accepted, tlsConns, plainConns atomic.Uint64
	refused                        [numRefusals]atomic.Uint64
}

// NewListener wraps inner. It fails when the mode needs a TLS
// configuration and none is given.
func NewListener(inner net.Listener, cfg ListenerConfig) (*Listener, error) {
	if cfg.Mode != Disabled && cfg.TLS == nil {
		return nil, fmt.Errorf("tlsconf: listener %s: mode %s needs a TLS configuration", cfg.Name, cfg.Mode)
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Listener{inner: inner, cfg: cfg, clk: clock.Or(cfg.Clock),
		logs:  rate.NewLimiter(rate.Limit(5), 20),
		perIP: make(map[string]int), conns: make(map[string]*Conn)}, nil
}

// passThrough reports whether connections need no wrapper at all.
func (l *Listener) passThrough() bool {
	return l.cfg.Mode == Disabled && l.cfg.MaxConns <= 0 && l.cfg.MaxConnsPerIP <= 0 && l.cfg.AuthDeadline <= 0
}

// Accept returns the next admitted connection. A connection over a limit
// is closed, counted and logged, and Accept waits for the next one; it
// never reads from a connection.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.inner.Accept()
		if err != nil {
			return nil, err
		}
		if l.passThrough() {
			l.accepted.Add(1)
			l.plainConns.Add(1)
			return nc, nil
		}
		key := sourceKey(nc.RemoteAddr())
		l.mu.Lock()
		r := admit(l.cfg.MaxConns, l.cfg.MaxConnsPerIP, l.open, l.perIP[key])
		if r != Admitted {
			l.mu.Unlock()
			l.refuse(r, nc.RemoteAddr(), nil)
			nc.Close()
			continue
		}
		l.open++
		l.perIP[key]++
		c := newConn(l, nc, key)
		l.conns[nc.RemoteAddr().String()] = c
		l.mu.Unlock()
		l.accepted.Add(1)
		if l.cfg.Mode == Disabled {
			l.plainConns.Add(1)
		}
		if l.cfg.AuthDeadline > 0 {
			// After is taken here, so a test's manual clock has the wait
			// registered once Accept returned.
			go c.authWatch(l.clk.After(l.cfg.AuthDeadline))
		}
		return c, nil
	}
}

// refuse counts and logs a closed connection.
func (l *Listener) refuse(r Refusal, remote net.Addr, err error) {
	l.refused[r].Add(1)
	if !l.logs.Allow() {
		return
	}
	args := []any{"listener", l.cfg.Name, "remote", addrString(remote), "reason", r.String()}
	switch r {
	case OverTotal:
		args = append(args, "limit", l.cfg.MaxConns)
	case OverPerIP:
		args = append(args, "limit", l.cfg.MaxConnsPerIP)
	case AuthDeadline:
		args = append(args, "deadline", l.cfg.AuthDeadline)
	}
	if err != nil {
		args = append(args, "err", err)
	}
	if r == HandshakeFail && errors.Is(err, io.EOF) {
		// Closed before its first byte: a port probe, not worth a warning.
		l.cfg.Logger.Debug("remoting: connection closed", args...)
		return
	}
	l.cfg.Logger.Warn("remoting: connection closed", args...)
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// release forgets a closed connection.
func (l *Listener) release(c *Conn) {
	l.mu.Lock()
	l.open--
	if n := l.perIP[c.ipKey] - 1; n > 0 {
		l.perIP[c.ipKey] = n
	} else {
		delete(l.perIP, c.ipKey)
	}
	if k := c.raw.RemoteAddr().String(); l.conns[k] == c {
		delete(l.conns, k)
	}
	l.mu.Unlock()
}

// Lookup returns the open connection from remote (the transport's
// Conn.RemoteAddr), or nil.
func (l *Listener) Lookup(remote net.Addr) *Conn {
	if remote == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns[remote.String()]
}

// MarkAuthenticated tells the listener that the connection from remote
// passed authentication, so AuthDeadline no longer applies to it. It
// reports whether such a connection is open.
func (l *Listener) MarkAuthenticated(remote net.Addr) bool {
	c := l.Lookup(remote)
	if c == nil {
		return false
	}
	c.MarkAuthenticated()
	return true
}

// Close closes the inner listener; open connections stay open.
func (l *Listener) Close() error { return l.inner.Close() }

// Addr is the inner listener's address.
func (l *Listener) Addr() net.Addr { return l.inner.Addr() }

// Stats returns the listener's figures.
func (l *Listener) Stats() ListenerStats {
	l.mu.Lock()
	open := l.open
	l.mu.Unlock()
	st := ListenerStats{Open: open, Accepted: l.accepted.Load(), TLS: l.tlsConns.Load(),
		Plain: l.plainConns.Load(), Refused: make(map[Refusal]uint64)}
	for r := OverTotal; r < numRefusals; r++ {
		if n := l.refused[r].Load(); n > 0 {
			st.Refused[r] = n
		}
	}
	return st
}

// ErrPlainRefused is the first Read's error on an enforcing port when the
// client did not start a TLS handshake.
var ErrPlainRefused = errors.New("tlsconf: plain connection on a TLS-only port")

// ListenerConfig returns the mode and, unless it is Disabled, the server
// TLS configuration of c, for every listener of the process to share
// (each sets its Name and limits on its copy).
func (c Config) ListenerConfig(logger *slog.Logger) (ListenerConfig, error) {
	lc := ListenerConfig{Mode: c.Mode, Logger: logger}
	if c.Mode == Disabled {
		return lc, nil
	}
	cfg, err := c.ServerTLS(logger)
	if err != nil {
		return ListenerConfig{}, err
	}
	lc.TLS = cfg
	return lc, nil
}

// Listen opens a TCP listener on addr (keep-alive 30 s, as the
// transport's Listen) and wraps it with lc.
func Listen(addr string, lc ListenerConfig) (*Listener, error) {
	nl := net.ListenConfig{KeepAlive: 30 * time.Second}
	inner, err := nl.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: listen %s: %w", addr, err)
	}
	l, err := NewListener(inner, lc)
	if err != nil {
		inner.Close()
		return nil, err
	}
	return l, nil
}
