// Package auth owns Spool's RocketMQ 5 authentication and authorization
// core (ACL 2.0): the signature a client computes over a request, the
// model of users and ACLs, the pure decision of whether a user may do an
// action on a resource, the JSON bodies of the management requests
// (AUTH_CREATE_USER ... AUTH_LIST_ACL), the durable store of users and
// ACLs, and the table of what every request code needs.
//
// It must never touch a socket, read the clock or keep a goroutine; the
// broker and the name server feed it requests and apply its verdicts. It
// imports internal/corrupt, internal/vfs and remoting (the request
// codes) only.
//
// # Signature
//
// A client signs a request (RocketMQ's AclClientRPCHook, the Go client's
// primitive.Credentials) by adding the ext fields AccessKey (the user
// name), optionally SecurityToken, and Signature:
//
//	content   = value(k1) || value(k2) || ... || body
//	            k1 < k2 < ... every ext field but Signature, ordered by key
//	Signature = Base64(HMAC-SHA1(password, content))
//
// The server recomputes the signature with the user's password and
// compares in constant time. The signature carries no timestamp and no
// nonce: a captured request can be replayed as long as the user's
// password is unchanged; only TLS keeps requests from being captured.
// The Go client (v2.1.x) leaves SecurityToken out of what it signs while
// sending it, so its signatures fail when a SecurityToken is set; Java's
// client and RocketMQ's server both include it, and so does Spool.
//
// # Decision
//
// See Authorize: super users pass; otherwise the most specific matching
// entry of the user's Custom policy (else of its Default policy) decides,
// Deny winning between equally specific entries.
//
// # Gate
//
// Gate is the whole decision for one request, as the broker and the name
// server will call it: Settings (RocketMQ 5.3's authenticationEnabled,
// authenticationWhitelist, authorizationEnabled, authorizationWhitelist,
// the user of innerClientAuthenticationCredentials), a Directory of users
// and ACLs, the request's code, ext fields, body and version, and the
// source address in; allowed, or the NO_PERMISSION remark, out.
//
// # Store
//
// Users and ACLs live in two files of one directory, users.json and
// acls.json, each replaced whole (write a temporary file, fsync, rename,
// fsync the directory):
//
//	{"crc32":<CRC-32C of data>,"data":<the users or ACLs, JSON>}
//
// A file whose CRC or JSON does not hold is corrupt (ErrCorrupt, which
// matches corrupt.ErrCorruption). Passwords are stored as given: the
// server needs them to recompute signatures, as RocketMQ does.
package auth
