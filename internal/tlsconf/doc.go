// Package tlsconf owns TLS and the listener-side limits of every Spool
// port: it reads RocketMQ's TLS keys (tls.server.mode, tls.server.*,
// tls.client.*, tls.config.file, tls.test.mode.enable, tls.enable) with
// RocketMQ's defaults, builds crypto/tls server and client configurations
// whose certificates, keys and trusted CAs are read again from disk when
// the files change, wraps a net.Listener for the three server modes and
// the connection limits, and dials the client side (broker to name server,
// HA, controller).
//
// # Modes
//
//	disabled    plain only; the connection is handed on untouched
//	permissive  TLS and plain on one port: the first byte tells them apart
//	            (0x16 opens a TLS handshake record, anything else is plain)
//	enforcing   TLS only: a plain client is closed after its first byte
//
// Accept never reads from a connection. The first byte is read, and the
// TLS handshake run, by the first Read or Write on the connection (the
// transport's reader goroutine), bounded by HandshakeTimeout, so a slow or
// silent client delays only itself.
//
// # Limits
//
// A Listener refuses, by closing at once, a connection over MaxConns or
// over MaxConnsPerIP from its source address (a remoting answer is not
// possible before a request); refusals are counted per reason and logged
// at a bounded rate. With AuthDeadline set, a connection not marked
// authenticated (Listener.MarkAuthenticated or Conn.MarkAuthenticated,
// called by the authentication layer) within that time is closed.
//
// # Private keys
//
// Keys are PEM: PKCS#8, PKCS#1 (RSA) or SEC 1 (EC). A key encrypted with
// the legacy PEM encryption ("Proc-Type: 4,ENCRYPTED", as `openssl rsa
// -aes256 -traditional` and `openssl ec -aes256` write) is decrypted with
// keyPassword by the standard library. An encrypted PKCS#8 key ("BEGIN
// ENCRYPTED PRIVATE KEY", what `openssl pkcs8 -topk8` and OpenSSL 3's
// `openssl rsa -aes256` write, and what RocketMQ's own TLS guide makes)
// is refused with an error naming the conversion: the standard library
// cannot decrypt it.
//
// It imports internal/config (the .properties reader) and internal/clock
// (the authentication deadline) only; it must not import the transport,
// the broker or anything above them.
package tlsconf
