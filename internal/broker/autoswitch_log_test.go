package broker

import (
	"io"
	"log/slog"
	"testing"

	"github.com/spoolmq/spool/internal/datapath"
	"github.com/spoolmq/spool/internal/ha"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/remoting"
)

// Controller-mode outcomes reach the client as RocketMQ answers them:
// IN_SYNC_REPLICAS_NOT_ENOUGH as SYSTEM_ERROR "in-sync replicas not
// enough", a fenced master as SERVICE_NOT_AVAILABLE with [FENCED].
func TestSwitchStatusCodes(t *testing.T) {
	for _, c := range []struct {
		o      ha.Outcome
		code   int32
		remark string
	}{
		{ha.ReplicaOK, remoting.Success, ""},
		{ha.FlushSlaveTimeout, remoting.FlushSlaveTimeout, ""},
		{ha.InSyncReplicasNotEnough, remoting.SystemError, "in-sync replicas not enough"},
		{ha.Fenced, remoting.ServiceNotAvailable, ha.RemarkFenced},
		{ha.NotMaster, remoting.ServiceNotAvailable, ha.RemarkSlave},
	} {
		s, remark := switchStatus(c.o)
		code, got := datapath.PutStatusCode(store.PutResult{Status: s, Remark: remark})
		if code != c.code || (c.remark != "" && got != c.remark) {
			t.Errorf("%v: code %d remark %q, want %d %q", c.o, code, got, c.code, c.remark)
		}
	}
}

// The store adapter drives a real AutoSwitch: the new master's epoch is
// in the store's epoch file and the hooks admit, refuse and answer.
func TestSwitchLogOverTheStore(t *testing.T) {
	st, err := store.Open(testkit.StoreConfig(t.TempDir(), testkit.Small), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.GateDispatchAtConfirm(); err != nil {
		t.Fatal(err)
	}
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	defer st.Shutdown()
	a := ha.NewAutoSwitch(ha.SwitchConfig{Log: newSwitchLog(st), BrokerID: 1, MinInSyncReplicas: 2,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer a.Close()
	admit, wait := switchAdmit(a), switchWait(a)
	if s, _ := admit(); s != store.ServiceNotAvailable {
		t.Fatalf("admitted before any role: %v", s)
	}
	if err := a.ChangeToMaster(3, []int64{1}, 1); err != nil {
		t.Fatal(err)
	}
	if es := st.Epochs().Entries(); len(es) != 1 || es[0] != (store.EpochEntry{Epoch: 3, StartOffset: 0}) {
		t.Fatalf("epoch file %v", es)
	}
	if s, r := admit(); s != store.InSyncReplicasNotEnough || r == "" {
		t.Fatalf("a set of 1 under minInSyncReplicas=2: %v %q", s, r)
	}
	a.SetSyncStateSet([]int64{1, 2}, 2)
	if s, _ := admit(); s != store.PutOK {
		t.Fatalf("refused with a set of 2: %v", s)
	}
	var got store.PutStatus = -1
	wait(0, func(s store.PutStatus) { got = s })
	if got != store.PutOK {
		t.Fatalf("wait without allAckInSyncStateSet: %v", got)
	}
}
