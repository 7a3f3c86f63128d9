// Package failover is the broker's side of RocketMQ's controller mode
// (enableControllerMode=true): the control plane that RocketMQ 5's
// ReplicasManager is. It learns the controller leader
// (GET_CONTROLLER_METADATA_INFO, following CONTROLLER_NOT_LEADER), obtains
// and keeps the broker's controller id (GET_NEXT_BROKER_ID,
// APPLY_BROKER_ID and the identity files), registers
// (REGISTER_BROKER_TO_CONTROLLER), sends BROKER_HEARTBEAT to every
// controller, asks for elections (ELECT_MASTER) when the broker set has
// no master, follows role changes (NOTIFY_BROKER_ROLE_CHANGED pushes and
// periodic GET_REPLICA_INFO), reports the master's sync-state set
// (ALTER_SYNC_STATE_SET) and fences a master whose controller lease ran
// out.
//
// It drives the replication engine only through Replica (replica.go),
// which internal/ha implements; it imports neither internal/ha nor the
// store, only the clock, the file-system seam and the remoting client.
// Its decisions (decide.go: registration step, role change, sync-state
// set, fencing) are pure functions of state, input and the time read from
// the injected clock; the Agent around them does the I/O. It never
// acknowledges, truncates or reads the CommitLog itself.
//
// # Identity files (RocketMQ's BrokerMetadata and TempBrokerMetadata)
//
//	storePathRootDir/brokerIdentity-temp   clusterName#brokerName#brokerId#registerCheckCode
//	storePathRootDir/brokerIdentity        clusterName#brokerName#brokerId
//
// registerCheckCode is "brokerAddr;unixMillis". The temp file is written
// before APPLY_BROKER_ID and replaced by brokerIdentity once the id is
// granted, so a restart at any step resumes where it stopped, and a
// restart after it registers under the same id. Both are replaced
// atomically (temporary file, fsync, rename, fsync of the directory).
//
// # The lease
//
// A controller counts a broker dead controllerHeartBeatTimeoutMills
// (default 10 s) after the last heartbeat it received from it, or, once
// the connection those heartbeats came on closed, half that timeout and
// a fifth of the half more (6 s by default,
// internal/controller/liveness.CloseWait), and only then elects another
// master for an inactive one. A master therefore holds a lease of half
// that timeout (5 s by default), counted from the start of its last
// successful lease round. A round, every
// brokerHeartbeatInterval (1 s), is a BROKER_HEARTBEAT to the controller
// leader answered SUCCESS followed by a GET_REPLICA_INFO the leader
// answers only after confirming its leadership with a quorum, naming this
// broker master of the epoch it applied. The leader received the
// heartbeat after the round began, so it cannot count the master dead
// before round start + timeout (round start + 0.6 × timeout after a
// closed connection); the master stops acknowledging
// (Replica.SetFenced(true)) at round start + timeout/2 (checked every
// tenth of the lease), leaving half the timeout, or a tenth of it after a
// close, for acknowledgements already in flight and for clocks that run
// at different rates. The fence is lifted when a round succeeds again and
// the epoch is still this broker's; an answer with a newer epoch keeps it
// and changes the role. Anything but a master with a live lease is fenced
// (before the first round of an epoch, during a role change, as a slave).
//
// A controller that becomes leader elects for an inactive master only
// once the master's heartbeat timeout has passed since it began serving
// (internal/controller), so a master it never heard from has fenced
// itself by then. An election an operator forces (ELECT_MASTER with
// designateElect) does not wait for the lease.
//
// # A master restarted in its own epoch
//
// A master that restarts before the controllers count it dead is named
// master of its own epoch again at registration. Its log may be shorter
// than before (a power cut dropped the CommitLog's unflushed tail) while
// the other members of its sync-state set hold every message it
// acknowledged; serving would make each of them cut its log to this
// broker's end in the HA handshake, and a new epoch would too. So when
// the set has other members the broker takes no role yet (it stays
// fenced, refuses sends and closes slave connections) and asks each
// other member for its epoch table and end (GET_BROKER_EPOCH_CACHE, at
// the addresses CONTROLLER_GET_SYNC_STATE_DATA names). It serves once
// its own log covers every member's (DecideResume); when a member holds
// more, it asks for that member's election (ELECT_MASTER with
// designateElect=true, the member holding the most) and follows it as a
// slave, its own log a prefix of the new master's. A member that does not
// answer is asked again every brokerHeartbeatInterval for at most
// controllerHeartBeatTimeoutMills (10 s by default, the time after which
// the controllers count a silent broker dead), and then left out: a
// master that lost its tail while every member holding it is down too
// serves what it has.
package failover
