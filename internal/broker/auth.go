package broker

import (
	"log/slog"
	"os"
	"path/filepath"

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
