// Package ha owns Spool's classic master/slave replication: RocketMQ's
// default HA wire protocol (the slave's 8-byte offset reports, the
// master's 12-byte transfer headers followed by raw CommitLog bytes), the
// master's listener and one transfer loop per slave connection, the
// per-slave acknowledged offset, lag and in-sync state, the slave's client
// that applies transfers in order, and the SYNC_MASTER wait as a plain
// data structure (SyncWaiters) with one small driver (GroupTransfer).
//
// Controller mode's data plane is AutoSwitch (autoswitch*.go): RocketMQ
// 5's AutoSwitch HA frames (autoswitch_wire.go draws them), the epoch
// handshake, the slave's cut to the consistent point of the two epoch
// tables before it appends or acknowledges anything, the confirm offset
// over the sync-state set, allAckInSyncStateSet, minInSyncReplicas and
// fencing. The classic protocol (Master, Slave) is unchanged for brokers
// not in controller mode.
//
// The CommitLog is reached only through the Log interface defined here
// and its SwitchLog extension (the store implements them); ha never imports the store, the broker, the
// transport or the name server. Time is read through internal/clock, so
// heartbeats, housekeeping and the replication wait's deadlines are driven
// by a manual clock in tests.
//
// RocketMQ's protocol has no handshake, so any socket that writes eight
// bytes would count as a slave's acknowledgement (apache/rocketmq#3015).
// Spool keeps the bytes and closes the hole on the master side: a
// connection's reports count as acknowledgements only when the broker's
// Admit predicate accepts the peer address (a slave registered for this
// broker name), only up to what that connection holds or was sent, and a
// report that is negative, moves backwards or lies beyond the master's end
// closes the connection and is logged.
package ha
