package main

import (
	"crypto/tls"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolmq/spool/internal/tlsconf"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// benchTLS is bench's --tls: every connection speaks TLS (the server's
// certificate is not verified, as RocketMQ's tls.client.authServer=false).
var benchTLS bool

// addBenchSecurityFlags adds the signing and TLS flags to spool bench:
// --accessKey/--secretKey sign every request (as the official clients
// do with credentials), --tls dials TLS.
func addBenchSecurityFlags(bench *cobra.Command) {
	bench.PersistentFlags().StringVar(&adminCreds.AccessKey, "accessKey", "", "sign every request as this user")
	bench.PersistentFlags().StringVar(&adminCreds.SecretKey, "secretKey", "", "the user's password")
	bench.PersistentFlags().BoolVar(&benchTLS, "tls", false, "connect with TLS (server certificate not verified)")
}

// benchClient is a bench connection's client: signing with the
// credentials given, dialing TLS with --tls.
func benchClient(ser remoting.SerializeType) *transport.Client {
	// bench reads answers through Ext only: no ext map per answer.
	cfg := transport.ClientConfig{DialTimeout: 5 * time.Second, Serialize: ser, InlineResponses: true}
	if adminCreds.AccessKey != "" {
		cfg.Prepare = signAdmin
	}
	if benchTLS {
		d := &tlsconf.Dialer{TLS: &tls.Config{InsecureSkipVerify: true}, Timeout: 5 * time.Second}
		cfg.Dial = d.DialContext
	}
	return transport.NewClient(cfg)
}
