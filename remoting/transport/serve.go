package transport

import (
	"net"
)

// Serve serves connections accepted from ln in the background, like
// Listen does for the listener it opens. ln may wrap a TCP listener (TLS,
// connection limits); the server closes it on Shutdown or Close. It may
// be called several times.
func (s *Server) Serve(ln net.Listener) (net.Addr, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil, ErrServerClosed
	}
	s.listeners = append(s.listeners, ln)
	s.wg.Add(1)
	s.mu.Unlock()
	go s.acceptLoop(ln)
	return ln.Addr(), nil
}
