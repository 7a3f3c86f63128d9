package ha

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/store"
)

// replicaContract is the method set internal/failover drives (its
// Replica interface), copied here so ha does not import failover.
type replicaContract interface {
	ChangeToMaster(masterEpoch int32, syncStateSet []int64, syncStateSetEpoch int32) error
	ChangeToSlave(masterID int64, masterHAAddr string, masterEpoch int32) error
	SetSyncStateSet(set []int64, syncStateSetEpoch int32)
	SetFenced(fenced bool)
	MasterEpoch() int32
	MaxOffset() int64
	ConfirmOffset() int64
	Replicas() []ReplicaState
}

var _ replicaContract = (*AutoSwitch)(nil)

// The frames are RocketMQ 5's AutoSwitchHAClient/AutoSwitchHAConnection
// bytes (big-endian, HAConnectionState ordinals HANDSHAKE 1, TRANSFER 2).
func TestAutoSwitchFrameBytes(t *testing.T) {
	var hs [SwitchSlaveHandshakeSize]byte
	PutSlaveHandshake(hs[:], SlaveHandshake{SyncFromLastFile: true, BrokerID: 2})
	if got := hex.EncodeToString(hs[:]); got != "00000001"+"0001"+"0000"+"0000000000000002" {
		t.Fatalf("slave handshake %s", got)
	}
	var rep [SwitchReportSize]byte
	PutSwitchReport(rep[:], 0x0102)
	if got := hex.EncodeToString(rep[:]); got != "00000002"+"0000000000000102" {
		t.Fatalf("report %s", got)
	}
	m := AppendMasterHandshake(nil, 0x40, 3, []Epoch{{1, 0}, {3, 0x20}})
	want := "00000001" + "00000018" + "0000000000000040" + "00000003" +
		"00000001" + "0000000000000000" + "00000003" + "0000000000000020"
	if got := hex.EncodeToString(m); got != want {
		t.Fatalf("master handshake %s", got)
	}
	var th [SwitchTransferHeaderSize]byte
	PutTransferHeader(th[:], TransferHeader{BodySize: 5, Offset: 0x20, Epoch: 3, EpochStart: 0x20, ConfirmOffset: 0x10})
	want = "00000002" + "00000005" + "0000000000000020" + "00000003" + "0000000000000020" + "0000000000000010"
	if got := hex.EncodeToString(th[:]); got != want {
		t.Fatalf("transfer header %s", got)
	}
	if h := ParseTransferHeader(th[4:]); h.BodySize != 5 || h.Epoch != 3 || h.ConfirmOffset != 0x10 {
		t.Fatalf("parsed %+v", h)
	}
	es, err := ParseEpochs(m[SwitchMasterHandshakeSize:])
	if err != nil || !slices.Equal(es, []Epoch{{1, 0}, {3, 0x20}}) {
		t.Fatalf("epochs %v %v", es, err)
	}
}

func TestAutoSwitchReplicatesEqualBytes(t *testing.T) {
	m := startReplica(t, 1, nil)
	s := startReplica(t, 2, nil)
	if err := m.as.ChangeToMaster(1, []int64{1, 2}, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.as.ChangeToSlave(1, m.addr, 1); err != nil {
		t.Fatal(err)
	}
	end := putOn(t, m, 200, "m")
	eventually(t, "the slave to catch up", func() bool { return s.log.MaxOffset() == end })
	sameLogs(t, m.log, s.log)
	eventually(t, "the confirm offset to reach the end", func() bool { return m.as.ConfirmOffset() == end })
	eventually(t, "the slave's confirm offset", func() bool { return s.as.ConfirmOffset() == end })
	if es := s.st.Epochs().Entries(); len(es) != 1 || es[0] != (store.EpochEntry{Epoch: 1, StartOffset: 0}) {
		t.Fatalf("slave epochs %v", es)
	}
	eventually(t, "the slave's queues", func() bool { return s.st.MaxOffsetInQueue("T", 1) == 100 })
	rs := m.as.Replicas()
	if len(rs) != 1 || rs[0].BrokerID != 2 || rs[0].AckOffset != end || rs[0].CaughtUpAt.IsZero() {
		t.Fatalf("replicas %+v", rs)
	}
	if err := s.as.ChangeToMaster(0, []int64{2}, 1); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("an older epoch was accepted: %v", err)
	}
}

// A role change with divergent tails: the old master wrote records the
// slave never got; the slave is elected (epoch 2) and writes its own; the
// old master then follows it and cuts its tail at the consistent point,
// its consume queues with it.
func TestAutoSwitchRoleChangeTruncatesDivergentTail(t *testing.T) {
	a := startReplica(t, 1, nil)
	b := startReplica(t, 2, nil)
	if err := a.as.ChangeToMaster(1, []int64{1, 2}, 1); err != nil {
		t.Fatal(err)
	}
	if err := b.as.ChangeToSlave(1, a.addr, 1); err != nil {
		t.Fatal(err)
	}
	common := putOn(t, a, 40, "common")
	eventually(t, "b to catch up", func() bool { return b.log.MaxOffset() == common })
	eventually(t, "the confirm offset", func() bool { return a.as.ConfirmOffset() == common })
	// b loses its master; a writes a tail nobody else holds.
	if err := b.as.ChangeToSlave(1, "127.0.0.1:1", 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a to lose b", func() bool { return len(a.as.Replicas()) == 0 })
	eventually(t, "a's dispatch to the confirm offset", func() bool { return a.st.DispatchedOffset() == common })
	tail := putOn(t, a, 30, "lost")
	if a.as.ConfirmOffset() != common || a.st.DispatchedOffset() > common {
		t.Fatalf("a confirmed %d and dispatched %d past the common %d with a member unconnected",
			a.as.ConfirmOffset(), a.st.DispatchedOffset(), common)
	}
	if got := a.st.MaxOffsetInQueue("T", 0); got != 20 {
		t.Fatalf("a's consumers see %d messages of queue 0, want the 20 confirmed", got)
	}
	// b is elected for epoch 2 and writes.
	if err := b.as.ChangeToMaster(2, []int64{2}, 2); err != nil {
		t.Fatal(err)
	}
	newEnd := putOn(t, b, 10, "new")
	cuts := make(chan int64, 4)
	a.st.OnTruncate(func(off int64) { cuts <- off }) // the broker lowers offsets here
	if err := a.as.ChangeToSlave(2, b.addr, 2); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a to follow b", func() bool { return a.log.MaxOffset() == newEnd })
	sameLogs(t, b.log, a.log)
	if cut := <-cuts; cut != common {
		t.Fatalf("a cut its log at %d, want the consistent point %d", cut, common)
	}
	if tail <= newEnd {
		t.Fatalf("test setup: the lost tail (%d) should pass the new end (%d)", tail, newEnd)
	}
	want := []store.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: common}}
	if got := a.st.Epochs().Entries(); !slices.Equal(got, want) {
		t.Fatalf("a's epochs %v, want %v", got, want)
	}
	eventually(t, "a's queues to follow", func() bool {
		return a.st.MaxOffsetInQueue("T", 0) == 25 && a.st.MaxOffsetInQueue("T", 1) == 25
	})
	for q := int32(0); q < 2; q++ {
		r := a.st.GetMessage("g", "T", q, 0, 64, 1<<20, nil)
		for _, rec := range r.Buffers {
			if bytes.Contains(rec, []byte("lost-")) {
				t.Fatalf("queue %d serves a truncated record", q)
			}
		}
		r.Release()
	}
}

func TestAutoSwitchAllAckWaitsForTheSet(t *testing.T) {
	m := startReplica(t, 1, func(c *SwitchConfig) { c.AllAckInSyncStateSet = true })
	s := startReplica(t, 2, nil)
	if err := m.as.ChangeToMaster(1, []int64{1, 2}, 1); err != nil {
		t.Fatal(err)
	}
	end := putOn(t, m, 5, "m")
	got := make(chan Outcome, 1)
	m.as.WaitReplicated(end, func(o Outcome) { got <- o })
	select {
	case o := <-got:
		t.Fatalf("answered %v before the set's other member held the message", o)
	default:
	}
	if m.st.DispatchedOffset() != 0 {
		t.Fatalf("dispatched %d before the set confirmed anything", m.st.DispatchedOffset())
	}
	if err := s.as.ChangeToSlave(1, m.addr, 1); err != nil {
		t.Fatal(err)
	}
	if o := <-got; o != ReplicaOK {
		t.Fatalf("outcome %v", o)
	}
	if s.log.MaxOffset() < end {
		t.Fatalf("acknowledged at %d with the slave at %d", end, s.log.MaxOffset())
	}
	eventually(t, "dispatch to the confirm offset", func() bool { return m.st.DispatchedOffset() == end })
	// A master alone in its set answers at once.
	m.as.SetSyncStateSet([]int64{1}, 2)
	s.as.ChangeToSlave(1, "127.0.0.1:1", 1)
	end = putOn(t, m, 1, "alone")
	m.as.WaitReplicated(end, func(o Outcome) { got <- o })
	if o := <-got; o != ReplicaOK {
		t.Fatalf("alone: %v", o)
	}
}

func TestAutoSwitchMinInSyncReplicasRefuses(t *testing.T) {
	m := startReplica(t, 1, func(c *SwitchConfig) { c.MinInSyncReplicas = 2 })
	if err := m.as.ChangeToMaster(1, []int64{1}, 1); err != nil {
		t.Fatal(err)
	}
	if o, ok := m.as.AdmitPut(); ok || o != InSyncReplicasNotEnough || o.Code() != 1 {
		t.Fatalf("admit with a set of 1 and minInSyncReplicas=2: %v %v", o, ok)
	}
	var got Outcome = -1
	m.as.WaitReplicated(100, func(o Outcome) { got = o })
	if got != InSyncReplicasNotEnough {
		t.Fatalf("wait: %v", got)
	}
	m.as.SetSyncStateSet([]int64{1, 2}, 2)
	if _, ok := m.as.AdmitPut(); !ok {
		t.Fatal("refused with a set of 2")
	}
}

// A send admitted with the set at minInSyncReplicas is not acknowledged
// when the set shrinks below it before the send is replicated: the
// master alone holding it is one copy.
func TestAutoSwitchSetShrinkBelowMinInSyncFailsWaitingSends(t *testing.T) {
	m := startReplica(t, 1, func(c *SwitchConfig) { c.AllAckInSyncStateSet, c.MinInSyncReplicas = true, 2 })
	if err := m.as.ChangeToMaster(1, []int64{1, 2}, 1); err != nil {
		t.Fatal(err)
	}
	end := putOn(t, m, 3, "m")
	got := make(chan Outcome, 1)
	m.as.WaitReplicated(end, func(o Outcome) { got <- o })
	select {
	case o := <-got:
		t.Fatalf("answered %v with the set's other member unconnected", o)
	default:
	}
	m.as.SetSyncStateSet([]int64{1}, 2)
	if o := <-got; o != InSyncReplicasNotEnough {
		t.Fatalf("a send waiting when the set shrank to the master alone was answered %v, want %v", o, InSyncReplicasNotEnough)
	}
}

func TestAutoSwitchFencedRefusesAtOnce(t *testing.T) {
	m := startReplica(t, 1, func(c *SwitchConfig) { c.AllAckInSyncStateSet = true })
	if err := m.as.ChangeToMaster(1, []int64{1, 2}, 1); err != nil {
		t.Fatal(err)
	}
	end := putOn(t, m, 1, "m")
	got := make(chan Outcome, 2)
	m.as.WaitReplicated(end, func(o Outcome) { got <- o })
	m.as.SetFenced(true)
	if o := <-got; o != Fenced {
		t.Fatalf("a waiting send was answered %v after fencing", o)
	}
	m.as.WaitReplicated(end, func(o Outcome) { got <- o })
	if o := <-got; o != Fenced || o.Code() != 14 {
		t.Fatalf("fenced wait: %v", o)
	}
	ch := make(chan store.PutResult, 1)
	m.st.PutMessage(testMsg("T", 0, []byte("x")), func(r store.PutResult) { ch <- r })
	if r := <-ch; r.Status != store.ServiceNotAvailable || r.Remark != RemarkFenced {
		t.Fatalf("a put on a fenced master: %d %q", r.Status, r.Remark)
	}
	m.as.SetFenced(false)
	put(t, m.st, testMsg("T", 0, []byte("y")))
}

// ChangeToSlave stops sends at once.
func TestAutoSwitchSlaveRefusesPuts(t *testing.T) {
	s := startReplica(t, 2, nil)
	if err := s.as.ChangeToSlave(1, "127.0.0.1:1", 1); err != nil {
		t.Fatal(err)
	}
	ch := make(chan store.PutResult, 1)
	s.st.PutMessage(testMsg("T", 0, []byte("x")), func(r store.PutResult) { ch <- r })
	if r := <-ch; r.Status != store.ServiceNotAvailable || r.Remark != RemarkSlave {
		t.Fatalf("a put on a slave: %d %q", r.Status, r.Remark)
	}
	_ = time.Second
}

// A new replica of a master with two epochs gets both: every transfer is
// of one epoch, so its epoch table ends equal to the master's.
func TestAutoSwitchNewSlaveLearnsEveryEpoch(t *testing.T) {
	m := startReplica(t, 1, nil)
	if err := m.as.ChangeToMaster(1, []int64{1}, 1); err != nil {
		t.Fatal(err)
	}
	first := putOn(t, m, 50, "e1")
	if err := m.as.ChangeToMaster(2, []int64{1}, 2); err != nil {
		t.Fatal(err)
	}
	end := putOn(t, m, 50, "e2")
	want := []store.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: first}}
	if got := m.st.Epochs().Entries(); !slices.Equal(got, want) {
		t.Fatalf("master epochs %v, want %v", got, want)
	}
	s := startReplica(t, 3, nil)
	if err := s.as.ChangeToSlave(1, m.addr, 2); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new slave to catch up", func() bool { return s.log.MaxOffset() == end })
	sameLogs(t, m.log, s.log)
	if got := s.st.Epochs().Entries(); !slices.Equal(got, want) {
		t.Fatalf("slave epochs %v, want %v", got, want)
	}
}

// An asynchronous learner is streamed to but never counts: its acks do
// not confirm, and Replicas leaves it out so it is never proposed for the
// sync-state set.
func TestAutoSwitchAsyncLearnerNeverCounts(t *testing.T) {
	m := startReplica(t, 1, nil)
	l := startReplica(t, 2, func(c *SwitchConfig) { c.AsyncLearner = true })
	if err := m.as.ChangeToMaster(1, []int64{1, 2}, 1); err != nil {
		t.Fatal(err)
	}
	if err := l.as.ChangeToSlave(1, m.addr, 1); err != nil {
		t.Fatal(err)
	}
	end := putOn(t, m, 10, "m")
	eventually(t, "the learner to catch up", func() bool { return l.log.MaxOffset() == end })
	if c := m.as.ConfirmOffset(); c != 0 {
		t.Fatalf("a learner's acks confirmed %d", c)
	}
	if rs := m.as.Replicas(); len(rs) != 0 {
		t.Fatalf("Replicas lists a learner: %+v", rs)
	}
}

// syncFromLastFile: a new replica starts at the master's last CommitLog
// file.
func TestAutoSwitchSyncFromLastFile(t *testing.T) {
	m := startReplica(t, 1, nil)
	if err := m.as.ChangeToMaster(1, []int64{1}, 1); err != nil {
		t.Fatal(err)
	}
	var end int64
	for end < 3*m.cfg.MappedFileSizeCommitLog/2 {
		end = putOn(t, m, 50, "x")
	}
	s := startReplica(t, 2, func(c *SwitchConfig) { c.SyncFromLastFile = true })
	if err := s.as.ChangeToSlave(1, m.addr, 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the slave to reach the end", func() bool { return s.log.MaxOffset() == end })
	if got, want := s.log.MinOffset(), end-end%m.cfg.MappedFileSizeCommitLog; got != want {
		t.Fatalf("the slave starts at %d, want the master's last file at %d", got, want)
	}
}

// A connection the Admit rule refuses for the broker id it announced is
// closed and never acknowledges anything (apache/rocketmq#3015).
func TestAutoSwitchAdmitRefusesImpostor(t *testing.T) {
	m := startReplica(t, 1, func(c *SwitchConfig) {
		c.AllAckInSyncStateSet = true
		c.Admit = func(id int64, _ net.Addr) bool { return id == 3 }
	})
	if err := m.as.ChangeToMaster(1, []int64{1, 2}, 1); err != nil {
		t.Fatal(err)
	}
	end := putOn(t, m, 3, "m")
	imp := startReplica(t, 2, nil)
	if err := imp.as.ChangeToSlave(1, m.addr, 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the impostor to connect and be refused", func() bool { return imp.as.client.connects() >= 2 })
	if imp.log.MaxOffset() != 0 || m.as.ConfirmOffset() >= end || len(m.as.Replicas()) != 0 {
		t.Fatalf("a refused replica got %d bytes; confirm %d; replicas %+v", imp.log.MaxOffset(), m.as.ConfirmOffset(), m.as.Replicas())
	}
}

// FuzzParseMasterFrames: the slave's decoders of a master's frames never
// panic, and what they accept re-encodes to the same bytes.
func FuzzParseMasterFrames(f *testing.F) {
	f.Add(AppendMasterHandshake(nil, 100, 2, []Epoch{{1, 0}, {2, 50}}))
	var th [SwitchTransferHeaderSize]byte
	PutTransferHeader(th[:], TransferHeader{BodySize: 10, Offset: 50, Epoch: 2, EpochStart: 50, ConfirmOffset: 40})
	f.Add(th[:])
	f.Add([]byte{0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= SwitchMasterHandshakeSize {
			size, maxPhy, last := ParseMasterHandshake(b[4:])
			body := b[SwitchMasterHandshakeSize:]
			if size >= 0 && int(size) <= len(body) {
				if es, err := ParseEpochs(body[:size]); err == nil {
					if got := AppendMasterHandshake(nil, maxPhy, last, es); !bytes.Equal(got[4:], b[4:SwitchMasterHandshakeSize+int(size)]) {
						t.Fatalf("handshake round trip %x != %x", got, b)
					}
				}
			}
		}
		if len(b) >= SwitchTransferHeaderSize {
			h := ParseTransferHeader(b[4:])
			var out [SwitchTransferHeaderSize]byte
			PutTransferHeader(out[:], h)
			if !bytes.Equal(out[4:], b[4:SwitchTransferHeaderSize]) {
				t.Fatalf("transfer header round trip %x != %x", out, b[:SwitchTransferHeaderSize])
			}
		}
	})
}

// A slave holds the bytes past the confirm offset but its consumers never
// see them: its dispatch stops at the confirm offset its master sends.
func TestAutoSwitchSlaveDispatchGatedAtConfirm(t *testing.T) {
	m := startReplica(t, 1, nil)
	s := startReplica(t, 2, nil)
	if err := m.as.ChangeToMaster(1, []int64{1, 2, 3}, 1); err != nil { // 3 never connects
		t.Fatal(err)
	}
	if err := s.as.ChangeToSlave(1, m.addr, 1); err != nil {
		t.Fatal(err)
	}
	end := putOn(t, m, 40, "m")
	eventually(t, "the slave to hold every byte", func() bool { return s.log.MaxOffset() == end })
	eventually(t, "a frame after the last bytes", func() bool { return len(m.as.Replicas()) == 1 && m.as.Replicas()[0].AckOffset == end })
	if c := m.as.ConfirmOffset(); c != 0 {
		t.Fatalf("confirm %d with member 3 unconnected", c)
	}
	if d, q := s.st.DispatchedOffset(), s.st.MaxOffsetInQueue("T", 0); d != 0 || q != 0 {
		t.Fatalf("the slave dispatched to %d (queue 0 max %d) past the confirm offset 0", d, q)
	}
	m.as.SetSyncStateSet([]int64{1, 2}, 2)
	eventually(t, "the slave's queues at the new confirm offset", func() bool {
		return s.st.MaxOffsetInQueue("T", 0) == 20 && s.st.MaxOffsetInQueue("T", 1) == 20
	})
}

// The consistent point never passes the local end, even when the local
// epoch table names an epoch whose bytes never arrived (seen in the
// failover suite: a deposed master resumed after SIGSTOP held the entry
// of epoch 3 at 119112 with its log ending at 118872, cut "to" 119112 and
// was refused every transfer from there).
func TestConsistentPointNeverPastTheLocalEnd(t *testing.T) {
	for _, c := range []struct {
		name           string
		local, master  []Epoch
		localEnd, mEnd int64
		want           int64
	}{
		{"entry ahead of the bytes", []Epoch{{1, 0}, {2, 118872}, {3, 119112}}, []Epoch{{1, 0}, {2, 118872}, {3, 119112}}, 118872, 200000, 118872},
		{"older epoch ending past the local end", []Epoch{{1, 0}, {2, 500}}, []Epoch{{1, 0}, {3, 400}}, 300, 1000, 300},
		{"same tables", []Epoch{{1, 0}, {2, 100}}, []Epoch{{1, 0}, {2, 100}}, 150, 180, 150},
		{"master behind", []Epoch{{1, 0}, {2, 100}}, []Epoch{{1, 0}, {2, 100}}, 150, 120, 120},
		{"divergent epoch", []Epoch{{1, 0}, {2, 100}}, []Epoch{{1, 0}, {3, 80}}, 150, 300, 80},
	} {
		got, ok := ConsistentPoint(c.local, c.localEnd, c.master, c.mEnd)
		if !ok || got != c.want {
			t.Errorf("%s: %d %v, want %d", c.name, got, ok, c.want)
		}
	}
}

// heldSwitchLog holds a slave's AckOffset at hold while hold is not -1, as
// the store does while replicated bytes are only in its write spill.
type heldSwitchLog struct {
	switchLog
	hold *atomic.Int64
}

func (h heldSwitchLog) AckOffset() int64 {
	a := h.switchLog.AckOffset()
	if hold := h.hold.Load(); hold >= 0 {
		return min(a, hold)
	}
	return a
}

// A controller-mode slave acknowledges only what survives a kill of its
// process (AckOffset), not bytes still waiting in memory: a master with
// allAckInSyncStateSet answers a put only once the slave may acknowledge
// it.
func TestAutoSwitchSlaveAcknowledgesOnlyWhatSurvivesAKill(t *testing.T) {
	m := startReplica(t, 1, func(c *SwitchConfig) { c.AllAckInSyncStateSet = true })
	hold := &atomic.Int64{}
	hold.Store(-1)
	s := startReplica(t, 2, func(c *SwitchConfig) {
		c.Log = heldSwitchLog{switchLog: c.Log.(switchLog), hold: hold}
	})
	if err := m.as.ChangeToMaster(1, []int64{1, 2}, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.as.ChangeToSlave(1, m.addr, 1); err != nil {
		t.Fatal(err)
	}
	first := putOn(t, m, 3, "first")
	got := make(chan Outcome, 1)
	m.as.WaitReplicated(first, func(o Outcome) { got <- o })
	if o := <-got; o != ReplicaOK {
		t.Fatalf("first: %v", o)
	}
	hold.Store(first)
	end := putOn(t, m, 5, "held")
	m.as.WaitReplicated(end, func(o Outcome) { got <- o })
	eventually(t, "the slave to hold the bytes", func() bool { return s.log.MaxOffset() == end })
	time.Sleep(200 * time.Millisecond) // several reports
	select {
	case o := <-got:
		t.Fatalf("answered %v while the slave held the bytes only in memory", o)
	default:
	}
	hold.Store(-1)
	if o := <-got; o != ReplicaOK {
		t.Fatalf("after the hold: %v", o)
	}
}
