package broker

import (
	"errors"
	"syscall"
)

// runSlaveResume retries a slave's replication stopped by a full disk
// (ENOSPC, EDQUOT) every haSendHeartbeatInterval until the broker stops:
// once space returns the next append succeeds and replication goes on
// from the slave's end; while the disk is still full it stops again with
// the same error. Other stops (bytes that differ from the master's) wait
// for an operator.
func (b *Broker) runSlaveResume(r *replication) {
	every := millis(b.config().HA.SendHeartbeatInterval)
	if every <= 0 {
		every = millis(DefaultHAConfig().SendHeartbeatInterval)
	}
	b.every(every, func() {
		if err := r.slave.Err(); err != nil && (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
			r.slave.Resume()
		}
	})
}
