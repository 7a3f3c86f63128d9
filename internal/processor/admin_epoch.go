package processor

import (
	"math"

	"github.com/spoolmq/spool/internal/ctlbody"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// EpochTable is the part of the epoch file GET_BROKER_EPOCH_CACHE reads.
type EpochTable interface {
	// Entries is the table, oldest first.
	Entries() []store.EpochEntry
}

// EpochEntry and EpochEntryCache are ctlbody's GET_BROKER_EPOCH_CACHE
// body.
type (
	EpochEntry      = ctlbody.EpochEntry
	EpochEntryCache = ctlbody.EpochEntryCache
)

// notControllerMode is RocketMQ 5.3's remark for GET_BROKER_EPOCH_CACHE
// on a broker outside controller mode (trailing space included).
const notControllerMode = "this request only for controllerMode "

// HandleGetBrokerEpochCache answers GET_BROKER_EPOCH_CACHE (1007, no
// header) with the broker's epoch table, its identity and the CommitLog's
// end; outside controller mode SYSTEM_ERROR, as RocketMQ answers.
func (a *Admin) HandleGetBrokerEpochCache(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	var tab EpochTable
	if a.d.Epochs != nil {
		tab = a.d.Epochs()
	}
	if tab == nil {
		return response(req, remoting.SystemError, notControllerMode)
	}
	es := tab.Entries()
	out := EpochEntryCache{EpochList: make([]EpochEntry, len(es))}
	if a.d.Config != nil {
		cfg := a.d.Config()
		out.ClusterName, out.BrokerName = cfg.BrokerClusterName, cfg.BrokerName
	}
	if a.d.BrokerID != nil {
		out.BrokerID = a.d.BrokerID()
	}
	if a.d.MaxPhyOffset != nil {
		out.MaxOffset = a.d.MaxPhyOffset()
	}
	for i, e := range es {
		end := int64(math.MaxInt64)
		if i+1 < len(es) {
			end = es[i+1].StartOffset
		}
		out.EpochList[i] = EpochEntry{EndOffset: end, Epoch: e.Epoch, StartOffset: e.StartOffset}
	}
	return encoded(req, &out)
}
