package transport

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/spoolmq/spool/remoting"
)

// Connection limits (ServerConfig.MaxConns, MaxConnsPerIP, AuthTimeout).
//
// A connection over a limit is not dropped at accept, where nothing can
// be answered: it is served in refusal mode. Its first request is
// answered SYSTEM_BUSY with a remark naming the limit, and the
// connection is closed once the answer is written (or after
// refusalGrace when no request comes; while maxRefusing such connections
// wait, further ones are closed at once). A connection that has not been
// marked authenticated (Conn.MarkAuthenticated, called by the Authorize
// hook when a signature was verified) within AuthTimeout of its accept is
// closed. Every refusal is counted (ServerStats) and logged at a bounded
// rate.

// refusalGrace is how long a connection over a limit may stay open
// waiting for the request its refusal answers.
const refusalGrace = 3 * time.Second

// maxRefusing bounds the connections waiting for their refusal; past it
// a connection over a limit is closed without an answer (and counted).
const maxRefusing = 256

var (
	errOverLimit   = errors.New("connection over the server's connection limit")
	errAuthTimeout = errors.New("not authenticated within the authentication timeout")
)

// sourceIP is the per-IP limit's key: the remote IP (IPv4-mapped IPv6
// folded to IPv4), or the whole address when it is not an IP.
func sourceIP(a net.Addr) string {
	if a == nil {
		return ""
	}
	if ta, ok := a.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ta.IP); ok {
			return ip.Unmap().String()
		}
	}
	s := a.String()
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().String()
	}
	return s
}

// admitLocked decides, under s.mu, whether a connection from key may be
// served normally; it returns the refusal remark otherwise and counts it.
func (s *Server) admitLocked(key string) string {
	if m := s.cfg.MaxConns; m > 0 && len(s.conns)-s.refusing >= m {
		s.refusedTotal.Add(1)
		return fmt.Sprintf("[REJECTREQUEST]too many connections, limit: %d (serverMaxConnections)", m)
	}
	if m := s.cfg.MaxConnsPerIP; m > 0 && s.perIP[key] >= m {
		s.refusedPerIP.Add(1)
		return fmt.Sprintf("[REJECTREQUEST]too many connections from %s, limit: %d (serverMaxConnectionsPerIp)", key, m)
	}
	return ""
}

// limited reports whether the server counts connections at all.
func (s *Server) limited() bool { return s.cfg.MaxConns > 0 || s.cfg.MaxConnsPerIP > 0 }

// refuseConn answers req on a connection over a limit and closes it.
func (s *Server) refuseConn(c *Conn, req *remoting.Command) {
	if !req.IsOneway() {
		c.pipelined = false // write now, on the reader, before the close
		c.replyFrom(req, remoting.NewResponse(req, remoting.SystemBusy, c.refusal), false, true)
		if c.lp != nil {
			c.loopFlushIfIdle() // the loop would write it after the pass
		}
	}
	c.closeWith(errOverLimit)
}

// logRefusal logs a refused or timed-out connection, at a bounded rate.
func (s *Server) logRefusal(c *Conn, what string) {
	if s.refusalLogs.Allow() {
		s.logger.Warn("remoting: connection refused", "conn", c.ID(), "remote", c.RemoteAddr().String(), "reason", what)
	}
}

// watchAuth closes c when it is not authenticated within AuthTimeout.
func (s *Server) watchAuth(c *Conn) {
	c.authTimer = time.AfterFunc(s.cfg.AuthTimeout, func() {
		if c.Authenticated() || c.isClosed() {
			return
		}
		s.authTimeouts.Add(1)
		s.logRefusal(c, fmt.Sprintf("not authenticated within %v (serverAuthenticationTimeoutMillis)", s.cfg.AuthTimeout))
		c.closeWith(errAuthTimeout)
	})
}

// MarkAuthenticated records that a request of this connection passed
// authentication, so the server's AuthTimeout no longer applies to it.
func (c *Conn) MarkAuthenticated() {
	if c.authenticated.CompareAndSwap(false, true) {
		if t := c.authTimer; t != nil {
			t.Stop()
		}
	}
}

// Authenticated reports whether MarkAuthenticated was called.
func (c *Conn) Authenticated() bool { return c.authenticated.Load() }

// SourceIP is the remote address without its port (an IPv4-mapped IPv6
// address as IPv4), worked out once per connection for the checks that
// read it on every request.
func (c *Conn) SourceIP() string {
	if p := c.srcIP.Load(); p != nil {
		return *p
	}
	s := sourceIP(c.RemoteAddr())
	c.srcIP.Store(&s)
	return s
}
