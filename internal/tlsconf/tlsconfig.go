package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"sync"
)

// ServerTLS builds the server side of c: in test mode a self-signed
// certificate, asking for a client certificate without verifying it (as
// RocketMQ's test mode does); otherwise tls.server.certPath and keyPath,
// read again when they change, so the next handshake serves a replaced
// certificate, and the client-certificate policy of
// tls.server.need.client.auth and tls.server.authClient:
//
//	need.client.auth  authClient=false        authClient=true
//	none              no certificate asked    no certificate asked
//	optional          asked, not verified     verified when given
//	require           required, not verified  required and verified
//
// A verified client certificate is checked against
// tls.server.trustCertPath (read again when it changes), or the system
// roots when that is empty. logger (nil: discard) receives reloads.
func (c Config) ServerTLS(logger *slog.Logger) (*tls.Config, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// Full-size records from the first byte: dynamic sizing would split
	// a connection's first 128 KiB of frames into ~1 KiB records, each its
	// own write.
	base := &tls.Config{MinVersion: tls.VersionTLS12, DynamicRecordSizingDisabled: true}
	if c.TestMode {
		cert, err := selfSigned()
		if err != nil {
			return nil, err
		}
		base.Certificates = []tls.Certificate{*cert}
		base.ClientAuth = tls.RequestClientCert
		return base, nil
	}
	kp, err := newKeyPair(c.ServerCertPath, c.ServerKeyPath, c.ServerKeyPassword, logger)
	if err != nil {
		return nil, err
	}
	base.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return kp.get() }
	base.ClientAuth = clientAuthType(c.ServerNeedClientAuth, c.ServerAuthClient)
	if c.ServerAuthClient && c.ServerTrustCertPath != "" && c.ServerNeedClientAuth != ClientAuthNone {
		pool, err := newCAPool(c.ServerTrustCertPath, logger)
		if err != nil {
			return nil, err
		}
		// The trusted CAs may change too: each handshake gets a
		// configuration with the current pool.
		var cached struct {
			pool *x509.CertPool
			cfg  *tls.Config
		}
		var mu sync.Mutex
		server := base.Clone()
		server.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
			p, err := pool.get()
			if err != nil {
				return nil, err
			}
			mu.Lock()
			defer mu.Unlock()
			if cached.pool != p {
				cfg := base.Clone()
				cfg.ClientCAs = p
				cached.pool, cached.cfg = p, cfg
			}
			return cached.cfg, nil
		}
		return server, nil
	}
	return base, nil
}

// clientAuthType is the crypto/tls policy of need.client.auth and
// authClient (see ServerTLS).
func clientAuthType(need ClientAuth, verify bool) tls.ClientAuthType {
	switch need {
	case ClientAuthOptional:
		if verify {
			return tls.VerifyClientCertIfGiven
		}
		return tls.RequestClientCert
	case ClientAuthRequire:
		if verify {
			return tls.RequireAndVerifyClientCert
		}
		return tls.RequireAnyClientCert
	}
	return tls.NoClientCert
}

// ClientTLS builds the client side of c: in test mode, or with
// tls.client.authServer false (RocketMQ's default), the server's
// certificate is not verified; with authServer true it is verified
// against tls.client.trustCertPath (read again when it changes) or the
// system roots, and against the dialed host name. tls.client.certPath and
// keyPath, when both are set, give the certificate presented to a server
// that asks (read again when they change); in test mode none is sent.
func (c Config) ClientTLS(logger *slog.Logger) (*tls.Config, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, DynamicRecordSizingDisabled: true}
	if c.TestMode {
		cfg.InsecureSkipVerify = true
		return cfg, nil
	}
	if c.ClientCertPath != "" || c.ClientKeyPath != "" {
		kp, err := newKeyPair(c.ClientCertPath, c.ClientKeyPath, c.ClientKeyPassword, logger)
		if err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return kp.get() }
	}
	if !c.ClientAuthServer {
		cfg.InsecureSkipVerify = true
		return cfg, nil
	}
	if c.ClientTrustCertPath == "" {
		return cfg, nil // the system roots
	}
	pool, err := newCAPool(c.ClientTrustCertPath, logger)
	if err != nil {
		return nil, err
	}
	// Verification is done here rather than by crypto/tls so that the
	// pool in use is the current one; it is the standard verification
	// (chain to a trusted root, the server name) with a fresh pool.
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		roots, err := pool.get()
		if err != nil {
			return err
		}
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tlsconf: the server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, DNSName: cs.ServerName, Intermediates: x509.NewCertPool()}
		for _, ic := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(ic)
		}
		_, err = cs.PeerCertificates[0].Verify(opts)
		return err
	}
	return cfg, nil
}
