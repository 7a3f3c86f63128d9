package ha

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/spoolmq/spool/internal/clock"
)

// maxTransferBody bounds a transfer's body size: larger is not a master
// speaking the protocol (RocketMQ's batches are at most a CommitLog file).
const maxTransferBody = 1 << 30

// SlaveConfig configures a Slave. Zero durations take RocketMQ's defaults.
type SlaveConfig struct {
	Log Log
	// MasterAddr is the master's HA address (haMasterAddress, or the
	// haServerAddr a name server answered); SetMasterAddr changes it.
	MasterAddr string
	Clock      clock.Clock
	Logger     *slog.Logger
	// Dial opens the connection (net.Dialer.DialContext when nil).
	Dial func(ctx context.Context, addr string) (net.Conn, error)

	SendHeartbeatInterval time.Duration // haSendHeartbeatInterval
	HousekeepingInterval  time.Duration // haHousekeepingInterval
	ReconnectInterval     time.Duration // wait after a failed dial or a lost connection
}

// StopError is the error a slave stops replicating with: the transfer's
// offset did not match (a *MismatchError inside) or the log refused the
// bytes (a full disk). Replication resumes only when Resume is called.
type StopError struct {
	Offset int64
	Err    error
}

func (e *StopError) Error() string {
	return fmt.Sprintf("ha: replication stopped at CommitLog offset %d: %v", e.Offset, e.Err)
}

func (e *StopError) Unwrap() error { return e.Err }

// Slave is the client side of the HA stream: it connects to its master,
// reports its CommitLog end, and appends the master's bytes in order.
type Slave struct {
	cfg SlaveConfig

	mu        sync.Mutex
	addr      string
	stopped   error // the StopError replication is stopped with
	conn      net.Conn
	connected bool
	connects  int64
	applied   int64 // bytes appended

	change chan struct{} // address changed, resumed or closed
	quit   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

// NewSlave returns a slave; Start runs it.
func NewSlave(cfg SlaveConfig) *Slave {
	cfg.Clock = clock.Or(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SendHeartbeatInterval <= 0 {
		cfg.SendHeartbeatInterval = DefaultSendHeartbeatInterval
	}
	if cfg.HousekeepingInterval <= 0 {
		cfg.HousekeepingInterval = DefaultHousekeepingInterval
	}
	if cfg.ReconnectInterval <= 0 {
		cfg.ReconnectInterval = DefaultReconnectInterval
	}
	if cfg.Dial == nil {
		cfg.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	return &Slave{cfg: cfg, addr: cfg.MasterAddr, change: make(chan struct{}, 1), quit: make(chan struct{})}
}

// Start runs the connect-replicate-reconnect loop.
func (s *Slave) Start() {
	s.wg.Add(1)
	go s.run()
}

// Close stops the slave and closes its connection.
func (s *Slave) Close() {
	s.once.Do(func() {
		close(s.quit)
		s.mu.Lock()
		if s.conn != nil {
			s.conn.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
}

// SetMasterAddr changes the master's HA address; an open connection to
// another address is closed and the new one dialled.
func (s *Slave) SetMasterAddr(addr string) {
	s.mu.Lock()
	if s.addr == addr {
		s.mu.Unlock()
		return
	}
	s.addr = addr
	if s.conn != nil {
		s.conn.Close()
	}
	s.mu.Unlock()
	s.signal()
}

// Err is the error replication is stopped with, or nil while it runs.
func (s *Slave) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// Resume restarts replication after a stop (space returned, the operator
// repaired the log).
func (s *Slave) Resume() {
	s.mu.Lock()
	s.stopped = nil
	s.mu.Unlock()
	s.signal()
}

// Connected reports whether a connection to the master is open.
func (s *Slave) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connected
}

// Connects is the number of connections made so far.
func (s *Slave) Connects() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connects
}

func (s *Slave) signal() {
	select {
	case s.change <- struct{}{}:
	default:
	}
}

func (s *Slave) run() {
	defer s.wg.Done()
	for {
		select {
		case <-s.quit:
			return
		default:
		}
		s.mu.Lock()
		addr, stopped := s.addr, s.stopped
		s.mu.Unlock()
		if stopped != nil || addr == "" {
			select {
			case <-s.quit:
				return
			case <-s.change:
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		conn, err := s.cfg.Dial(ctx, addr)
		cancel()
		if err != nil {
			s.cfg.Logger.Warn("ha: cannot connect to the master", "master", addr, "err", err)
			select {
			case <-s.quit:
				return
			case <-s.change:
			case <-s.cfg.Clock.After(s.cfg.ReconnectInterval):
			}
			continue
		}
		s.mu.Lock()
		select {
		case <-s.quit:
			s.mu.Unlock()
			conn.Close()
			return
		default:
		}
		s.conn, s.connected = conn, true
		s.connects++
		s.mu.Unlock()
		s.cfg.Logger.Info("ha: connected to the master", "master", addr, "offset", s.cfg.Log.MaxOffset())
		err = s.session(conn)
		conn.Close()
		s.mu.Lock()
		s.conn, s.connected = nil, false
		var se *StopError
		if errors.As(err, &se) {
			s.stopped = se
		}
		s.mu.Unlock()
		if se != nil {
			s.cfg.Logger.Error("ha: replication stopped; call for a resume once the cause is fixed", "master", addr, "err", se)
			continue
		}
		s.cfg.Logger.Info("ha: connection to the master ended; reconnecting after reconnectInterval", "master", addr, "err", err)
		// A master that closes at once (it refused the report) is not
		// dialled in a tight loop.
		select {
		case <-s.quit:
			return
		case <-s.change:
		case <-s.cfg.Clock.After(s.cfg.ReconnectInterval):
		}
	}
}

// ackPollInterval is how often a slave looks whether bytes it holds but
// may not acknowledge yet (Log.AckOffset) have become acknowledgeable.
const ackPollInterval = 10 * time.Millisecond

// session replicates over one connection until it fails.
func (s *Slave) session(conn net.Conn) error {
	log := s.cfg.Log
	var wmu sync.Mutex
	var rb [ReportSize]byte
	lastRead := s.cfg.Clock.Now()
	var lrMu sync.Mutex
	reported := int64(-1)          // guarded by wmu
	held := make(chan struct{}, 1) // a report left bytes unacknowledged
	report := func() error {
		wmu.Lock()
		defer wmu.Unlock()
		off := log.AckOffset()
		PutReport(rb[:], off)
		_ = conn.SetWriteDeadline(time.Now().Add(s.cfg.HousekeepingInterval))
		_, err := conn.Write(rb[:])
		reported = max(reported, off)
		if off < log.MaxOffset() {
			select {
			case held <- struct{}{}:
			default:
			}
		}
		return err
	}
	// The first report is where the master starts sending, so it must be
	// the log's end; it also acknowledges, so it waits until all of the
	// log may be acknowledged.
	for log.AckOffset() < log.MaxOffset() {
		select {
		case <-s.quit:
			return net.ErrClosed
		case <-s.cfg.Clock.After(ackPollInterval):
		}
	}
	if err := report(); err != nil {
		return err
	}
	// Heartbeats and housekeeping on the clock; while bytes are held back
	// from the acknowledgement, an early report once they may be.
	hbDone := make(chan struct{})
	var hbWG sync.WaitGroup
	hbWG.Add(1)
	go func() {
		defer hbWG.Done()
		lastBeat := s.cfg.Clock.Now()
		for {
			wait := s.cfg.SendHeartbeatInterval
			// Held bytes, or bytes that became acknowledgeable since the
			// last report (the hold may end between a look and this one):
			// look again soon.
			wmu.Lock()
			unreported := log.AckOffset() > reported
			wmu.Unlock()
			if unreported || log.AckOffset() < log.MaxOffset() {
				wait = min(wait, ackPollInterval)
			}
			select {
			case <-hbDone:
				return
			case <-held:
				continue // look again every ackPollInterval
			case <-s.cfg.Clock.After(wait):
			}
			if s.cfg.Clock.Since(lastBeat) < s.cfg.SendHeartbeatInterval {
				wmu.Lock()
				newer := log.AckOffset() > reported
				wmu.Unlock()
				if newer {
					if err := report(); err != nil {
						conn.Close()
						return
					}
				}
				continue
			}
			lastBeat = s.cfg.Clock.Now()
			lrMu.Lock()
			silent := s.cfg.Clock.Since(lastRead)
			lrMu.Unlock()
			if silent > s.cfg.HousekeepingInterval {
				s.cfg.Logger.Warn("ha: the master was silent for more than haHousekeepingInterval; reconnecting", "silent", silent)
				conn.Close()
				return
			}
			if err := report(); err != nil {
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

	var hdr [HeaderSize]byte
	var body []byte
	for {
		if _, err := io.ReadFull(conn, hdr[:]); err != nil {
			return err
		}
		off, size := ParseHeader(hdr[:])
		if size < 0 || size > maxTransferBody || off < 0 {
			return fmt.Errorf("ha: bad transfer header from the master: offset %d, body size %d", off, size)
		}
		if cap(body) < int(size) {
			body = make([]byte, size)
		}
		body = body[:size]
		if _, err := io.ReadFull(conn, body); err != nil {
			return err
		}
		lrMu.Lock()
		lastRead = s.cfg.Clock.Now()
		lrMu.Unlock()
		if end := log.MaxOffset(); end != 0 && off != end {
			// Never a mixed log: the master's bytes go at the slave's end
			// or not at all. (An empty log may begin where the master's
			// first file does; the log checks that.)
			return &StopError{Offset: off, Err: &MismatchError{Offset: off, End: end}}
		}
		if err := log.AppendReplicated(off, body); err != nil {
			return &StopError{Offset: off, Err: err}
		}
		if size > 0 {
			s.mu.Lock()
			s.applied += int64(size)
			s.mu.Unlock()
			if err := report(); err != nil {
				return err
			}
		}
	}
}
