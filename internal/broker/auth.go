package broker

import (
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spoolmq/spool/internal/authserve"
)

// AuthConfig is the broker's part of RocketMQ 5.3's authentication and
// authorization keys and of ACL 1.0's (read from the broker's properties
// file; none may be changed at run time).
type AuthConfig struct {
	AuthenticationEnabled   bool   `prop:"authenticationEnabled"`
	AuthorizationEnabled    bool   `prop:"authorizationEnabled"`
	AuthenticationWhitelist string `prop:"authenticationWhitelist"`
	AuthorizationWhitelist  string `prop:"authorizationWhitelist"`
	// InitAuthenticationUser is {"username":...,"password":...}, a super
	// user created at start when missing.
	InitAuthenticationUser string `prop:"initAuthenticationUser"`
	// InnerClientAuthenticationCredentials is {"accessKey":...,
	// "secretKey":...}: the broker signs its requests to name servers with
	// it, and it is the only user allowed broker-to-broker codes.
	InnerClientAuthenticationCredentials string `prop:"innerClientAuthenticationCredentials"`
	// AclEnable turns ACL 1.0 on, with {rocketmqHome}/conf/plain_acl.yml
	// (reloaded when it changes).
	AclEnable bool `prop:"aclEnable"`
	// RocketmqHome is where conf/plain_acl.yml lives (empty: the
	// ROCKETMQ_HOME environment variable).
	RocketmqHome string `prop:"rocketmqHome"`
	// MigrateAuthFromV1Enabled copies plain_acl.yml's accounts into the
	// user and ACL store at start.
	MigrateAuthFromV1Enabled bool `prop:"migrateAuthFromV1Enabled"`
	// AuthAllowPlaintext (a Spool key) lets access control run without
	// TLS on a non-loopback address, accepting that a captured request
	// can be replayed (signatures carry no timestamp).
	AuthAllowPlaintext bool `prop:"authAllowPlaintext"`

	// Connection limits of the broker's ports (Spool keys, named after
	// RocketMQ's NettyServerConfig): open connections in total and per
	// source IP (0: no bound; a connection over one is answered
	// SYSTEM_BUSY on its first request and closed), and the time a
	// connection may stay open without a request that passed
	// authentication (0: no deadline; only with authenticationEnabled or
	// aclEnable).
	ServerMaxConnections              int   `prop:"serverMaxConnections"`
	ServerMaxConnectionsPerIp         int   `prop:"serverMaxConnectionsPerIp"`
	ServerAuthenticationTimeoutMillis int64 `prop:"serverAuthenticationTimeoutMillis"`
}

// authTimeout is the transport's AuthTimeout: the deadline when requests
// are authenticated, else none.
func (b *Broker) authTimeout(cfg *Config) time.Duration {
	if cfg.ServerAuthenticationTimeoutMillis <= 0 || !b.authsrv.Authenticates() {
		return 0
	}
	return time.Duration(cfg.ServerAuthenticationTimeoutMillis) * time.Millisecond
}

// secretKeys are the keys whose values never leave the broker
// (GET_BROKER_CONFIG answers them redacted).
var secretKeys = []string{"initAuthenticationUser", "innerClientAuthenticationCredentials", "tls.server.keyPassword", "tls.client.keyPassword"}

// redactSecrets replaces the value of every secret key present in kv.
func redactSecrets(kv map[string]string) {
	for _, k := range secretKeys {
		if v, ok := kv[k]; ok && v != "" {
			kv[k] = "******"
		}
	}
}

// authStoreDir is where users.json and acls.json live.
func authStoreDir(storeRoot string) string {
	return filepath.Join(storeRoot, "config", "auth")
}

// openAuth opens the broker's access control from its configuration.
func openAuth(cfg *Config, storeRoot string, logger *slog.Logger) (*authserve.Service, error) {
	home := cfg.RocketmqHome
	if home == "" {
		home = os.Getenv("ROCKETMQ_HOME")
	}
	return authserve.Open(authserve.Config{
		AuthenticationEnabled:   cfg.AuthenticationEnabled,
		AuthorizationEnabled:    cfg.AuthorizationEnabled,
		AuthenticationWhitelist: cfg.AuthenticationWhitelist,
		AuthorizationWhitelist:  cfg.AuthorizationWhitelist,
		InitAuthenticationUser:  cfg.InitAuthenticationUser,
		InnerCredentials:        cfg.InnerClientAuthenticationCredentials,
		AclEnable:               cfg.AclEnable,
		PlainACLPath:            authserve.PlainACLPath(home),
		MigrateFromV1:           cfg.MigrateAuthFromV1Enabled,
		ClusterName:             cfg.BrokerClusterName,
		StoreDir:                authStoreDir(storeRoot),
		Logger:                  logger,
	})
}

// AccessControl is the broker's access control, for a name server in the
// same process (standalone) to check its port's requests with the same
// users, policies and plain_acl.yml.
func (b *Broker) AccessControl() *authserve.Service { return b.authsrv }
