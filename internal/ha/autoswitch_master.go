package ha

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// switchConn is one slave connection on an AutoSwitch master: a read loop
// for the slave's handshake and reports and a transfer loop that sends
// the master's handshake (its epoch table) and then the log, one epoch at
// a time.
type switchConn struct {
	a      *AutoSwitch
	c      net.Conn
	remote string
	epoch  int32 // the master epoch the connection was accepted in

	mu         sync.Mutex
	hs         SlaveHandshake
	haveHS     bool
	first      int64 // the first report, where the transfer starts (-1 before it)
	ackOff     int64 // last report (-1 before it)
	sent       int64 // end of what was handed to the socket
	lastRead   time.Time
	caughtUpAt time.Time

	handshake chan struct{} // the slave's handshake arrived
	started   chan struct{} // its first report arrived
	wake      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (a *AutoSwitch) accept(c net.Conn) {
	a.mu.Lock()
	if a.closed || a.role != roleMaster {
		a.mu.Unlock()
		c.Close()
		return
	}
	sc := &switchConn{a: a, c: c, remote: c.RemoteAddr().String(), epoch: a.epoch, first: -1, ackOff: -1,
		lastRead: a.cfg.Clock.Now(), handshake: make(chan struct{}), started: make(chan struct{}),
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	a.conns[sc] = struct{}{}
	a.wg.Add(2)
	a.mu.Unlock()
	a.cfg.Logger.Info("ha: slave connected (controller mode)", "remote", sc.remote)
	go sc.readLoop()
	go sc.transferLoop()
}

func (sc *switchConn) close(why string) {
	sc.closeOnce.Do(func() {
		close(sc.done)
		sc.c.Close()
		sc.a.mu.Lock()
		delete(sc.a.conns, sc)
		sc.a.mu.Unlock()
		sc.a.cfg.Logger.Info("ha: slave connection closed", "remote", sc.remote, "reason", why)
	})
}

// ack is the connection's broker id and acknowledged offset, once the
// slave handshook and reported; asynchronous learners never count.
func (sc *switchConn) ack() (int64, int64, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if !sc.haveHS || sc.ackOff < 0 || sc.hs.AsyncLearner {
		return 0, 0, false
	}
	return sc.hs.BrokerID, sc.ackOff, true
}

// replicaState is the connection as Replicas reports it; asynchronous
// learners are left out, so the controller client never proposes them
// for the sync-state set (RocketMQ's expansion skips them too).
func (sc *switchConn) replicaState() (ReplicaState, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if !sc.haveHS || sc.hs.AsyncLearner {
		return ReplicaState{}, false
	}
	return ReplicaState{BrokerID: sc.hs.BrokerID, Addr: sc.remote, AckOffset: sc.ackOff, CaughtUpAt: sc.caughtUpAt}, true
}

func (sc *switchConn) readLoop() {
	defer sc.a.wg.Done()
	var b [SwitchSlaveHandshakeSize]byte
	for {
		// A slave reports at least every haSendHeartbeatInterval: one
		// silent for haHousekeepingInterval is gone.
		_ = sc.c.SetReadDeadline(time.Now().Add(sc.a.cfg.HousekeepingInterval))
		if _, err := io.ReadFull(sc.c, b[:4]); err != nil {
			sc.close("read: " + err.Error())
			return
		}
		state := int32(b[0])<<24 | int32(b[1])<<16 | int32(b[2])<<8 | int32(b[3])
		switch state {
		case StateHandshake:
			if _, err := io.ReadFull(sc.c, b[4:SwitchSlaveHandshakeSize]); err != nil {
				sc.close("read handshake: " + err.Error())
				return
			}
			h := ParseSlaveHandshake(b[4:])
			if adm := sc.a.cfg.Admit; adm != nil && !adm(h.BrokerID, sc.c.RemoteAddr()) {
				sc.a.cfg.Logger.Warn("ha: refusing a connection that is not the replica it names", "remote", sc.remote, "brokerId", h.BrokerID)
				sc.close("not admitted")
				return
			}
			sc.mu.Lock()
			again := sc.haveHS
			sc.hs, sc.haveHS, sc.lastRead = h, true, sc.a.cfg.Clock.Now()
			sc.mu.Unlock()
			if again {
				sc.close("a second handshake on one connection")
				return
			}
			sc.a.cfg.Logger.Info("ha: slave handshake", "remote", sc.remote, "brokerId", h.BrokerID,
				"syncFromLastFile", h.SyncFromLastFile, "asyncLearner", h.AsyncLearner)
			close(sc.handshake)
		case StateTransfer:
			if _, err := io.ReadFull(sc.c, b[4:SwitchReportSize]); err != nil {
				sc.close("read report: " + err.Error())
				return
			}
			if !sc.report(int64(uint64(b[4])<<56 | uint64(b[5])<<48 | uint64(b[6])<<40 | uint64(b[7])<<32 |
				uint64(b[8])<<24 | uint64(b[9])<<16 | uint64(b[10])<<8 | uint64(b[11]))) {
				return
			}
		default:
			sc.a.cfg.Logger.Warn("ha: closing a connection that sent an unknown state", "remote", sc.remote, "state", state)
			sc.close("unknown state")
			return
		}
	}
}

// report applies one TRANSFER report; false when it closed the
// connection. A report counts only after the handshake, never moves back,
// never passes the master's end nor what this connection was sent (past
// its start point).
func (sc *switchConn) report(off int64) bool {
	a := sc.a
	end := a.cfg.Log.MaxOffset()
	now := a.cfg.Clock.Now()
	sc.mu.Lock()
	bad := ""
	switch {
	case !sc.haveHS:
		bad = "a report before the handshake"
	case off < 0 || off > end:
		bad = "an offset outside the master's log"
	case sc.first >= 0 && off < sc.ackOff:
		bad = "an offset that moved backwards"
	case sc.first >= 0 && off > max(sc.first, sc.sent):
		bad = "an offset beyond what this connection holds or was sent"
	}
	if bad != "" {
		sc.mu.Unlock()
		a.cfg.Logger.Warn("ha: closing a slave connection: "+bad, "remote", sc.remote, "offset", off, "masterEnd", end)
		sc.close("bad report")
		return false
	}
	first := sc.first < 0
	if first {
		sc.first = off
		sc.sent = off
	}
	sc.ackOff, sc.lastRead = off, now
	if off >= end {
		sc.caughtUpAt = now
	}
	sc.mu.Unlock()
	if first {
		close(sc.started)
	}
	a.acked()
	return true
}

// transferLoop sends the handshake answer, then the log from the slave's
// first report on.
func (sc *switchConn) transferLoop() {
	defer sc.a.wg.Done()
	a := sc.a
	cfg := &a.cfg
	select {
	case <-sc.handshake:
	case <-sc.done:
		return
	case <-a.cfg.Clock.After(cfg.HousekeepingInterval):
		sc.close("no handshake within haHousekeepingInterval")
		return
	}
	es := cfg.Log.Epochs()
	if len(es) > MaxHandshakeEpochs {
		es = es[len(es)-MaxHandshakeEpochs:]
	}
	if !sc.write(AppendMasterHandshake(nil, cfg.Log.MaxOffset(), lastEpoch(es), es)) {
		return
	}
	select {
	case <-sc.started:
	case <-sc.done:
		return
	}
	sc.mu.Lock()
	next, hs := sc.first, sc.hs
	sc.mu.Unlock()
	if next == 0 {
		next = cfg.Log.MinOffset()
		if hs.SyncFromLastFile {
			next = lastFileStart(cfg.Log)
		}
		sc.mu.Lock()
		sc.sent = next
		sc.mu.Unlock()
	}
	buf := make([]byte, SwitchTransferHeaderSize+cfg.TransferBatchSize)
	lastWrite := cfg.Clock.Now()
	poll := time.NewTimer(cfg.PollInterval)
	defer poll.Stop()
	for {
		select {
		case <-sc.done:
			return
		default:
		}
		es = cfg.Log.Epochs()
		logEnd := cfg.Log.MaxOffset()
		i := epochAt(es, next)
		if i < 0 {
			cfg.Logger.Error("ha: no epoch holds the slave's offset; closing", "remote", sc.remote, "offset", next)
			sc.close("no epoch for the offset")
			return
		}
		start, stop := epochRange(es, i, logEnd)
		want := cfg.TransferBatchSize
		if i+1 < len(es) {
			want = int(min(int64(want), stop-next))
		}
		n := 0
		if want > 0 {
			var err error
			if n, err = cfg.Log.ReadAt(buf[SwitchTransferHeaderSize:SwitchTransferHeaderSize+want], next); err != nil {
				cfg.Logger.Error("ha: cannot read the CommitLog for a slave", "remote", sc.remote, "offset", next, "err", err)
				sc.close("read CommitLog: " + err.Error())
				return
			}
		}
		if n == 0 && i+1 < len(es) && next >= stop {
			continue // the epoch is sent: the next frame carries the next one
		}
		if n > 0 || cfg.Clock.Since(lastWrite) >= cfg.SendHeartbeatInterval {
			PutTransferHeader(buf, TransferHeader{BodySize: int32(n), Offset: next, Epoch: es[i].Epoch,
				EpochStart: start, ConfirmOffset: a.ConfirmOffset()})
			sc.mu.Lock()
			sc.sent = next + int64(n) // before the write: the slave may answer first
			sc.mu.Unlock()
			if !sc.write(buf[:SwitchTransferHeaderSize+n]) {
				return
			}
			next += int64(n)
			lastWrite = cfg.Clock.Now()
			if n > 0 {
				continue
			}
		}
		sc.mu.Lock()
		if sc.ackOff >= logEnd {
			sc.caughtUpAt = cfg.Clock.Now()
		}
		silent := cfg.Clock.Since(sc.lastRead)
		sc.mu.Unlock()
		if silent > cfg.HousekeepingInterval {
			sc.close("silent for more than haHousekeepingInterval")
			return
		}
		poll.Reset(cfg.PollInterval)
		select {
		case <-sc.done:
			return
		case <-sc.wake:
		case <-poll.C:
		case <-cfg.Clock.After(cfg.SendHeartbeatInterval - cfg.Clock.Since(lastWrite)):
		}
	}
}

// lastFileStart is where the master's last CommitLog file starts, found
// from the log's end and the first file (files are of one size).
func lastFileStart(l Log) int64 {
	type fileSizer interface{ FileSize() int64 }
	if fs, ok := l.(fileSizer); ok && fs.FileSize() > 0 {
		end := l.MaxOffset()
		return max(l.MinOffset(), end-end%fs.FileSize())
	}
	return l.MinOffset()
}

func (sc *switchConn) write(b []byte) bool {
	_ = sc.c.SetWriteDeadline(time.Now().Add(sc.a.cfg.HousekeepingInterval))
	if _, err := sc.c.Write(b); err != nil {
		if !errors.Is(err, net.ErrClosed) {
			sc.close("write: " + err.Error())
		}
		return false
	}
	return true
}
