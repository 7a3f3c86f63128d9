// Package authserve owns the server side of Spool's access control: it
// reads the broker's and the name server's authentication and
// authorization keys (RocketMQ 5.3's authenticationEnabled,
// authorizationEnabled, authenticationWhitelist, authorizationWhitelist,
// initAuthenticationUser, innerClientAuthenticationCredentials; ACL 1.0's
// aclEnable with {rocketmqHome}/conf/plain_acl.yml and
// migrateAuthFromV1Enabled), opens the user and ACL store, creates the
// initial and inner users, decides every request through the transport's
// Authorize hook (auth.Gate, and aclv1 when aclEnable is on), answers
// refusals NO_PERMISSION (16) with RocketMQ's remark, counts them and logs
// them at a bounded rate, reloads plain_acl.yml when it changes, signs
// outgoing requests with the inner credentials, and serves
// AUTH_CREATE_USER ... AUTH_LIST_ACL (3001-3010).
//
// It imports internal/auth, internal/auth/aclv1, internal/vfs, remoting
// and remoting/transport only; it must not import the broker, the name
// server or the store.
package authserve
