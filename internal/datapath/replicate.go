package datapath

import (
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
)

// Broker roles as the data path reads them (store.Config's brokerRole).
const roleSlave = store.Slave

// rejectRequest is RocketMQ's answer to a request a processor rejects
// (SYSTEM_BUSY with the [REJECTREQUEST] remark).
const rejectRequest = "[REJECTREQUEST]system busy, start flow control for a while"

// slaveRefusal answers a send on a slave: its log holds only its master's
// bytes.
func (d *Path) slaveRefusal(req *remoting.Command) *remoting.Command {
	if d.config().BrokerRole != roleSlave {
		return nil
	}
	return remoting.NewResponse(req, remoting.SystemBusy, rejectRequest+": the broker is a slave (brokerRole=SLAVE); send to its master")
}

// slavePullRefusal answers a pull on a slave with slaveReadEnable=false
// as RocketMQ does: PULL_RETRY_IMMEDIATELY with suggestWhichBrokerId=0,
// nextBeginOffset the requested offset. The client keeps its offset and
// sends its next pull to the master at once; an error code instead would
// leave a client that was sent here pulling from the slave until its
// route changed.
func (d *Path) slavePullRefusal(req *remoting.Command, h *pullHeader) *remoting.Command {
	cfg := d.config()
	if cfg.BrokerRole != roleSlave || cfg.SlaveReadEnable {
		return nil
	}
	return pullAnswer(nil, req, remoting.PullRetryImmediately, "the broker is a slave and slaveReadEnable=false: pull from the master",
		masterID, h.queueOffset, d.store.MinOffsetInQueue(h.topic, h.queueID), d.store.MaxOffsetInQueue(h.topic, h.queueID))
}

// InSyncReplicasNotEnoughRemark is RocketMQ's remark for a put refused
// IN_SYNC_REPLICAS_NOT_ENOUGH (answered SYSTEM_ERROR).
const InSyncReplicasNotEnoughRemark = "in-sync replicas not enough"

// replicaRefusal answers a send at once in controller mode when the
// replication engine refuses it (fenced, too few in-sync replicas).
func (d *Path) replicaRefusal(req *remoting.Command) *remoting.Command {
	if d.admitPut == nil {
		return nil
	}
	s, remark := d.admitPut()
	if s == store.PutOK {
		return nil
	}
	code, remark := PutStatusCode(store.PutResult{Status: s, Remark: remark})
	return remoting.NewResponse(req, code, remark)
}

// replicated wraps a put's completion: on a SYNC_MASTER (Deps.WaitReplicated
// set) a stored message that asked to wait (waitStoreMsgOK) is answered
// once the replication wait ends, with the worse of the flush's and the
// replication's outcome. The wait only registers the put (the group
// transfer answers it); it never runs under the put lock's hold of the
// caller and never blocks.
func (d *Path) replicated(wait bool, done func(store.PutResult)) func(store.PutResult) {
	if d.waitReplicated == nil || !wait {
		return done
	}
	return func(r store.PutResult) {
		if r.Status != store.PutOK && r.Status != store.FlushDiskTimeout {
			done(r)
			return
		}
		end := r.WroteOffset + int64(r.WroteBytes)
		d.waitReplicated(end, func(s store.PutStatus) { done(CombineReplication(r, s)) })
	}
}

// CombineReplication is the answer to a put whose flush ended with r and
// whose replication wait ended with replica, as RocketMQ's CommitLog
// combines them: a failed replication (FLUSH_SLAVE_TIMEOUT,
// SLAVE_NOT_AVAILABLE) overrides the flush's status, otherwise the
// flush's status (PUT_OK or FLUSH_DISK_TIMEOUT) stands.
func CombineReplication(r store.PutResult, replica store.PutStatus) store.PutResult {
	switch replica {
	case store.FlushSlaveTimeout:
		r.Status, r.Remark = replica, "the slave did not acknowledge the message within slaveTimeout"
	case store.SlaveNotAvailable:
		r.Status, r.Remark = replica, "no slave is in sync (SYNC_MASTER waits for max(inSyncReplicas, 2) copies)"
	case store.InSyncReplicasNotEnough:
		r.Status, r.Remark = replica, InSyncReplicasNotEnoughRemark+" (the sync-state set is smaller than minInSyncReplicas)"
	case store.ServiceNotAvailable:
		// Controller mode: the master was fenced or lost its role while
		// the send waited; the message may exist only here.
		r.Status, r.Remark = replica, "the master stopped acknowledging (controller lease lost or role changed) before the sync-state set held the message"
	}
	return r
}
