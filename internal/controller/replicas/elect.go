package replicas

import (
	"slices"
	"sort"
)

// Candidate is what an election knows of a live replica, from its last
// heartbeat.
type Candidate struct {
	Epoch     int32
	MaxOffset int64
	// Priority is brokerElectionPriority: the lower value wins.
	Priority int32
}

// Liveness is what the validators read of broker liveness: whether a
// replica is alive (a heartbeat within its timeout), whether it may be
// made master, and its last heartbeat's figures.
type Liveness interface {
	Alive(clusterName, brokerName string, id int64) bool
	// Electable: alive, and the connection of its last heartbeat not seen
	// closed. A replica killed keeps counting as alive for a while (a
	// master for its lease, so that no successor acknowledges beside it),
	// but its heartbeat figures are those of a process that is gone: made
	// master, it would begin its epoch with whatever a restart left of its
	// log, a power cut's shorter log included.
	Electable(clusterName, brokerName string, id int64) bool
	Candidate(clusterName, brokerName string, id int64) (Candidate, bool)
}

// Policy is RocketMQ's DefaultElectPolicy: candidates are the alive
// members of the sync-state set and, only when that yields no master and
// Unclean (enableElectUncleanMaster) is set, every alive replica.
type Policy struct {
	Unclean bool
}

// Elect picks the new master of b, or NoMaster. designated is the broker a
// designated election asks for (NoMaster: none).
//
// In each candidate pool, in order: the old master if it is alive and
// either nothing is designated or it is the one designated; else the
// designated broker if it is in the pool (and nobody else when it is not);
// else the candidate with the highest epoch, then the highest max offset,
// then the lowest election priority, then the lowest id. A replica other
// than the old master is a candidate only while Electable.
func (p Policy) Elect(b *BrokerSet, live Liveness, designated int64) int64 {
	if m := p.try(b, b.SyncStateSet, live, designated); m != NoMaster {
		return m
	}
	if p.Unclean {
		return p.try(b, b.IDs(), live, designated)
	}
	return NoMaster
}

func (p Policy) try(b *BrokerSet, pool []int64, live Liveness, designated int64) int64 {
	alive := make([]int64, 0, len(pool))
	for _, id := range pool {
		if _, ok := b.Replicas[id]; !ok {
			continue
		}
		if b.HasMaster() && id == b.MasterID && live.Alive(b.ClusterName, b.BrokerName, id) ||
			live.Electable(b.ClusterName, b.BrokerName, id) {
			alive = append(alive, id)
		}
	}
	if len(alive) == 0 {
		return NoMaster
	}
	if b.HasMaster() && slices.Contains(alive, b.MasterID) && (designated == NoMaster || designated == b.MasterID) {
		return b.MasterID
	}
	if designated != NoMaster {
		if slices.Contains(alive, designated) {
			return designated
		}
		return NoMaster
	}
	// Compared field by field: RocketMQ casts the offset difference to an
	// int and its TreeSet drops candidates that compare equal.
	info := func(id int64) Candidate {
		c, _ := live.Candidate(b.ClusterName, b.BrokerName, id)
		return c
	}
	sort.SliceStable(alive, func(i, j int) bool {
		a, c := info(alive[i]), info(alive[j])
		switch {
		case a.Epoch != c.Epoch:
			return a.Epoch > c.Epoch
		case a.MaxOffset != c.MaxOffset:
			return a.MaxOffset > c.MaxOffset
		case a.Priority != c.Priority:
			return a.Priority < c.Priority
		}
		return alive[i] < alive[j]
	})
	return alive[0]
}
