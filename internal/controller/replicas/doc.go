// Package replicas is the controller's replicas state machine: per broker
// name the replica ids and addresses, the id allocation, the master id,
// the master epoch, the sync-state set and its epoch; and the election
// policy that picks a new master.
//
// It owns the rules, never the I/O: every request is validated against the
// current State into Events (or refused with one of RocketMQ's controller
// response codes 2000–2016), and Events change the State in one place,
// State.Apply. Each Event carries the epochs it was validated against, and
// Apply refuses an Event whose epochs no longer match, so a change can
// never land on a state it was not checked against. Replication (the Raft
// log that carries the Events), broker liveness (which the validators read
// through the Alive callback) and the remoting layer live elsewhere.
//
// It imports only remoting (the response codes) and must import nothing
// else of Spool's: it is pure and deterministic, so every controller
// replica that applies the same Events holds the same State.
package replicas
