package ha

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
)

// heldLog holds its acknowledgement at hold while hold is not -1, as a
// store does while bytes are only in its write spill.
type heldLog struct {
	Log
	hold atomic.Int64
}

func (h *heldLog) AckOffset() int64 {
	a := h.Log.AckOffset()
	if hold := h.hold.Load(); hold >= 0 {
		return min(a, hold)
	}
	return a
}

// TestSlaveReportsOnlyWhatItMayAcknowledge: the slave's reports carry
// AckOffset, not its end; once the held bytes may be acknowledged they are
// reported without waiting for the next heartbeat (an hour here).
func TestSlaveReportsOnlyWhatItMayAcknowledge(t *testing.T) {
	ms, ss := openStore(t, vfs.OS()), openStore(t, vfs.OS())
	m, addr := startMaster(t, MasterConfig{Log: ms.log, Admit: admitAll})
	hl := &heldLog{Log: ss.log}
	hl.hold.Store(0)
	startSlave(t, SlaveConfig{Log: hl, MasterAddr: addr, SendHeartbeatInterval: time.Hour, HousekeepingInterval: 2 * time.Hour})
	eventually(t, "the slave to connect", func() bool { return ackOf(m) == 0 })
	end := fill(t, ms.st, 200)
	hold := end / 2
	hl.hold.Store(hold)
	m.Notify()
	eventually(t, "the slave to hold the master's bytes", func() bool { return ss.log.MaxOffset() == end })
	eventually(t, "the held acknowledgement", func() bool { return ackOf(m) == hold })
	hl.hold.Store(-1)
	eventually(t, "the acknowledgement to reach the end", func() bool { return ackOf(m) == end })
}

// TestSlaveFirstReportWaitsUntilItsEndMayBeAcknowledged: the first report
// of a connection is where the master starts sending and counts as an
// acknowledgement, so it is sent only once all of the log may be
// acknowledged.
func TestSlaveFirstReportWaitsUntilItsEndMayBeAcknowledged(t *testing.T) {
	ss := openStore(t, vfs.OS())
	local := fill(t, ss.st, 20)
	hl := &heldLog{Log: ss.log}
	hl.hold.Store(local / 2)
	addr, reports := fakeMaster(t, func(r int64) int64 { return r })
	startSlave(t, SlaveConfig{Log: hl, MasterAddr: addr})
	select {
	case r := <-reports:
		t.Fatalf("first report %d while only %d of %d may be acknowledged", r, local/2, local)
	case <-time.After(100 * time.Millisecond):
	}
	hl.hold.Store(-1)
	if r := <-reports; r != local {
		t.Fatalf("first report %d, want the slave's end %d", r, local)
	}
}
