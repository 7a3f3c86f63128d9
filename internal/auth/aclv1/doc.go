// Package aclv1 owns Spool's ACL 1.0 compatibility: RocketMQ's
// plain_acl.yml, the decision RocketMQ 4.x's PlainPermissionManager made
// over it, and the migration of its accounts into ACL 2.0 users and ACLs
// (RocketMQ 5.3's migrateAuthFromV1Enabled, AuthMigrator).
//
// It must never touch a socket or keep a goroutine; reading the file and
// noticing that it changed belong to the caller, which hands the bytes
// to Parse. It imports internal/auth and remoting (request codes) only.
//
// # plain_acl.yml
//
//	globalWhiteRemoteAddresses:    # addresses let in without a signature
//	  - 10.10.103.*
//	accounts:
//	  - accessKey: RocketMQ        # more than 6 characters
//	    secretKey: 12345678        # more than 6 characters
//	    whiteRemoteAddress: 192.168.0.*   # let in without a signature
//	    admin: false               # an admin account passes every check
//	    defaultTopicPerm: DENY     # DENY, PUB, SUB, PUB|SUB (SUB|PUB)
//	    defaultGroupPerm: SUB
//	    topicPerms: [topicA=DENY, topicB=PUB|SUB]
//	    groupPerms: [groupA=DENY, groupB=SUB]
//
// An address is "*" (any), one address, a comma-separated list, an IPv4
// address whose last part is a {a,b,c} set, or an IPv4 address with one
// part "*" or a range "a-b" and "*" after it (192.168.*.*, 10.1.2-5.*).
package aclv1
