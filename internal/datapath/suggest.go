package datapath

// suggestInput is what a pull answer's suggestWhichBrokerId is decided
// from.
type suggestInput struct {
	// slaveReadEnable is the answering broker's slaveReadEnable.
	slaveReadEnable bool
	// slave: the answering broker is a slave, selfID its brokerId.
	slave  bool
	selfID int64
	// masterUp: a slave's master is registered and its HA stream is
	// connected.
	masterUp bool
	// read: the pull read the store (an answer built from a GetResult);
	// slow: that read went behind the in-memory window (store.SlowRead).
	read, slow bool
	// groupBrokerID and whenSlow are the subscription group's brokerId
	// (0) and whichBrokerWhenConsumeSlowly (1).
	groupBrokerID, whenSlow int64
}

// suggestBroker decides a pull answer's suggestWhichBrokerId.
//
// A master follows RocketMQ's PullMessageProcessor: without
// slaveReadEnable it always suggests itself (0); with it, a read behind
// memory suggests the group's whichBrokerWhenConsumeSlowly and any other
// read the group's brokerId.
//
// A slave (which serves pulls only with slaveReadEnable) sends a consumer
// that has caught up (its read was in memory) back to the group's brokerId
// while its master is up, and otherwise keeps the consumer on itself: a
// slow reader stays where it does not disturb the master's page cache,
// and a consumer whose master is down is not sent to it. (RocketMQ's
// slave suggests whichBrokerWhenConsumeSlowly for a slow read, which names
// another broker when the slave's own id is not that number.)
//
// An answer that did not read the store (a refusal, an error, a re-run
// held by the cold-read budget) carries no evidence either way: a master
// suggests itself, a slave keeps the consumer unless its master is up.
func suggestBroker(in suggestInput) int64 {
	if in.slave {
		if !in.slaveReadEnable {
			return masterID
		}
		if in.masterUp && (!in.read || !in.slow) {
			return in.groupBrokerID
		}
		return in.selfID
	}
	if !in.slaveReadEnable || !in.read {
		return masterID
	}
	if in.slow {
		return in.whenSlow
	}
	return in.groupBrokerID
}
