package transport

import (
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
)

// waitStats polls the server's figures until ok holds (no wall-clock
// assertion: the bound only keeps a broken test from hanging).
func waitStats(t *testing.T, s *Server, what string, ok func(ServerStats) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if ok(s.Stats()) {
			return
		}
	}
	t.Fatalf("%s: stats %+v", what, s.Stats())
}

// A connection over MaxConns is answered SYSTEM_BUSY naming the limit on
// its first request and closed; once a connection closes, a new one is
// served.
func TestMaxConnsRefusesWithAnswer(t *testing.T) {
	s, addr := startServer(t, ServerConfig{MaxConns: 1}, func(s *Server) { s.Register(codeEcho, echo, nil) })
	a := dialRaw(t, addr)
	a.send(request(codeEcho, 1, remoting.SerializeJSON))
	if r := a.read(); r.Code != remoting.Success {
		t.Fatalf("first connection: code %d %q", r.Code, r.Remark)
	}
	b := dialRaw(t, addr)
	b.send(request(codeEcho, 2, remoting.SerializeJSON))
	r := b.read()
	if r.Code != remoting.SystemBusy || r.Opaque != 2 || !strings.Contains(r.Remark, "too many connections, limit: 1") {
		t.Fatalf("second connection: code %d opaque %d %q", r.Code, r.Opaque, r.Remark)
	}
	b.expectClosed()
	if st := s.Stats(); st.RefusedConnsTotal != 1 || st.RefusedConnsPerIP != 0 {
		t.Fatalf("stats %+v", st)
	}
	a.nc.Close()
	waitStats(t, s, "both closed", func(st ServerStats) bool { return st.Conns == 0 })
	c := dialRaw(t, addr)
	c.send(request(codeEcho, 3, remoting.SerializeJSON))
	if r := c.read(); r.Code != remoting.Success {
		t.Fatalf("after the first closed: code %d %q", r.Code, r.Remark)
	}
}

// MaxConnsPerIP counts the connections of one source address.
func TestMaxConnsPerIP(t *testing.T) {
	s, addr := startServer(t, ServerConfig{MaxConnsPerIP: 2}, func(s *Server) { s.Register(codeEcho, echo, nil) })
	for i := range 2 {
		c := dialRaw(t, addr)
		c.send(request(codeEcho, int32(i), remoting.SerializeRocketMQ))
		if r := c.read(); r.Code != remoting.Success {
			t.Fatalf("connection %d: code %d %q", i, r.Code, r.Remark)
		}
	}
	c := dialRaw(t, addr)
	c.send(request(codeEcho, 9, remoting.SerializeRocketMQ))
	if r := c.read(); r.Code != remoting.SystemBusy || !strings.Contains(r.Remark, "too many connections from 127.0.0.1, limit: 2") {
		t.Fatalf("third connection: code %d %q", r.Code, r.Remark)
	}
	c.expectClosed()
	if st := s.Stats(); st.RefusedConnsPerIP != 1 || st.RefusedConnsTotal != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A connection whose requests never pass authentication is closed after
// AuthTimeout; one marked authenticated stays open.
func TestAuthTimeoutClosesUnauthenticated(t *testing.T) {
	s, addr := startServer(t, ServerConfig{AuthTimeout: 100 * time.Millisecond,
		Authorize: func(c *Conn, req *remoting.Command) *remoting.Command {
			if req.Ext("signed") == "yes" {
				c.MarkAuthenticated()
			}
			return nil
		}}, func(s *Server) { s.Register(codeEcho, echo, nil) })
	good := dialRaw(t, addr)
	req := request(codeEcho, 1, remoting.SerializeJSON)
	req.ExtFields = map[string]string{"signed": "yes"}
	good.send(req)
	if r := good.read(); r.Code != remoting.Success {
		t.Fatalf("authenticated: code %d", r.Code)
	}
	bad := dialRaw(t, addr)
	bad.send(request(codeEcho, 2, remoting.SerializeJSON)) // let through, not authenticated
	if r := bad.read(); r.Code != remoting.Success {
		t.Fatalf("unauthenticated: code %d", r.Code)
	}
	bad.expectClosed()
	waitStats(t, s, "one timeout", func(st ServerStats) bool { return st.AuthTimeouts == 1 && st.Conns == 1 })
	good.send(request(codeEcho, 3, remoting.SerializeJSON))
	if r := good.read(); r.Code != remoting.Success {
		t.Fatalf("authenticated after the deadline: code %d", r.Code)
	}
}
