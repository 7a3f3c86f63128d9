package ha

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/internal/testkit/faultproxy"
	"github.com/spoolmq/spool/internal/vfs"
)

func TestCopiesAndAdmit(t *testing.T) {
	for _, tc := range []struct {
		inSyncReplicas, inSyncSlaves int
		copies                       int
		want                         Outcome
		wait                         bool
	}{
		{1, 0, 2, SlaveNotAvailable, false}, // RocketMQ 5 would not wait at all; Spool needs a slave
		{1, 1, 2, ReplicaOK, true},
		{2, 0, 2, SlaveNotAvailable, false},
		{2, 3, 2, ReplicaOK, true},
		{3, 1, 3, SlaveNotAvailable, false}, // two slaves needed, one in sync
		{3, 2, 3, ReplicaOK, true},
		{0, 1, 2, ReplicaOK, true},
	} {
		c := Copies(tc.inSyncReplicas)
		if c != tc.copies {
			t.Errorf("Copies(%d) = %d, want %d", tc.inSyncReplicas, c, tc.copies)
		}
		o, wait := Admit(tc.inSyncSlaves, c)
		if o != tc.want || wait != tc.wait {
			t.Errorf("Admit(%d in sync, %d copies) = %v, %v; want %v, %v", tc.inSyncSlaves, c, o, wait, tc.want, tc.wait)
		}
	}
	if SlaveNotAvailable.Code() != 11 || FlushSlaveTimeout.Code() != 12 || ReplicaOK.Code() != 0 {
		t.Fatal("response codes are RocketMQ's: SLAVE_NOT_AVAILABLE 11, FLUSH_SLAVE_TIMEOUT 12")
	}
}

func TestQuorumOffset(t *testing.T) {
	for _, tc := range []struct {
		acks   []int64
		copies int
		want   int64
	}{
		{nil, 2, -1},
		{[]int64{100}, 2, 100},
		{[]int64{100, 300, 200}, 2, 300},
		{[]int64{100, 300, 200}, 3, 200},
		{[]int64{100, 300, 200}, 4, 100},
		{[]int64{100, 300}, 4, -1},
	} {
		if got := QuorumOffset(tc.acks, tc.copies); got != tc.want {
			t.Errorf("QuorumOffset(%v, %d) = %d, want %d", tc.acks, tc.copies, got, tc.want)
		}
	}
}

func TestSyncWaitersDecisions(t *testing.T) {
	t0 := testkit.Epoch
	var w SyncWaiters[string]
	if !w.Add(300, t0.Add(3*time.Second), "c") {
		t.Fatal("the first waiter sets the earliest deadline")
	}
	if !w.Add(100, t0.Add(1*time.Second), "a") {
		t.Fatal("an earlier deadline re-arms")
	}
	if w.Add(200, t0.Add(2*time.Second), "b") {
		t.Fatal("a later deadline does not re-arm")
	}
	if got := w.Covered(99, nil); len(got) != 0 {
		t.Fatalf("covered(99) = %v", got)
	}
	if got := w.Covered(200, nil); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("covered(200) = %v, want [a b] in end order", got)
	}
	got, next := w.Expired(t0.Add(2*time.Second), nil)
	if len(got) != 0 || !next.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("expired before the deadline = %v, next %v", got, next)
	}
	got, next = w.Expired(t0.Add(3*time.Second), nil)
	if len(got) != 1 || got[0] != "c" || !next.IsZero() || w.Len() != 0 {
		t.Fatalf("expired at the deadline = %v, next %v, len %d", got, next, w.Len())
	}
	w.Add(1, t0, "x")
	if d := w.Drain(nil); len(d) != 1 || w.Len() != 0 || !w.Next().IsZero() {
		t.Fatalf("drain = %v", d)
	}
}

func TestGroupTransferAnswers(t *testing.T) {
	clk := testkit.Clock()
	g := NewGroupTransfer(clk)
	defer g.Close()
	res := make(chan Outcome, 8)
	done := func(o Outcome) { res <- o }

	g.Wait(100, 3*time.Second, 0, 2, done)
	if o := <-res; o != SlaveNotAvailable {
		t.Fatalf("no slave in sync: %v, want SLAVE_NOT_AVAILABLE at once", o)
	}
	g.Wait(100, 3*time.Second, 1, 2, done)
	g.Wait(200, 3*time.Second, 1, 2, done)
	g.Advance(150)
	if o := <-res; o != ReplicaOK {
		t.Fatalf("covered: %v", o)
	}
	if g.Pending() != 1 {
		t.Fatalf("pending %d, want 1", g.Pending())
	}
	// Not covered within slaveTimeout: FLUSH_SLAVE_TIMEOUT when the clock
	// reaches the deadline, not before.
	clk.Advance(2 * time.Second)
	select {
	case o := <-res:
		t.Fatalf("answered %v before the deadline", o)
	default:
	}
	eventually(t, "the timeout", func() bool {
		select {
		case o := <-res:
			if o != FlushSlaveTimeout {
				t.Fatalf("%v, want FLUSH_SLAVE_TIMEOUT", o)
			}
			return true
		default:
			clk.Advance(100 * time.Millisecond)
			return false
		}
	})
	// Already replicated: answered at once.
	g.Wait(150, time.Second, 1, 2, done)
	if o := <-res; o != ReplicaOK {
		t.Fatalf("already covered: %v", o)
	}
}

// The master's wait over real connections: OK once the slave holds the
// message, FLUSH_SLAVE_TIMEOUT while the stream is stalled, and
// SLAVE_NOT_AVAILABLE with no slave.
func TestMasterWaitReplicatedOverLoopback(t *testing.T) {
	ms, ss := openStore(t, vfs.OS()), openStore(t, vfs.OS())
	clk := testkit.Clock()
	m, addr := startMaster(t, MasterConfig{Log: ms.log, Admit: admitAll, Clock: clk, SlaveTimeout: 3 * time.Second})
	res := make(chan Outcome, 4)
	done := func(o Outcome) { res <- o }

	end := put(t, ms.st, testMsg("T", 0, []byte("first")))
	m.WaitReplicated(end, done)
	if o := <-res; o != SlaveNotAvailable {
		t.Fatalf("no slave: %v, want SLAVE_NOT_AVAILABLE", o)
	}

	px, err := faultproxy.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	startSlave(t, SlaveConfig{Log: ss.log, MasterAddr: px.Addr(), Clock: clk})
	eventually(t, "the slave in sync", func() bool { return m.InSyncSlaves() == 1 && ackOf(m) == end })

	end = put(t, ms.st, testMsg("T", 0, []byte("second")))
	m.WaitReplicated(end, done)
	m.Notify()
	if o := <-res; o != ReplicaOK {
		t.Fatalf("replicated: %v, want PUT_OK", o)
	}

	px.Stall(faultproxy.Down)
	end = put(t, ms.st, testMsg("T", 0, []byte("third")))
	m.WaitReplicated(end, done)
	m.Notify()
	eventually(t, "FLUSH_SLAVE_TIMEOUT", func() bool {
		select {
		case o := <-res:
			if o != FlushSlaveTimeout {
				t.Fatalf("stalled: %v, want FLUSH_SLAVE_TIMEOUT", o)
			}
			return true
		default:
			clk.Advance(500 * time.Millisecond)
			return false
		}
	})
	px.Unstall(faultproxy.Down)
	eventually(t, "the slave to catch up after the stall", func() bool { return ackOf(m) == end })
}

// haFlowControlEnable: the bytes sent to slaves stay within
// maxHaTransferByteInSecond of the clock's time, and the slave still
// catches up as the clock moves.
func TestFlowControlCapsTheTransferRate(t *testing.T) {
	ms, ss := openStore(t, vfs.OS()), openStore(t, vfs.OS())
	end := fill(t, ms.st, 600) // about 130 KB
	clk := testkit.Clock()
	const perSecond = 20000
	m, addr := startMaster(t, MasterConfig{Log: ms.log, Admit: admitAll, Clock: clk,
		FlowControl: true, MaxTransferBytesPerSecond: perSecond, TransferBatchSize: 4096})
	startSlave(t, SlaveConfig{Log: ss.log, MasterAddr: addr, Clock: clk})
	start := clk.Now()
	eventually(t, "the catch-up under flow control", func() bool {
		elapsed := clk.Since(start).Seconds()
		if got, budget := ss.log.MaxOffset(), int64(perSecond*(1+elapsed)); got > budget {
			t.Fatalf("the slave holds %d bytes after %.1f s of clock, over the budget %d", got, elapsed, budget)
		}
		if ackOf(m) == end {
			return true
		}
		if ss.log.MaxOffset() > 0 {
			clk.Advance(100 * time.Millisecond)
		}
		return false
	})
	if elapsed := clk.Since(start); elapsed < time.Duration(float64(end)/perSecond-1)*time.Second {
		t.Fatalf("caught up %d bytes in %v of clock: flow control did not hold it back", end, elapsed)
	}
}

// Two connections of one slave are one copy: with inSyncReplicas=3 (two
// slaves needed) they never make a quorum; a second slave does.
func TestConnectionsOfOneSlaveCountOnce(t *testing.T) {
	ms := openStore(t, vfs.OS())
	end := fill(t, ms.st, 20)
	var mu sync.Mutex
	var next string
	admit := func(net.Addr) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		return next, true
	}
	setNext := func(n string) { mu.Lock(); next = n; mu.Unlock() }
	m, addr := startMaster(t, MasterConfig{Log: ms.log, Admit: admit, InSyncReplicas: 3})
	setNext("slave-1")
	a := rawPeer(t, addr)
	eventually(t, "the first connection", func() bool { return m.ConnectionCount() == 1 })
	b := rawPeer(t, addr)
	eventually(t, "the second connection", func() bool { return m.ConnectionCount() == 2 })
	sendReport(t, a, end)
	sendReport(t, b, end)
	eventually(t, "both reports", func() bool {
		n := 0
		for _, s := range m.Slaves() {
			if s.AckOffset == end {
				n++
			}
		}
		return n == 2
	})
	if got := m.ReplicatedOffset(); got != -1 {
		t.Fatalf("one slave on two connections made a quorum of three copies: %d", got)
	}
	if m.InSyncSlaves() != 1 {
		t.Fatalf("in-sync slaves %d, want 1", m.InSyncSlaves())
	}
	setNext("slave-2")
	c := rawPeer(t, addr)
	eventually(t, "the third connection", func() bool { return m.ConnectionCount() == 3 })
	sendReport(t, c, end)
	eventually(t, "the quorum", func() bool { return m.ReplicatedOffset() == end })
	if m.InSyncSlaves() != 2 {
		t.Fatalf("in-sync slaves %d, want 2", m.InSyncSlaves())
	}
}
