package ha

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/spoolmq/spool/internal/clock"
)

// MasterConfig configures a Master. Zero durations and sizes take
// RocketMQ's defaults.
type MasterConfig struct {
	Log Log
	// Admit says whether a peer is a slave registered for this broker
	// name and names it (one name per slave: several connections of one
	// slave count as one copy). Reports from a peer it refuses are
	// streamed to but never count as acknowledgements. nil admits no one.
	// It is asked when a peer connects and again, at most every
	// SendHeartbeatInterval, on the reports of a peer it refused (a slave
	// may dial before its registration reaches the name servers).
	Admit  func(remote net.Addr) (slave string, ok bool)
	Clock  clock.Clock
	Logger *slog.Logger

	SendHeartbeatInterval time.Duration // haSendHeartbeatInterval
	HousekeepingInterval  time.Duration // haHousekeepingInterval
	TransferBatchSize     int           // haTransferBatchSize
	MaxGapNotInSync       int64         // haMaxGapNotInSync
	InSyncReplicas        int           // inSyncReplicas (copies = max(it, 2))
	SlaveTimeout          time.Duration // slaveTimeout
	// FlowControl (haFlowControlEnable) caps the bytes sent to all slaves
	// together at MaxTransferBytesPerSecond (maxHaTransferByteInSecond).
	FlowControl               bool
	MaxTransferBytesPerSecond int64
	// PollInterval bounds how long an idle transfer loop waits for new
	// bytes when Notify is not called (RocketMQ waits 100 ms).
	PollInterval time.Duration
}

func (c *MasterConfig) defaults() {
	c.Clock = clock.Or(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.SendHeartbeatInterval <= 0 {
		c.SendHeartbeatInterval = DefaultSendHeartbeatInterval
	}
	if c.HousekeepingInterval <= 0 {
		c.HousekeepingInterval = DefaultHousekeepingInterval
	}
	if c.TransferBatchSize <= 0 {
		c.TransferBatchSize = DefaultTransferBatchSize
	}
	if c.MaxGapNotInSync <= 0 {
		c.MaxGapNotInSync = DefaultMaxGapNotInSync
	}
	if c.SlaveTimeout <= 0 {
		c.SlaveTimeout = DefaultSlaveTimeout
	}
	if c.MaxTransferBytesPerSecond <= 0 {
		c.MaxTransferBytesPerSecond = DefaultMaxTransferBytesPerSecond
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 100 * time.Millisecond
	}
}

// SlaveState is one connection's figures.
type SlaveState struct {
	Remote   string // peer address
	Slave    string // the admitted slave's name; empty when not admitted
	Admitted bool
	// AckOffset is the last offset the slave reported (-1 before its
	// first report).
	AckOffset int64
	LagBytes  int64         // master end minus AckOffset
	LagTime   time.Duration // how long the slave has been behind the master's end
	InSync    bool          // admitted and LagBytes <= haMaxGapNotInSync
	SentEnd   int64         // end of what was sent on the connection
}

// Master serves slaves on the HA port: it accepts connections, streams
// the CommitLog to each and keeps what each acknowledged.
type Master struct {
	cfg   MasterConfig
	group *GroupTransfer
	flow  *rate.Limiter // nil without flow control; read at the clock's times

	mu     sync.Mutex
	ln     net.Listener
	conns  map[*masterConn]struct{}
	closed bool

	stop chan struct{}
	wg   sync.WaitGroup
}

// NewMaster returns a master; Serve starts it on a listener.
func NewMaster(cfg MasterConfig) *Master {
	cfg.defaults()
	m := &Master{cfg: cfg, group: NewGroupTransfer(cfg.Clock), conns: map[*masterConn]struct{}{}, stop: make(chan struct{})}
	if cfg.FlowControl {
		r := cfg.MaxTransferBytesPerSecond
		m.flow = rate.NewLimiter(rate.Limit(r), int(min(r, 1<<30)))
	}
	return m
}

// Serve accepts slave connections on ln until Close. It starts the
// housekeeping loop and returns once the listener is closed.
func (m *Master) Serve(ln net.Listener) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	m.ln = ln
	m.wg.Add(1)
	go m.housekeep()
	m.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			select {
			case <-m.stop:
				return nil
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		m.start(c)
	}
}

func (m *Master) start(c net.Conn) {
	mc := &masterConn{m: m, c: c, remote: c.RemoteAddr().String(), ack: -1, lastReport: -1, wake: make(chan struct{}, 1),
		started: make(chan struct{}), done: make(chan struct{}), lastRead: m.cfg.Clock.Now(), admitTried: m.cfg.Clock.Now()}
	if m.cfg.Admit != nil {
		mc.slave, mc.admitted = m.cfg.Admit(c.RemoteAddr())
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		c.Close()
		return
	}
	m.conns[mc] = struct{}{}
	m.wg.Add(2)
	m.mu.Unlock()
	m.cfg.Logger.Info("ha: slave connected", "remote", mc.remote, "admitted", mc.admitted, "slave", mc.slave)
	go mc.readLoop()
	go mc.transferLoop()
}

// Close stops accepting, closes every connection and answers the waiting
// puts.
func (m *Master) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	close(m.stop)
	if m.ln != nil {
		m.ln.Close()
	}
	conns := make([]*masterConn, 0, len(m.conns))
	for mc := range m.conns {
		conns = append(conns, mc)
	}
	m.mu.Unlock()
	for _, mc := range conns {
		mc.close("master closing")
	}
	m.wg.Wait()
	m.group.Close()
}

// Notify tells the transfer loops that the log grew.
func (m *Master) Notify() {
	m.mu.Lock()
	for mc := range m.conns {
		select {
		case mc.wake <- struct{}{}:
		default:
		}
	}
	m.mu.Unlock()
}

// ConnectionCount is the number of open HA connections.
func (m *Master) ConnectionCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.conns)
}

// Slaves returns every connection's figures.
func (m *Master) Slaves() []SlaveState {
	end := m.cfg.Log.MaxOffset()
	now := m.cfg.Clock.Now()
	m.mu.Lock()
	conns := make([]*masterConn, 0, len(m.conns))
	for mc := range m.conns {
		conns = append(conns, mc)
	}
	m.mu.Unlock()
	out := make([]SlaveState, 0, len(conns))
	for _, mc := range conns {
		out = append(out, mc.state(end, now))
	}
	return out
}

// InSyncSlaves is the number of distinct admitted slaves whose gap is at
// most haMaxGapNotInSync.
func (m *Master) InSyncSlaves() int {
	seen := map[string]bool{}
	for _, s := range m.Slaves() {
		if s.InSync {
			seen[s.Slave] = true
		}
	}
	return len(seen)
}

// acks is the highest acknowledged offset of each distinct admitted slave.
func (m *Master) acks() []int64 {
	best := map[string]int64{}
	m.mu.Lock()
	for mc := range m.conns {
		mc.mu.Lock()
		if mc.admitted && mc.ack >= 0 {
			if a, ok := best[mc.slave]; !ok || mc.ack > a {
				best[mc.slave] = mc.ack
			}
		}
		mc.mu.Unlock()
	}
	m.mu.Unlock()
	out := make([]int64, 0, len(best))
	for _, a := range best {
		out = append(out, a)
	}
	return out
}

// ReplicatedOffset is the offset that max(inSyncReplicas, 2) copies hold
// (-1 when too few slaves acknowledged anything).
func (m *Master) ReplicatedOffset() int64 {
	return QuorumOffset(m.acks(), Copies(m.cfg.InSyncReplicas))
}

// WaitReplicated answers done once enough copies hold the records ending
// at end: ReplicaOK, FlushSlaveTimeout after slaveTimeout, or
// SlaveNotAvailable at once when too few slaves are in sync.
func (m *Master) WaitReplicated(end int64, done func(Outcome)) {
	m.group.Wait(end, m.cfg.SlaveTimeout, m.InSyncSlaves(), Copies(m.cfg.InSyncReplicas), done)
}

// PendingWaits is the number of puts waiting for replicas.
func (m *Master) PendingWaits() int { return m.group.Pending() }

func (m *Master) acked() {
	if q := m.ReplicatedOffset(); q >= 0 {
		m.group.Advance(q)
	}
}

func (m *Master) remove(mc *masterConn) {
	m.mu.Lock()
	delete(m.conns, mc)
	m.mu.Unlock()
}

// housekeep closes connections that sent nothing for
// haHousekeepingInterval.
func (m *Master) housekeep() {
	defer m.wg.Done()
	every := min(m.cfg.HousekeepingInterval/4, time.Second)
	for {
		select {
		case <-m.stop:
			return
		case <-m.cfg.Clock.After(every):
		}
		now := m.cfg.Clock.Now()
		m.mu.Lock()
		var stale []*masterConn
		for mc := range m.conns {
			mc.mu.Lock()
			if now.Sub(mc.lastRead) > m.cfg.HousekeepingInterval {
				stale = append(stale, mc)
			}
			mc.mu.Unlock()
		}
		m.mu.Unlock()
		for _, mc := range stale {
			mc.close("silent for more than haHousekeepingInterval")
		}
	}
}

// masterConn is one slave connection: a read loop for its reports and a
// transfer loop for the log.
type masterConn struct {
	m        *Master
	c        net.Conn
	remote   string
	slave    string
	admitted bool

	mu         sync.Mutex
	first      int64 // the first report (-1 before it)
	lastReport int64
	ack        int64 // last counted acknowledgement (-1 before it)
	sent       int64 // end of what was handed to the socket
	start      int64 // where the transfer began
	lastRead   time.Time
	caughtUp   time.Time // when a report last reached the master's end
	haveFirst  bool

	wake      chan struct{}
	started   chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	admitTried time.Time // last Admit call (read loop only)
}

func (mc *masterConn) state(end int64, now time.Time) SlaveState {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	s := SlaveState{Remote: mc.remote, Slave: mc.slave, Admitted: mc.admitted, AckOffset: mc.ack, SentEnd: mc.sent}
	if mc.ack >= 0 {
		s.LagBytes = max(0, end-mc.ack)
		if s.LagBytes > 0 {
			s.LagTime = now.Sub(mc.caughtUp)
		}
		s.InSync = mc.admitted && s.LagBytes <= mc.m.cfg.MaxGapNotInSync
	} else {
		s.LagBytes = end
	}
	return s
}

func (mc *masterConn) close(why string) {
	mc.closeOnce.Do(func() {
		close(mc.done)
		mc.c.Close()
		mc.m.remove(mc)
		mc.m.cfg.Logger.Info("ha: slave connection closed", "remote", mc.remote, "reason", why)
	})
}

// readLoop reads the slave's 8-byte reports.
func (mc *masterConn) readLoop() {
	defer mc.m.wg.Done()
	var b [ReportSize]byte
	for {
		if _, err := io.ReadFull(mc.c, b[:]); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				mc.reject("a partial offset report", "bytes", "<8")
				return
			}
			mc.close("read: " + err.Error())
			return
		}
		if !mc.report(ParseReport(b[:])) {
			return
		}
	}
}

// reject logs a bad report and closes the connection.
func (mc *masterConn) reject(why string, kv ...any) {
	mc.m.cfg.Logger.Warn("ha: closing a connection that sent a bad offset report: "+why, append([]any{"remote", mc.remote}, kv...)...)
	mc.close("bad report: " + why)
}

// report applies one report; false when it closed the connection.
func (mc *masterConn) report(off int64) bool {
	mc.readmit()
	log := mc.m.cfg.Log
	end := log.MaxOffset()
	now := mc.m.cfg.Clock.Now()
	mc.mu.Lock()
	switch {
	case off < 0:
		mc.mu.Unlock()
		mc.reject("negative offset", "offset", off)
		return false
	case off > end:
		mc.mu.Unlock()
		mc.reject("offset beyond the master's end", "offset", off, "masterEnd", end)
		return false
	case mc.haveFirst && off < mc.lastReport:
		last := mc.lastReport
		mc.mu.Unlock()
		mc.reject("offset moved backwards", "offset", off, "previous", last)
		return false
	case mc.haveFirst && off > max(mc.first, mc.sent):
		first, sent := mc.first, mc.sent
		mc.mu.Unlock()
		mc.reject("offset beyond what this connection holds or was sent", "offset", off, "firstReport", first, "sentEnd", sent)
		return false
	}
	mc.lastRead = now
	mc.lastReport = off
	first := !mc.haveFirst
	if first {
		mc.haveFirst = true
		mc.first = off
		start := off
		if off == 0 {
			start = log.MinOffset() // a new slave: everything kept
		}
		if start < log.MinOffset() {
			mc.mu.Unlock()
			mc.reject("offset below the master's first kept offset", "offset", off, "masterMin", log.MinOffset())
			return false
		}
		mc.start, mc.sent = start, start
		mc.caughtUp = now
	}
	if off >= end {
		mc.caughtUp = now
	}
	counted := mc.admitted
	if counted {
		mc.ack = off
	}
	mc.mu.Unlock()
	if first {
		close(mc.started)
	}
	if counted {
		mc.m.acked()
	}
	return true
}

// readmit asks Admit again for a refused peer, at most every
// SendHeartbeatInterval.
func (mc *masterConn) readmit() {
	admit := mc.m.cfg.Admit
	if admit == nil {
		return
	}
	mc.mu.Lock()
	admitted := mc.admitted
	mc.mu.Unlock()
	now := mc.m.cfg.Clock.Now()
	if admitted || now.Sub(mc.admitTried) < mc.m.cfg.SendHeartbeatInterval {
		return
	}
	mc.admitTried = now
	name, ok := admit(mc.c.RemoteAddr())
	if !ok {
		return
	}
	mc.mu.Lock()
	mc.slave, mc.admitted = name, true
	mc.mu.Unlock()
	mc.m.cfg.Logger.Info("ha: slave admitted", "remote", mc.remote, "slave", name)
}

// transferLoop streams the log from the slave's start point: slices of
// one CommitLog file of at most haTransferBatchSize, and a heartbeat
// header (body size 0) when nothing was sent for haSendHeartbeatInterval.
func (mc *masterConn) transferLoop() {
	defer mc.m.wg.Done()
	select {
	case <-mc.started:
	case <-mc.done:
		return
	}
	cfg := &mc.m.cfg
	mc.mu.Lock()
	next := mc.start
	mc.mu.Unlock()
	buf := make([]byte, HeaderSize+cfg.TransferBatchSize)
	lastWrite := cfg.Clock.Now()
	var hb <-chan time.Time
	poll := time.NewTimer(cfg.PollInterval)
	defer poll.Stop()
	for {
		select {
		case <-mc.done:
			return
		default:
		}
		want := cfg.TransferBatchSize
		var throttle <-chan time.Time
		if fl := mc.m.flow; fl != nil {
			now := cfg.Clock.Now()
			want = min(want, int(fl.TokensAt(now)))
			if want <= 0 {
				// Out of budget: wait until one batch (or the whole
				// budget, when smaller) is available again.
				need := min(float64(cfg.TransferBatchSize), float64(fl.Burst()))
				wait := time.Duration((need - fl.TokensAt(now)) / float64(fl.Limit()) * float64(time.Second))
				throttle = cfg.Clock.After(max(wait, time.Millisecond))
				want = 0
			}
		}
		n, err := 0, error(nil)
		if want > 0 {
			n, err = cfg.Log.ReadAt(buf[HeaderSize:HeaderSize+want], next)
		}
		if err != nil {
			cfg.Logger.Error("ha: cannot read the CommitLog for a slave", "remote", mc.remote, "offset", next, "err", err)
			mc.close("read CommitLog: " + err.Error())
			return
		}
		if n > 0 {
			if fl := mc.m.flow; fl != nil {
				fl.AllowN(cfg.Clock.Now(), n) // spends the budget read above
			}
			PutHeader(buf, next, int32(n))
			mc.mu.Lock()
			mc.sent = next + int64(n) // before the write: the slave may answer first
			mc.mu.Unlock()
			if !mc.write(buf[:HeaderSize+n]) {
				return
			}
			next += int64(n)
			lastWrite = cfg.Clock.Now()
			hb = nil
			continue
		}
		if cfg.Clock.Since(lastWrite) >= cfg.SendHeartbeatInterval {
			PutHeader(buf, next, 0)
			if !mc.write(buf[:HeaderSize]) {
				return
			}
			lastWrite = cfg.Clock.Now()
			hb = nil
		}
		if hb == nil {
			hb = cfg.Clock.After(cfg.SendHeartbeatInterval - cfg.Clock.Since(lastWrite))
		}
		poll.Reset(cfg.PollInterval)
		select {
		case <-mc.done:
			return
		case <-mc.wake:
		case <-hb:
			hb = nil
		case <-throttle:
		case <-poll.C:
		}
	}
}

func (mc *masterConn) write(b []byte) bool {
	// A slave that stops reading is closed by housekeeping (it stops
	// reporting too); the deadline bounds a write to a dead peer.
	_ = mc.c.SetWriteDeadline(time.Now().Add(mc.m.cfg.HousekeepingInterval))
	if _, err := mc.c.Write(b); err != nil {
		mc.close("write: " + err.Error())
		return false
	}
	return true
}
