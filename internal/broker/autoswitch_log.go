package broker

import (
	"github.com/spoolmq/spool/internal/ha"
	"github.com/spoolmq/spool/internal/store"
)

// This file is the store's side of controller-mode replication for the
// wiring of enableControllerMode=true: the store as ha.SwitchLog, and the
// data path's hooks over ha.AutoSwitch.

// switchLog is the store's CommitLog (ReplicaLog) and epoch file as
// ha.AutoSwitch reads and changes them.
type switchLog struct {
	*store.ReplicaLog
	st *store.DefaultMessageStore
}

var _ ha.SwitchLog = switchLog{}

func newSwitchLog(st *store.DefaultMessageStore) switchLog {
	return switchLog{ReplicaLog: store.NewReplicaLog(st), st: st}
}

func (l switchLog) Epochs() []ha.Epoch {
	es := l.st.Epochs().Entries()
	out := make([]ha.Epoch, len(es))
	for i, e := range es {
		out[i] = ha.Epoch{Epoch: e.Epoch, StartOffset: e.StartOffset}
	}
	return out
}

func (l switchLog) AppendEpoch(e ha.Epoch) error {
	return l.st.Epochs().Append(store.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset})
}

func (l switchLog) TruncateEpochsFrom(epoch int32) error {
	return l.st.Epochs().TruncateSuffixByEpoch(epoch)
}

func (l switchLog) SetConfirmOffset(off int64) { l.st.SetConfirmOffset(off) }
func (l switchLog) RefusePuts(remark string)   { l.st.RefusePuts(remark) }
func (l switchLog) RebuildQueueOffsets() error { return l.st.RebuildQueueOffsets() }
func (l switchLog) Sync(end int64) error       { return l.st.SyncTo(end) }

// switchStatus maps a controller-mode replication outcome to the store's
// PutMessageStatus and the remark the client reads.
func switchStatus(o ha.Outcome) (store.PutStatus, string) {
	switch o {
	case ha.ReplicaOK:
		return store.PutOK, ""
	case ha.FlushSlaveTimeout:
		return store.FlushSlaveTimeout, ""
	case ha.SlaveNotAvailable:
		return store.SlaveNotAvailable, ""
	case ha.InSyncReplicasNotEnough:
		return store.InSyncReplicasNotEnough, ha.RemarkNotEnough
	case ha.Fenced:
		return store.ServiceNotAvailable, ha.RemarkFenced
	default:
		return store.ServiceNotAvailable, ha.RemarkSlave
	}
}

// switchAdmit is datapath.Deps.AdmitPut over a.
func switchAdmit(a *ha.AutoSwitch) func() (store.PutStatus, string) {
	return func() (store.PutStatus, string) {
		if o, ok := a.AdmitPut(); !ok {
			return switchStatus(o)
		}
		return store.PutOK, ""
	}
}

// switchWait is datapath.Deps.WaitReplicated over a.
func switchWait(a *ha.AutoSwitch) func(end int64, done func(store.PutStatus)) {
	return func(end int64, done func(store.PutStatus)) {
		a.WaitReplicated(end, func(o ha.Outcome) {
			s, _ := switchStatus(o)
			done(s)
		})
	}
}

// truncateDerived drops the timer wheel's and the transaction check
// service's state built from records at or past offset, which a CommitLog
// truncation cut (the store has cut its consume queues already; consumer
// and delay offsets are lowered by onTruncate).
func (b *Broker) truncateDerived(offset int64) {
	if err := b.truncateWheel(offset); err != nil {
		b.logger.Error("broker: timer state after a CommitLog truncation", "offset", offset, "err", err)
	}
	if tx, ok := b.txCheck.(interface{ TruncateTo(int64) int }); ok {
		tx.TruncateTo(offset)
	}
}
