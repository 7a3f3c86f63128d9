package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/tlsconf"
	"github.com/spoolmq/spool/remoting/transport"
)

// takeTLS removes RocketMQ's tls.* keys from props (read from the
// properties file and --set; tlsconf reads them, the broker and name
// server keys do not include them) and returns their configuration, or
// nil when there is none. Unless tls.server.mode is given, every port
// stays plain, as Spool was before TLS; RocketMQ's own default
// (permissive with a self-signed test certificate) applies only when the
// mode is set to permissive.
func takeTLS(props map[string]string) (*tlsconf.Config, error) {
	tp := map[string]string{}
	for k, v := range props {
		if strings.HasPrefix(k, "tls.") {
			tp[k] = v
			delete(props, k)
		}
	}
	if len(tp) == 0 {
		return nil, nil
	}
	c, err := tlsconf.Parse(tp)
	if err != nil {
		return nil, err
	}
	if _, set := tp[tlsconf.KeyServerMode]; !set {
		c.Mode = tlsconf.Disabled
	}
	return &c, nil
}

// serveNamesrv opens the name server's port, through tlsconf's listener
// when TLS is configured.
func serveNamesrv(ns *namesrv.Server, addr string, tc *tlsconf.Config, logger *slog.Logger) (net.Addr, error) {
	if tc == nil {
		return ns.Listen(addr)
	}
	lc, err := tc.ListenerConfig(logger)
	if err != nil {
		return nil, err
	}
	lc.Name = "namesrv"
	ln, err := tlsconf.Listen(addr, lc)
	if err != nil {
		return nil, err
	}
	return ns.Serve(ln)
}

// serveController opens the controller's remoting port, through tlsconf's
// listener when TLS is configured.
func serveController(srv *transport.Server, addr string, tc *tlsconf.Config, logger *slog.Logger) (net.Addr, error) {
	if tc == nil {
		return srv.Listen(addr)
	}
	lc, err := tc.ListenerConfig(logger)
	if err != nil {
		return nil, err
	}
	lc.Name = "controller"
	ln, err := tlsconf.Listen(addr, lc)
	if err != nil {
		return nil, err
	}
	return srv.Serve(ln)
}

// controllerDialer is the dial function of the controller's connections
// to brokers: tls.client.* when tls.enable is on, else nil (plain TCP).
func controllerDialer(tc *tlsconf.Config) (func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	if tc == nil || !tc.ClientEnable {
		return nil, nil
	}
	d, err := tc.NewDialer()
	if err != nil {
		return nil, fmt.Errorf("controller: TLS client: %w", err)
	}
	return d.DialContext, nil
}
