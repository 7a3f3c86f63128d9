package tlsconf

import (
	"context"
	"crypto/tls"
	"net"
	"time"
)

// Dialer opens the client side of Spool's own connections (broker to
// name server, HA, controller): TLS with its configuration when TLS is
// set (see Config.ClientTLS), plain otherwise. Its DialContext has the
// shape transport.ClientConfig.Dial and net.Dialer use.
type Dialer struct {
	// TLS is the client configuration; nil dials plain.
	TLS *tls.Config
	// Timeout bounds the connection and the handshake (default 3 s).
	Timeout time.Duration
	// KeepAlive is the TCP keep-alive period (default 30 s).
	KeepAlive time.Duration
}

// NewDialer returns the dialer c asks for: TLS when tls.enable is on.
func (c Config) NewDialer() (*Dialer, error) {
	if !c.ClientEnable {
		return &Dialer{}, nil
	}
	cfg, err := c.ClientTLS(nil)
	if err != nil {
		return nil, err
	}
	return &Dialer{TLS: cfg}, nil
}

// DialContext connects to addr ("host:port") over network ("tcp") and,
// with TLS, completes the handshake before returning.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	timeout, ka := d.Timeout, d.KeepAlive
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	if ka == 0 {
		ka = 30 * time.Second
	}
	nd := &net.Dialer{Timeout: timeout, KeepAlive: ka}
	if d.TLS == nil {
		return nd.DialContext(ctx, network, addr)
	}
	td := &tls.Dialer{NetDialer: nd, Config: d.TLS}
	return td.DialContext(ctx, network, addr)
}
