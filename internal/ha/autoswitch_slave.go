package ha

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// ErrNoConsistentPoint is wrapped by the error a slave's session ends
// with when its epoch table and its master's share no epoch: it retries
// after the reconnect interval and never appends meanwhile.
var ErrNoConsistentPoint = errors.New("ha: no consistent point between this replica's epochs and its master's")

// ConsistentPoint is RocketMQ's findConsistentPoint over ha's epochs:
// walking the local epochs from the newest, the first the master has with
// the same start offset gives min(its end here, its end on the master),
// never past the local end. ok is false when none matches.
func ConsistentPoint(local []Epoch, localEnd int64, master []Epoch, masterEnd int64) (int64, bool) {
	end := func(es []Epoch, i int, logEnd int64) int64 {
		if i+1 < len(es) {
			return es[i+1].StartOffset
		}
		if es[i].StartOffset <= logEnd {
			return logEnd
		}
		return 1<<63 - 1
	}
	for i := len(local) - 1; i >= 0; i-- {
		for j := range master {
			if master[j].Epoch == local[i].Epoch && master[j].StartOffset == local[i].StartOffset {
				// Never past the local end: an epoch entry can be durable
				// before its first byte is (a slave writes the entry first),
				// and a cut past the end would have the master send from
				// an offset this log does not reach.
				return min(end(local, i, localEnd), end(master, j, masterEnd), localEnd), true
			}
		}
	}
	return -1, false
}

// switchClient is the slave side of one ChangeToSlave: it dials the
// master until the role changes again, handshakes, cuts the log to the
// consistent point and appends the master's frames.
type switchClient struct {
	a        *AutoSwitch
	masterID int64
	addr     string

	mu        sync.Mutex
	conn      net.Conn
	truncated int64 // where the last handshake cut the log (-1 before)
	dials     int64 // connections opened

	// ctx ends with quit: it bounds the resolver and the dial.
	ctx    context.Context
	cancel context.CancelFunc
	quit   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

func newSwitchClient(a *AutoSwitch, masterID int64, addr string) *switchClient {
	ctx, cancel := context.WithCancel(context.Background())
	return &switchClient{a: a, masterID: masterID, addr: addr, truncated: -1, ctx: ctx, cancel: cancel, quit: make(chan struct{})}
}

// target is the address the next connection attempt dials: the
// resolver's answer for addr, or addr.
func (c *switchClient) target() string {
	if r := c.a.cfg.ResolveMaster; r != nil {
		if got := r(c.ctx, c.addr); got != "" {
			return got
		}
	}
	return c.addr
}

// connects is the number of connections opened so far.
func (c *switchClient) connects() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dials
}

func (c *switchClient) start() {
	c.wg.Add(1)
	go c.run()
}

func (c *switchClient) close() {
	c.once.Do(func() {
		close(c.quit)
		c.cancel()
		c.mu.Lock()
		if c.conn != nil {
			c.conn.Close()
		}
		c.mu.Unlock()
		c.wg.Wait()
	})
}

func (c *switchClient) run() {
	defer c.wg.Done()
	cfg := &c.a.cfg
	fails := 0
	for {
		select {
		case <-c.quit:
			return
		default:
		}
		began := cfg.Clock.Now()
		addr := c.target()
		ctx, cancel := context.WithTimeout(c.ctx, 3*time.Second)
		conn, err := cfg.Dial(ctx, addr)
		cancel()
		if err == nil {
			c.mu.Lock()
			select {
			case <-c.quit:
				c.mu.Unlock()
				conn.Close()
				return
			default:
			}
			c.conn = conn
			c.dials++
			c.mu.Unlock()
			err = c.session(conn)
			conn.Close()
			c.mu.Lock()
			c.conn = nil
			c.mu.Unlock()
		}
		select {
		case <-c.quit:
			return
		default:
		}
		if cfg.Clock.Now().Sub(began) >= cfg.ReconnectInterval {
			fails = 0 // the connection served: the next failure starts the backoff again
		}
		fails++
		wait := ReconnectDelay(fails, cfg.ReconnectInterval)
		cfg.Logger.Warn("ha: connection to the master ended; reconnecting", "master", addr, "err", err, "in", wait)
		select {
		case <-c.quit:
			return
		case <-cfg.Clock.After(wait):
		}
	}
}

// session handshakes and replicates over one connection until it fails.
func (c *switchClient) session(conn net.Conn) error {
	cfg := &c.a.cfg
	log := cfg.Log
	var wmu sync.Mutex
	write := func(b []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		_ = conn.SetWriteDeadline(time.Now().Add(cfg.HousekeepingInterval))
		_, err := conn.Write(b)
		return err
	}
	var hs [SwitchSlaveHandshakeSize]byte
	PutSlaveHandshake(hs[:], SlaveHandshake{SyncFromLastFile: cfg.SyncFromLastFile, AsyncLearner: cfg.AsyncLearner, BrokerID: cfg.BrokerID})
	if err := write(hs[:]); err != nil {
		return err
	}
	_ = conn.SetReadDeadline(time.Now().Add(cfg.HousekeepingInterval))
	var hdr [SwitchTransferHeaderSize]byte
	if _, err := io.ReadFull(conn, hdr[:SwitchMasterHandshakeSize]); err != nil {
		return fmt.Errorf("ha: read the master's handshake: %w", err)
	}
	if st := int32(binary.BigEndian.Uint32(hdr[:])); st != StateHandshake {
		return fmt.Errorf("ha: the master answered the handshake with state %d", st)
	}
	bodySize, masterEnd, _ := ParseMasterHandshake(hdr[4:])
	if bodySize < 0 || bodySize > MaxHandshakeEpochs*EpochEntrySize {
		return fmt.Errorf("ha: master handshake body of %d bytes", bodySize)
	}
	body := make([]byte, bodySize)
	if _, err := io.ReadFull(conn, body); err != nil {
		return err
	}
	masterEpochs, err := ParseEpochs(body)
	if err != nil {
		return err
	}
	// Cut to the consistent point before anything is appended or
	// acknowledged; the cut is durable when Truncate returns.
	local := log.Epochs()
	switch {
	case len(local) == 0 && log.MaxOffset() > 0:
		return fmt.Errorf("%w: the log holds %d bytes but the epoch file is empty (a log written outside controller mode)", ErrNoConsistentPoint, log.MaxOffset())
	case len(local) > 0:
		cut, ok := ConsistentPoint(local, log.MaxOffset(), masterEpochs, masterEnd)
		if !ok {
			return fmt.Errorf("%w: local %v, master %v", ErrNoConsistentPoint, local, masterEpochs)
		}
		if cut, err = log.Truncate(cut); err != nil {
			return fmt.Errorf("ha: truncate to the consistent point: %w", err)
		}
		c.mu.Lock()
		c.truncated = cut
		c.mu.Unlock()
		cfg.Logger.Info("ha: log cut to the consistent point with the master", "offset", cut, "local", local, "master", masterEpochs)
	default:
		c.mu.Lock()
		c.truncated = 0
		c.mu.Unlock()
	}
	var rb [SwitchReportSize]byte
	reported := int64(-1)
	// The first report is where the master starts sending: the end of the
	// appended bytes. Later ones are acknowledgements: only what survives
	// a kill of this process (AckOffset: not the bytes still in the write
	// spill, waiting for their CommitLog file), never below the first.
	first := log.MaxOffset()
	ackOffset := func() int64 { return max(log.AckOffset(), first) }
	report := func(force bool) error {
		off := ackOffset()
		if force {
			off = first
		}
		if !force && off <= reported {
			return nil
		}
		reported = off
		wmu.Lock()
		PutSwitchReport(rb[:], off)
		wmu.Unlock()
		return write(rb[:])
	}
	if err := report(true); err != nil {
		return err
	}
	hbDone := make(chan struct{})
	var hbWG sync.WaitGroup
	hbWG.Add(1)
	go func() {
		defer hbWG.Done()
		for {
			select {
			case <-hbDone:
				return
			case <-cfg.Clock.After(cfg.SendHeartbeatInterval):
			}
			var b [SwitchReportSize]byte
			PutSwitchReport(b[:], ackOffset())
			if write(b[:]) != nil {
				conn.Close()
				return
			}
		}
	}()
	defer func() {
		close(hbDone)
		conn.Close()
		hbWG.Wait()
	}()
	recvEpoch := lastEpoch(log.Epochs())
	for {
		_ = conn.SetReadDeadline(time.Now().Add(cfg.HousekeepingInterval))
		if _, err := io.ReadFull(conn, hdr[:]); err != nil {
			return err
		}
		if st := int32(binary.BigEndian.Uint32(hdr[:])); st != StateTransfer {
			return fmt.Errorf("ha: a frame in state %d after the handshake", st)
		}
		h := ParseTransferHeader(hdr[4:])
		if h.BodySize < 0 || h.BodySize > maxTransferBody || h.Offset < 0 {
			return fmt.Errorf("ha: bad transfer header from the master: %+v", h)
		}
		if cap(body) < int(h.BodySize) {
			body = make([]byte, h.BodySize)
		}
		body = body[:h.BodySize]
		if _, err := io.ReadFull(conn, body); err != nil {
			return err
		}
		if end := log.MaxOffset(); end != 0 && h.Offset != end {
			return &StopError{Offset: h.Offset, Err: &MismatchError{Offset: h.Offset, End: end}}
		}
		if h.Epoch != recvEpoch {
			// The epoch's entry is durable before any of its bytes.
			if h.Epoch < recvEpoch {
				return fmt.Errorf("ha: the master sent epoch %d after epoch %d", h.Epoch, recvEpoch)
			}
			if err := log.AppendEpoch(Epoch{Epoch: h.Epoch, StartOffset: h.EpochStart}); err != nil {
				return fmt.Errorf("ha: record epoch %d at %d: %w", h.Epoch, h.EpochStart, err)
			}
			recvEpoch = h.Epoch
		}
		if h.BodySize > 0 {
			if err := log.AppendReplicated(h.Offset, body); err != nil {
				return &StopError{Offset: h.Offset, Err: err}
			}
		}
		c.a.slaveConfirm(c, min(h.ConfirmOffset, log.MaxOffset()))
		if err := report(false); err != nil {
			return err
		}
	}
}
