package broker

import (
	"context"
	"fmt"
	"net"

	"github.com/spoolmq/spool/internal/tlsconf"
)

// brokerTLS is the broker's TLS: the listener configuration its ports
// share and the dialer of its connections to name servers.
type brokerTLS struct {
	lc   tlsconf.ListenerConfig
	dial *tlsconf.Dialer
}

// setupTLS prepares Options.TLS (nil: every port plain, as without TLS
// keys) and refuses access control over plain TCP on a non-loopback
// address unless authAllowPlaintext says the operator accepts it.
func (b *Broker) setupTLS(tc *tlsconf.Config, cfg *Config) error {
	if tc != nil {
		lc, err := tc.ListenerConfig(b.logger)
		if err != nil {
			return fmt.Errorf("%w: TLS: %w", ErrConfig, err)
		}
		d, err := tc.NewDialer()
		if err != nil {
			return fmt.Errorf("%w: TLS client: %w", ErrConfig, err)
		}
		b.tls = &brokerTLS{lc: lc, dial: d}
	}
	access := cfg.AuthenticationEnabled || cfg.AuthorizationEnabled || cfg.AclEnable
	plain := tc == nil || tc.Mode == tlsconf.Disabled
	if access && plain && !loopback(cfg.BindAddress) && !cfg.AuthAllowPlaintext {
		return fmt.Errorf("%w: access control is on and TLS is off on bindAddress %q: signatures carry no timestamp, so a captured request can be replayed; "+
			"set tls.server.mode=enforcing (or permissive), bind a loopback address, or set authAllowPlaintext=true to accept it", ErrConfig, cfg.BindAddress)
	}
	return nil
}

func loopback(bind string) bool {
	ip := net.ParseIP(bind)
	return ip != nil && ip.IsLoopback() || bind == "localhost"
}

// listen opens one of the broker's ports: through tlsconf's listener when
// TLS is configured, else plain through the transport.
func (b *Broker) listen(name, addr string) (net.Addr, error) {
	if b.tls == nil {
		return b.server.Listen(addr)
	}
	lc := b.tls.lc
	lc.Name = name
	ln, err := tlsconf.Listen(addr, lc)
	if err != nil {
		return nil, err
	}
	return b.server.Serve(ln)
}

// dialer is the dial function of the broker's own connections (nil:
// plain TCP).
func (b *Broker) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if b.tls == nil {
		return nil
	}
	return b.tls.dial.DialContext
}

// wrapListener puts a listener the broker opened itself (the HA port)
// under the TLS mode of its other ports (ln as is without TLS keys).
func (b *Broker) wrapListener(name string, ln net.Listener) (net.Listener, error) {
	if b.tls == nil {
		return ln, nil
	}
	lc := b.tls.lc
	lc.Name = name
	return tlsconf.NewListener(ln, lc)
}

// haDialer is the HA slave's dial function: the tls.client.* side when
// tls.enable is on (nil: the HA client dials plain TCP).
func (b *Broker) haDialer() func(ctx context.Context, addr string) (net.Conn, error) {
	if b.tls == nil || b.tls.dial.TLS == nil {
		return nil
	}
	d := b.tls.dial
	return func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
}
