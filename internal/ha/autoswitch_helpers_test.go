package ha

import (
	"net"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/internal/vfs"
)

// switchLog adapts a store's ReplicaLog and epoch file to SwitchLog, as
// the broker's wiring does.
type switchLog struct {
	*store.ReplicaLog
	st *store.DefaultMessageStore
}

func (l switchLog) Epochs() []Epoch {
	var out []Epoch
	for _, e := range l.st.Epochs().Entries() {
		out = append(out, Epoch{Epoch: e.Epoch, StartOffset: e.StartOffset})
	}
	return out
}
func (l switchLog) AppendEpoch(e Epoch) error {
	return l.st.Epochs().Append(store.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset})
}
func (l switchLog) TruncateEpochsFrom(epoch int32) error {
	return l.st.Epochs().TruncateSuffixByEpoch(epoch)
}
func (l switchLog) SetConfirmOffset(off int64) { l.st.SetConfirmOffset(off) }
func (l switchLog) RefusePuts(remark string)   { l.st.RefusePuts(remark) }
func (l switchLog) RebuildQueueOffsets() error { return l.st.RebuildQueueOffsets() }
func (l switchLog) Sync(end int64) error       { return l.st.SyncTo(end) }

// replica is one broker of a controller-mode pair: a gated store and its
// AutoSwitch on a loopback HA listener.
type replica struct {
	*testStore
	as   *AutoSwitch
	addr string
	id   int64
}

func openGated(t testing.TB, dir string) *testStore {
	t.Helper()
	cfg := testkit.StoreConfig(dir, testkit.Small)
	st, err := store.Open(cfg, vfs.OS(), quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.GateDispatchAtConfirm(); err != nil {
		t.Fatal(err)
	}
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	ts := &testStore{st: st, log: store.NewReplicaLog(st), dir: dir, cfg: cfg}
	t.Cleanup(func() { st.Shutdown() })
	return ts
}

func startReplica(t testing.TB, id int64, mod func(*SwitchConfig)) *replica {
	t.Helper()
	ts := openGated(t, t.TempDir())
	cfg := SwitchConfig{Log: switchLog{ts.log, ts.st}, BrokerID: id, Logger: quietLogger(),
		SendHeartbeatInterval: 50 * time.Millisecond, PollInterval: 5 * time.Millisecond,
		ReconnectInterval: 20 * time.Millisecond, SlaveTimeout: time.Minute, TransferBatchSize: 4096}
	if mod != nil {
		mod(&cfg)
	}
	as := NewAutoSwitch(cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go as.Serve(ln)
	t.Cleanup(as.Close)
	return &replica{testStore: ts, as: as, addr: ln.Addr().String(), id: id}
}

// putOn stores n messages on r and tells its AutoSwitch.
func putOn(t testing.TB, r *replica, n int, tag string) int64 {
	t.Helper()
	var end int64
	for i := 0; i < n; i++ {
		end = put(t, r.st, testMsg("T", int32(i%2), []byte(tag+"-"+string(rune('a'+i%26)))))
	}
	r.as.Notify()
	return end
}
