package main

import (
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	"github.com/spoolmq/spool/internal/authserve"
	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/tlsconf"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// namesrvAuth is the name server's and the controller's part of RocketMQ
// 5.3's access-control keys, read from their properties file beside
// their own configuration (which GET_NAMESRV_CONFIG and
// GET_CONTROLLER_CONFIG answer: these are not in it, so the secrets stay
// in the process).
type namesrvAuth struct {
	AuthenticationEnabled   bool   `prop:"authenticationEnabled"`
	AuthorizationEnabled    bool   `prop:"authorizationEnabled"`
	AuthenticationWhitelist string `prop:"authenticationWhitelist"`
	AuthorizationWhitelist  string `prop:"authorizationWhitelist"`
	// InitAuthenticationUser is {"username":...,"password":...}, a super
	// user created at start when missing.
	InitAuthenticationUser string `prop:"initAuthenticationUser"`
	// InnerClientAuthenticationCredentials is what brokers sign their
	// registrations with; only that user may register, unregister or
	// heartbeat a broker.
	InnerClientAuthenticationCredentials string `prop:"innerClientAuthenticationCredentials"`
	// AuthConfigPath is the directory of users.json and acls.json
	// (default: auth beside kvConfigPath).
	AuthConfigPath string `prop:"authConfigPath"`
	// AuthAllowPlaintext, as on the broker, accepts access control
	// without TLS on a non-loopback address.
	AuthAllowPlaintext bool `prop:"authAllowPlaintext"`
}

func (a namesrvAuth) on() bool { return a.AuthenticationEnabled || a.AuthorizationEnabled }

// plaintextRefusal is the error of access control over plain TCP on a
// non-loopback address (nil when TLS is on, the address is loopback or
// the operator accepts it).
func plaintextRefusal(listen string, tc *tlsconf.Config, allow bool) error {
	if allow || (tc != nil && tc.Mode != tlsconf.Disabled) {
		return nil
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = listen
	}
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
		return nil
	}
	return fmt.Errorf("name server: access control is on and TLS is off on %q: signatures carry no timestamp, so a captured request can be replayed; "+
		"set tls.server.mode=enforcing (or permissive), listen on a loopback address, or set authAllowPlaintext=true to accept it", listen)
}

// namesrvAccess opens a name server's access control from its keys and
// returns the options that put it on its port: the Authorize hook, the
// user and ACL management codes, and lim's connection limits. With
// authentication and authorization off only the limits are returned.
func namesrvAccess(a namesrvAuth, nc namesrv.Config, listen string, tc *tlsconf.Config, lim transport.ServerConfig, logger *slog.Logger) ([]namesrv.Option, error) {
	if !a.on() {
		return []namesrv.Option{namesrv.WithServerConfig(lim)}, nil
	}
	if err := plaintextRefusal(listen, tc, a.AuthAllowPlaintext); err != nil {
		return nil, err
	}
	if a.AuthConfigPath == "" && nc.KVConfigPath == "" {
		return nil, fmt.Errorf("name server: access control needs authConfigPath (or kvConfigPath) for its users")
	}
	svc, err := a.open(filepath.Join(filepath.Dir(nc.KVConfigPath), "auth"), logger)
	if err != nil {
		return nil, fmt.Errorf("name server: %w", err)
	}
	lim.Authorize = svc.Hook()
	return []namesrv.Option{namesrv.WithServerConfig(lim), namesrv.WithHandlers(svc.Handlers())}, nil
}

// open opens the access control the keys ask for, with its users and
// ACLs in authConfigPath or else defaultDir.
func (a namesrvAuth) open(defaultDir string, logger *slog.Logger) (*authserve.Service, error) {
	dir := a.AuthConfigPath
	if dir == "" {
		dir = defaultDir
	}
	return authserve.Open(authserve.Config{
		AuthenticationEnabled:   a.AuthenticationEnabled,
		AuthorizationEnabled:    a.AuthorizationEnabled,
		AuthenticationWhitelist: a.AuthenticationWhitelist,
		AuthorizationWhitelist:  a.AuthorizationWhitelist,
		InitAuthenticationUser:  a.InitAuthenticationUser,
		InnerCredentials:        a.InnerClientAuthenticationCredentials,
		StoreDir:                dir,
		Logger:                  logger,
	})
}

// lateAccess is the name-server side of a standalone process: the
// broker's access control, known only once the broker is built, after
// the name server (the broker registers with it in process). Its hook and
// handlers read the service set by bind, which happens before the
// name-server port opens.
//
// Route queries (GET_ROUTEINFO_BY_TOPIC) pass unchecked, as on a
// RocketMQ name server beside a broker with access control: a client
// learns where a topic lives, and its sends and pulls are checked by the
// broker, which answers a refusal with NO_PERMISSION. Everything else on
// the port (registration, KV config, topic deletion, write permission,
// cluster listings, user and ACL management) is checked with the
// broker's keys, so no fake broker registers.
type lateAccess struct{ svc *authserve.Service }

func (l *lateAccess) bind(svc *authserve.Service) { l.svc = svc }

func (l *lateAccess) authorize(c *transport.Conn, req *remoting.Command) *remoting.Command {
	if l.svc == nil || !l.svc.Active() || req.Code == remoting.GetRouteinfoByTopic {
		return nil
	}
	return l.svc.Authorize(c, req)
}

// options puts the hook and the management codes on the name server's
// port (on is whether the broker's configuration turns access control
// on; off, only lim's limits apply).
func (l *lateAccess) options(on bool, lim transport.ServerConfig) []namesrv.Option {
	// Route queries are never authenticated here, so the authentication
	// deadline would close every client's name-server connection.
	lim.AuthTimeout = 0
	if !on {
		return []namesrv.Option{namesrv.WithServerConfig(lim)}
	}
	lim.Authorize = l.authorize
	hs := map[int32]transport.Handler{}
	for code := range (&authserve.Service{}).Handlers() {
		hs[code] = func(c *transport.Conn, req *remoting.Command) *remoting.Command {
			return l.svc.Handlers()[code](c, req)
		}
	}
	return []namesrv.Option{namesrv.WithServerConfig(lim), namesrv.WithHandlers(hs)}
}

// limitKeys are the connection limits of a name server's port, the
// broker's keys of the same names (serverMaxConnections,
// serverMaxConnectionsPerIp, serverAuthenticationTimeoutMillis).
type limitKeys struct {
	ServerMaxConnections              int   `prop:"serverMaxConnections"`
	ServerMaxConnectionsPerIp         int   `prop:"serverMaxConnectionsPerIp"`
	ServerAuthenticationTimeoutMillis int64 `prop:"serverAuthenticationTimeoutMillis"`
}

// serverConfig is the transport configuration of the limits; the
// authentication deadline applies only when authenticates.
func (k limitKeys) serverConfig(authenticates bool) transport.ServerConfig {
	sc := transport.ServerConfig{MaxConns: k.ServerMaxConnections, MaxConnsPerIP: k.ServerMaxConnectionsPerIp}
	if authenticates && k.ServerAuthenticationTimeoutMillis > 0 {
		sc.AuthTimeout = time.Duration(k.ServerAuthenticationTimeoutMillis) * time.Millisecond
	}
	return sc
}
