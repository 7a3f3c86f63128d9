package ha

import (
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/internal/testkit/faultproxy"
	"github.com/spoolmq/spool/internal/vfs"
)

func TestSlaveReplicatesTheMastersLogAndQueues(t *testing.T) {
	ms, ss := openStore(t, vfs.OS()), openStore(t, vfs.OS())
	fill(t, ms.st, 1000) // several 64 KiB files before the slave connects
	m, addr := startMaster(t, MasterConfig{Log: ms.log, Admit: admitAll})
	startSlave(t, SlaveConfig{Log: ss.log, MasterAddr: addr})
	// More while it streams, announced with Notify.
	for i := 0; i < 5; i++ {
		fill(t, ms.st, 100)
		m.Notify()
	}
	end := ms.log.MaxOffset()
	eventually(t, "the slave's acknowledgement to reach the master's end", func() bool { return ackOf(m) == end })
	sameLogs(t, ms.log, ss.log)
	if got := m.ReplicatedOffset(); got != end {
		t.Fatalf("replicated offset %d, want %d", got, end)
	}
	if m.InSyncSlaves() != 1 {
		t.Fatalf("in-sync slaves %d, want 1", m.InSyncSlaves())
	}
	eventually(t, "the slave to dispatch", func() bool { return ss.st.MaxOffsetInQueue("T", 1) == 750 })
	ms.st.Shutdown()
	ss.st.Shutdown()
	sameQueues(t, ms.dir, ss.dir)
}

func TestSlaveReconnectsAfterACutAndResumesAtItsEnd(t *testing.T) {
	ms, ss := openStore(t, vfs.OS()), openStore(t, vfs.OS())
	clk := testkit.Clock()
	m, addr := startMaster(t, MasterConfig{Log: ms.log, Admit: admitAll, Clock: clk})
	px, err := faultproxy.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	s := startSlave(t, SlaveConfig{Log: ss.log, MasterAddr: px.Addr(), Clock: clk})
	end := fill(t, ms.st, 300)
	m.Notify()
	eventually(t, "the first catch-up", func() bool { return ackOf(m) == end })

	px.Refuse(true)
	px.Cut()
	eventually(t, "the master to drop the connection", func() bool { return m.ConnectionCount() == 0 })
	end = fill(t, ms.st, 300)
	px.Refuse(false)
	// The slave waits reconnectInterval on the clock between dials.
	eventually(t, "the slave to reconnect", func() bool {
		clk.Advance(DefaultReconnectInterval)
		return m.ConnectionCount() == 1 && s.Connected()
	})
	m.Notify()
	eventually(t, "the second catch-up", func() bool { return ackOf(m) == end })
	sameLogs(t, ms.log, ss.log)
	if s.Connects() < 2 {
		t.Fatalf("connects %d, want at least 2", s.Connects())
	}
}

// rawPeer dials the master as a fake slave.
func rawPeer(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func sendReport(t *testing.T, c net.Conn, off int64) {
	t.Helper()
	var b [ReportSize]byte
	PutReport(b[:], off)
	if _, err := c.Write(b[:]); err != nil {
		t.Fatal(err)
	}
}

// closedByPeer reads until the master closes the connection.
func closedByPeer(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.Copy(io.Discard, c); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the master kept the connection open")
		}
	}
}

func TestBadReportsCloseTheConnectionAndAckNothing(t *testing.T) {
	ms := openStore(t, vfs.OS())
	end := fill(t, ms.st, 50)
	m, addr := startMaster(t, MasterConfig{Log: ms.log, Admit: admitAll})
	cases := []struct {
		name string
		send func(c net.Conn)
	}{
		{"beyond the master's end", func(c net.Conn) { sendReport(t, c, end+1) }},
		{"negative (garbage)", func(c net.Conn) { c.Write([]byte{0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa, 0xf9, 0xf8}) }},
		{"moves backwards", func(c net.Conn) { sendReport(t, c, 200); sendReport(t, c, 100) }},
		{"a partial report", func(c net.Conn) { c.Write([]byte{0, 0, 1}); c.(*net.TCPConn).CloseWrite() }},
	}
	for _, tc := range cases[:3] {
		t.Run(tc.name, func(t *testing.T) {
			c := rawPeer(t, addr)
			tc.send(c)
			closedByPeer(t, c)
			eventually(t, "the connection to go", func() bool { return m.ConnectionCount() == 0 })
			if got := m.ReplicatedOffset(); got > 200 {
				t.Fatalf("a bad report was acknowledged: replicated offset %d", got)
			}
		})
	}
	t.Run("a partial report", func(t *testing.T) {
		c := rawPeer(t, addr)
		cases[3].send(c)
		closedByPeer(t, c)
		eventually(t, "the connection to go", func() bool { return m.ConnectionCount() == 0 })
	})
	// A fake slave that claims the end at once acknowledges what it holds
	// (the first report is its start point); one that then claims more
	// than it was sent is closed.
	t.Run("beyond what it was sent", func(t *testing.T) {
		// No polling and a clock that does not move: the transfer loop
		// sends only what it finds when the first report arrives.
		m2, addr2 := startMaster(t, MasterConfig{Log: ms.log, Admit: admitAll, Clock: testkit.Clock(), PollInterval: time.Hour})
		c := rawPeer(t, addr2)
		sendReport(t, c, 100)
		eventually(t, "the first report and its transfer", func() bool {
			s := m2.Slaves()
			return ackOf(m2) == 100 && len(s) == 1 && s[0].SentEnd == end
		})
		put(t, ms.st, testMsg("T", 0, []byte("more")))
		newEnd := ms.log.MaxOffset() // within the log, never sent
		sendReport(t, c, newEnd)
		closedByPeer(t, c)
		eventually(t, "the connection to go", func() bool { return m2.ConnectionCount() == 0 })
		if got := m2.ReplicatedOffset(); got >= newEnd {
			t.Fatalf("an unsent offset was acknowledged: %d", got)
		}
	})
}

func TestUnadmittedPeersAcksNeverCount(t *testing.T) {
	ms, ss := openStore(t, vfs.OS()), openStore(t, vfs.OS())
	end := fill(t, ms.st, 200)
	refuse := func(net.Addr) (string, bool) { return "", false }
	m, addr := startMaster(t, MasterConfig{Log: ms.log, Admit: refuse})
	startSlave(t, SlaveConfig{Log: ss.log, MasterAddr: addr})
	// The stream still flows (the slave gets the bytes) ...
	eventually(t, "the slave to copy the log", func() bool { return ss.log.MaxOffset() == end })
	// ... but nothing it reports counts.
	if got := m.ReplicatedOffset(); got != -1 {
		t.Fatalf("replicated offset %d from an unadmitted peer", got)
	}
	if n := m.InSyncSlaves(); n != 0 {
		t.Fatalf("%d in-sync slaves, want 0", n)
	}
	got := make(chan Outcome, 1)
	m.WaitReplicated(end, func(o Outcome) { got <- o })
	if o := <-got; o != SlaveNotAvailable {
		t.Fatalf("wait answered %v, want SLAVE_NOT_AVAILABLE", o)
	}
	for _, s := range m.Slaves() {
		if s.Admitted || s.AckOffset != -1 {
			t.Fatalf("unadmitted connection shows %+v", s)
		}
	}
}

// fakeMaster accepts one slave, reads its first report and answers with
// a header at the given offset.
func fakeMaster(t *testing.T, offsetFor func(report int64) int64) (string, <-chan int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	reports := make(chan int64, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var b [ReportSize]byte
				if _, err := io.ReadFull(c, b[:]); err != nil {
					return
				}
				reports <- ParseReport(b[:])
				var h [HeaderSize]byte
				PutHeader(h[:], offsetFor(ParseReport(b[:])), 0)
				c.Write(h[:])
				io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().String(), reports
}

func TestSlaveStopsOnAnOffsetMismatchAndResumesWhenTold(t *testing.T) {
	ss := openStore(t, vfs.OS())
	local := fill(t, ss.st, 20)
	addr, reports := fakeMaster(t, func(r int64) int64 { return r + 4096 })
	s := startSlave(t, SlaveConfig{Log: ss.log, MasterAddr: addr})
	if r := <-reports; r != local {
		t.Fatalf("first report %d, want the slave's end %d", r, local)
	}
	eventually(t, "the slave to stop", func() bool { return s.Err() != nil })
	err := s.Err()
	var mm *MismatchError
	if !errors.As(err, &mm) || !errors.Is(err, ErrOffsetMismatch) || mm.Offset != local+4096 || mm.End != local {
		t.Fatalf("stop error %v, want a mismatch at %d against %d", err, local+4096, local)
	}
	if want := "offset " + strconv.FormatInt(local+4096, 10); !strings.Contains(err.Error(), want) {
		t.Fatalf("stop error %q does not name %q", err, want)
	}
	if ss.log.MaxOffset() != local {
		t.Fatalf("the slave's log moved to %d", ss.log.MaxOffset())
	}
	if s.Connected() || s.Connects() != 1 {
		t.Fatalf("connected %v after %d connects: a stopped slave must not reconnect", s.Connected(), s.Connects())
	}
	s.Resume()
	if r := <-reports; r != local {
		t.Fatalf("report after resume %d, want %d", r, local)
	}
}

// failingLog fails appends while full is set, as a full disk does.
type failingLog struct {
	Log
	full atomic.Bool
}

func (f *failingLog) AppendReplicated(off int64, b []byte) error {
	if f.full.Load() && len(b) > 0 {
		return syscall.ENOSPC
	}
	return f.Log.AppendReplicated(off, b)
}

func TestSlaveStopsOnAWriteErrorAndResumes(t *testing.T) {
	ms, ss := openStore(t, vfs.OS()), openStore(t, vfs.OS())
	m, addr := startMaster(t, MasterConfig{Log: ms.log, Admit: admitAll})
	fl := &failingLog{Log: ss.log}
	fl.full.Store(true)
	s := startSlave(t, SlaveConfig{Log: fl, MasterAddr: addr})
	end := fill(t, ms.st, 100)
	m.Notify()
	eventually(t, "the slave to stop", func() bool { return s.Err() != nil })
	if !errors.Is(s.Err(), syscall.ENOSPC) || !strings.Contains(s.Err().Error(), "stopped at CommitLog offset 0") {
		t.Fatalf("stop error %v", s.Err())
	}
	fl.full.Store(false)
	s.Resume()
	eventually(t, "the catch-up after resume", func() bool { return ackOf(m) == end })
	sameLogs(t, ms.log, ss.log)
}

func TestHeartbeatsAndHousekeepingOnTheClock(t *testing.T) {
	ms := openStore(t, vfs.OS())
	end := fill(t, ms.st, 5)
	clk := testkit.Clock()
	m, addr := startMaster(t, MasterConfig{Log: ms.log, Admit: admitAll, Clock: clk})
	c := rawPeer(t, addr)
	sendReport(t, c, end) // caught up: nothing to send
	eventually(t, "the report", func() bool { return ackOf(m) == end })
	// Idle for haSendHeartbeatInterval: a header with body size 0 at the end.
	var h [HeaderSize]byte
	done := make(chan error, 1)
	go func() { _, err := io.ReadFull(c, h[:]); done <- err }()
	eventually(t, "the heartbeat", func() bool {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return true
		default:
			clk.Advance(time.Second)
			return false
		}
	})
	if off, size := ParseHeader(h[:]); off != end || size != 0 {
		t.Fatalf("heartbeat header offset %d size %d, want %d and 0", off, size, end)
	}
	// Silent for longer than haHousekeepingInterval: closed.
	eventually(t, "housekeeping to close the silent peer", func() bool {
		clk.Advance(time.Second)
		return m.ConnectionCount() == 0
	})
	closedByPeer(t, c)
}

func TestSlaveReportsOnItsHeartbeatInterval(t *testing.T) {
	ss := openStore(t, vfs.OS())
	local := fill(t, ss.st, 3)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	clk := testkit.Clock()
	startSlave(t, SlaveConfig{Log: ss.log, MasterAddr: ln.Addr().String(), Clock: clk})
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b [ReportSize]byte
	if _, err := io.ReadFull(c, b[:]); err != nil || ParseReport(b[:]) != local {
		t.Fatalf("first report %d, %v; want %d", ParseReport(b[:]), err, local)
	}
	// Keep the slave's housekeeping quiet with master heartbeats.
	var h [HeaderSize]byte
	PutHeader(h[:], local, 0)
	got := make(chan int64, 4)
	go func() {
		for {
			if _, err := io.ReadFull(c, b[:]); err != nil {
				return
			}
			got <- ParseReport(b[:])
		}
	}()
	c.Write(h[:])
	eventually(t, "a heartbeat report", func() bool {
		select {
		case r := <-got:
			if r != local {
				t.Fatalf("heartbeat report %d, want %d", r, local)
			}
			return true
		default:
			clk.Advance(time.Second)
			return false
		}
	})
}

var _ clock.Clock = testkit.Clock()

// A slave whose log runs past the master's end (it followed another
// master) is refused by the master at its first report, and redials only
// after reconnectInterval.
func TestSlaveAheadOfTheMasterIsRefusedWithoutATightLoop(t *testing.T) {
	ms, ss := openStore(t, vfs.OS()), openStore(t, vfs.OS())
	fill(t, ms.st, 10)
	fill(t, ss.st, 50)
	clk := testkit.Clock()
	m, addr := startMaster(t, MasterConfig{Log: ms.log, Admit: admitAll, Clock: clk})
	s := startSlave(t, SlaveConfig{Log: ss.log, MasterAddr: addr, Clock: clk})
	eventually(t, "the refusal", func() bool { return s.Connects() == 1 && !s.Connected() && m.ConnectionCount() == 0 })
	if got := m.ReplicatedOffset(); got != -1 {
		t.Fatalf("replicated offset %d from a refused report", got)
	}
	if s.Connects() != 1 {
		t.Fatalf("%d connects before reconnectInterval passed", s.Connects())
	}
	eventually(t, "the redial", func() bool {
		clk.Advance(time.Second)
		return s.Connects() >= 2
	})
}

// Transfers of 97 bytes cut records anywhere; the connection is cut over
// and over mid-stream; every reconnect resumes at the slave's end (inside
// a record) and the copy ends byte for byte equal, queues included.
func TestCutsMidRecordResumeAtTheSlavesEnd(t *testing.T) {
	ms, ss := openStore(t, vfs.OS()), openStore(t, vfs.OS())
	end := fill(t, ms.st, 300)
	clk := testkit.Clock()
	// Flow control on the manual clock paces the copy (at most 400 bytes
	// per advance), so the catch-up cannot outrun the cuts however fast
	// the machine is.
	m, addr := startMaster(t, MasterConfig{Log: ms.log, Admit: admitAll, Clock: clk, TransferBatchSize: 97,
		FlowControl: true, MaxTransferBytesPerSecond: 400})
	px, err := faultproxy.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	s := startSlave(t, SlaveConfig{Log: ss.log, MasterAddr: px.Addr(), Clock: clk})
	cuts := 0
	last := int64(-1)
	t.Cleanup(func() {
		t.Logf("end %d ack %d slave %d connects %d err %v cuts %d conns %d", end, ackOf(m), ss.log.MaxOffset(), s.Connects(), s.Err(), cuts, m.ConnectionCount())
	})
	eventually(t, "the catch-up through cuts", func() bool {
		if ackOf(m) == end {
			return true
		}
		if got := ss.log.MaxOffset(); got != last && cuts < 20 && got > 0 {
			last = got
			px.Cut()
			cuts++
		}
		clk.Advance(DefaultReconnectInterval)
		return false
	})
	if cuts < 5 {
		t.Fatalf("only %d cuts happened", cuts)
	}
	if s.Err() != nil {
		t.Fatalf("the slave stopped: %v", s.Err())
	}
	sameLogs(t, ms.log, ss.log)
	eventually(t, "the slave to dispatch", func() bool { return ss.st.MaxOffsetInQueue("T", 1) == 150 })
	ms.st.Shutdown()
	ss.st.Shutdown()
	sameQueues(t, ms.dir, ss.dir)
}

// A slave whose disk fills stops replicating with the write error and
// resumes, without a gap, once space returns and it is told to.
func TestSlaveDiskFullStopsAndResumes(t *testing.T) {
	inj := vfs.NewInjector(vfs.OS())
	ms := openStore(t, vfs.OS())
	scfg := testkit.StoreConfig(t.TempDir(), testkit.Small)
	scfg.WriteWithoutMmap = true // every CommitLog write goes through pwrite
	ss := openStoreAt(t, scfg, inj)
	m, addr := startMaster(t, MasterConfig{Log: ms.log, Admit: admitAll})
	s := startSlave(t, SlaveConfig{Log: ss.log, MasterAddr: addr})
	end := fill(t, ms.st, 100)
	m.Notify()
	eventually(t, "the first catch-up", func() bool { return ackOf(m) == end })

	inj.SetENOSPCOn("commitlog", true, true)
	end = fill(t, ms.st, 100)
	m.Notify()
	eventually(t, "the slave to stop", func() bool { return s.Err() != nil })
	var se *StopError
	if !errors.As(s.Err(), &se) || !errors.Is(s.Err(), syscall.ENOSPC) {
		t.Fatalf("stop error %v, want a StopError wrapping ENOSPC", s.Err())
	}
	held := ss.log.MaxOffset()
	if se.Offset != held {
		t.Fatalf("stopped at %d, the slave holds %d", se.Offset, held)
	}

	inj.SetENOSPCOn("", false, false)
	s.Resume()
	eventually(t, "the catch-up after space returned", func() bool { return ackOf(m) == end })
	sameLogs(t, ms.log, ss.log)
	eventually(t, "the slave to dispatch", func() bool { return ss.st.MaxOffsetInQueue("T", 1) == 100 })
}

// A peer refused when it connects (its registration not yet known) is
// asked about again on its reports and counts once admitted.
func TestRefusedPeerAdmittedLater(t *testing.T) {
	ms, ss := openStore(t, vfs.OS()), openStore(t, vfs.OS())
	end := fill(t, ms.st, 50)
	var calls atomic.Int32
	later := func(net.Addr) (string, bool) { return "slave-1", calls.Add(1) > 1 }
	m, addr := startMaster(t, MasterConfig{Log: ms.log, Admit: later, SendHeartbeatInterval: 20 * time.Millisecond})
	startSlave(t, SlaveConfig{Log: ss.log, MasterAddr: addr, SendHeartbeatInterval: 20 * time.Millisecond})
	eventually(t, "the refused slave admitted and acknowledging", func() bool { return m.ReplicatedOffset() == end })
	if calls.Load() < 2 {
		t.Fatalf("Admit asked %d times, want a second ask", calls.Load())
	}
}
