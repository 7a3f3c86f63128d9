package transport

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/spoolmq/spool/remoting"
)

// Event loops (ServerConfig.EventLoops).
//
// A loop is one goroutine that waits in epoll_wait for every connection it
// serves and, per wake-up, serves all that are ready: one read each, the
// complete frames dispatched as a connection's reader would (admission,
// executors, inline handlers), then one write per connection for the
// answers its requests got during the pass. Its sockets are never known to
// the Go runtime's poller, so no goroutine parks or wakes per request, and
// its reads and writes are raw system calls (loop_io.go).
//
// Everything the reader and writer goroutines guarantee holds: a
// connection whose answers are not read stops being read (its interest in
// input is dropped until its queue drains), every connection stops being
// read while the server's body budget is spent (the pause counts as queue
// wait), an idle connection is closed, and a frame is checked before
// anything sized by it is allocated (a large one grows as its bytes
// arrive).
//
// Writes: answers produced on the loop are queued and written after the
// pass; an answer completed on another goroutine (a worker, the store's
// flusher, a held pull woken) is written by that goroutine at once, without
// blocking, unless another goroutine is writing (it joins that write). What
// the socket does not take waits in the connection's out buffer, and the
// loop finishes it when the socket is writable (EPOLLOUT).
//
// What runs on the loop must not block: a request runs inline on a loop
// only when its code was declared never to block (Server.RunsOnLoop) and
// nothing waits before it in its executor's queue (the loop first takes
// back queued requests it may run: Executor.takeBack); the others always
// go to the workers. Handlers without an executor, which must never block
// anywhere, run on the loop as they run on a reader.
//
// Descriptors: a connection's descriptor is closed once the loop has
// dropped it from its epoll set and no other goroutine is writing to it
// (loopConn.refs), so no write ever reaches a descriptor number reused by
// another connection.

// loopEvents is how many ready descriptors one epoll_wait returns at most.
const loopEvents = 256

// loopReadBuf is the loop's read buffer, shared by its connections: a
// connection holds bytes of its own only while a frame is incomplete.
const loopReadBuf = 64 << 10

// eventLoop is one loop's state. The fields without a comment belong to
// the loop's active run (loopRun): normally one goroutine for the loop's
// whole life.
type eventLoop struct {
	s      *Server
	epfd   int
	wakefd int
	conns  map[int32]*Conn
	lns    map[int32]*loopListener
	tick   time.Time
	// budgetPaused are the connections paused for the body budget.
	budgetPaused []*Conn

	mu    sync.Mutex // guards reqs, spare and stopped
	reqs  []loopReq
	spare []loopReq
	// stopped refuses new requests once the loop is stopping.
	stopped bool
	// wakePending is set while a wake-up written to wakefd has not been
	// read, so requests in a burst write it once.
	wakePending atomic.Bool
	// active is the run serving the loop; stalled counts displaced runs
	// whose handler has not returned yet (while any is, requests declared
	// with RunsOnLoop go to their executors' workers).
	active  atomic.Pointer[loopRun]
	stalled atomic.Int32
	done    chan struct{}
}

// loopRun is a goroutine's turn at serving its loop. When a request
// served inline holds the run longer than loopStallLimit (a handler that
// blocked after all), the server's watchdog displaces it: a new run serves
// the loop from then on, and the displaced one, once its handler returns,
// keeps the rest of that connection's bytes, hands over what it held and
// ends. Only that connection waits for the handler.
type loopRun struct {
	l      *eventLoop
	events []unix.EpollEvent
	rbuf   []byte
	now    time.Time
	// dmu guards dirty: the connections whose answers of this pass wait
	// to be written (a displaced run's handler may still add one).
	dmu   sync.Mutex
	dirty []*Conn
	// unit counts what the run hands on: a frame's dispatch or a pass's
	// end (LoopPassEnd). It is odd while one is under way; serving is the
	// frame's connection. The watchdog reads it, so the loop reads no
	// clock for it.
	unit      atomic.Uint64
	serving   atomic.Pointer[Conn]
	displaced atomic.Bool
	// gid is the run's goroutine's number, for the watchdog to find its
	// state in a goroutine dump.
	gid atomic.Uint64
	// dispatched counts the pass's frames (LoopPassBegin is asked at the
	// second); passHeld says Begin returned true and End is owed.
	dispatched int
	passHeld   bool
	doneOwed   bool // LoopPassStart returned true: LoopPassDone is owed
}

// loopStallLimit is how long a frame's dispatch (or a pass's end) may
// hold a run before the watchdog has another run serve the loop;
// loopStallCheck is how often it looks. A displacement helps when the
// handler waits (for a lock, the disk); when its goroutine merely waits
// for a core, another run competes for the same cores. At 20 ms, S4
// batches on a busy two-core machine displaced a loop in 12 of 15 runs
// (the two goroutine dumps taken showed it runnable: in a batch's record
// encoding, and back from the pass's pwrite), and each displacement sent
// the loop's requests through the executors' queues, which the clients'
// windows then kept full past the send queue's 200 ms bound (busy
// answers, until the loop took its queued requests back); at 50 ms, in 2
// of 9. A run whose goroutine a dump finds waiting for a core is no
// longer displaced (loop_watch.go); one in a system call or waiting for
// something is.
const (
	loopStallLimit = 50 * time.Millisecond
	loopStallCheck = 5 * time.Millisecond
)

// loopReq is work handed to a loop by another goroutine.
type loopReq struct {
	kind  int
	c     *Conn
	conns []*Conn
	ln    *loopListener
	done  chan struct{} // closed when the request was taken, if set
}

const (
	reqAdd        = iota // register c
	reqDrop              // c closed: drop it from the loop
	reqResume            // c's write queue drained below its bound
	reqBudget            // the body budget has room again
	reqBudgetBack        // conns paused for the budget, given back by a displaced run
	reqRelease           // a displaced run let c go
	reqListen            // accept on ln
	reqStopListen        // stop accepting on ln
	reqStop              // close every connection and end the loop
)

// loopListener is a listening socket served by a loop: its descriptor is
// the net.Listener's, used under a reference of the listener's raw conn.
type loopListener struct {
	ln  *net.TCPListener
	raw syscall.RawConn
	fd  int
}

// loopConn is a loop connection's state beside the Conn.
type loopConn struct {
	l  *eventLoop
	fd int
	// refs counts the users of fd: one for the loop's registration, one
	// per write in progress on another goroutine. The last to leave
	// closes it.
	refs    atomic.Int32
	closing atomic.Bool
	local   net.Addr
	remote  net.Addr

	// The loop's active run's (or, while held, the displaced run's):
	pend []byte // bytes of an incomplete frame
	// loaned is the body of the frame being dispatched while it is still
	// in the buffer it was read into (see Conn.ownBody).
	loaned     []byte
	lastRead   time.Time
	pauseSince time.Time
	onBudget   bool
	// run is the run that dispatched the connection's last frame: its
	// handlers queue their answers with it.
	run *loopRun
	// dirty says the connection is in a run's list of answers to write.
	dirty atomic.Bool
	// inline is the request whose handler the loop is running inline, if
	// any (Conn.OnLoop).
	inline atomic.Pointer[remoting.Command]
	// held says a displaced run still serves the connection: the active
	// run leaves it alone until it is let go.
	held atomic.Bool
	// holding says the run whose dirty list has the connection took its
	// writer role for the pass (set under wmu; cleared by that list's
	// flush).
	holding bool

	// pausedQueue says reading stopped until the write queue drains.
	pausedQueue atomic.Bool

	// readOff says reading is paused (the loop's: mustPause and the
	// resumptions set it).
	readOff bool

	// imu guards the epoll interest, which the loop (input) and writers
	// off the loop (output) change.
	imu      sync.Mutex
	iRead    bool
	iWrite   bool
	interest uint32
	dropped  bool

	// Under the Conn's wmu: the socket was full; the loop writes the rest
	// on EPOLLOUT.
	blocked bool
	// The writer role's: encoded bytes not yet written.
	out outBuf
}

// acquire takes a reference to fd for a write off the loop; false when
// the connection is closing.
func (lc *loopConn) acquire() bool {
	for {
		r := lc.refs.Load()
		if r == 0 || lc.closing.Load() {
			return false
		}
		if lc.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// release gives a reference back; the last closes the descriptor.
func (lc *loopConn) release() {
	if lc.refs.Add(-1) == 0 {
		_ = unix.Close(lc.fd)
	}
}

// setInterest tells epoll what the connection waits for: input unless
// reading is paused, output while the socket is full. imu is held.
func (lc *loopConn) setInterest() {
	if lc.dropped {
		return
	}
	var ev uint32
	if lc.iRead {
		ev |= unix.EPOLLIN | unix.EPOLLRDHUP
	}
	if lc.iWrite {
		ev |= unix.EPOLLOUT
	}
	if ev == lc.interest {
		return
	}
	lc.interest = ev
	e := unix.EpollEvent{Events: ev, Fd: int32(lc.fd)}
	_ = unix.EpollCtl(lc.l.epfd, unix.EPOLL_CTL_MOD, lc.fd, &e)
}

// pauseRead stops (true) or resumes reading; on the loop only.
func (lc *loopConn) pauseRead(off bool) {
	lc.readOff = off
	lc.imu.Lock()
	lc.iRead = !off
	lc.setInterest()
	lc.imu.Unlock()
}

// armWrite asks for EPOLLOUT (true) or stops asking; from any goroutine.
func (lc *loopConn) armWrite(on bool) {
	lc.imu.Lock()
	lc.iWrite = on
	lc.setInterest()
	lc.imu.Unlock()
}

// loopNetConn is the net.Conn face of a loop connection: its addresses
// and Close. Reads and writes go through the loop, never through it.
type loopNetConn struct{ c *Conn }

var errLoopConnIO = errors.New("transport: a loop connection is read and written by its loop")

func (n loopNetConn) Read([]byte) (int, error)         { return 0, errLoopConnIO }
func (n loopNetConn) Write([]byte) (int, error)        { return 0, errLoopConnIO }
func (n loopNetConn) Close() error                     { n.c.loopClose(); return nil }
func (n loopNetConn) LocalAddr() net.Addr              { return n.c.lp.local }
func (n loopNetConn) RemoteAddr() net.Addr             { return n.c.lp.remote }
func (n loopNetConn) SetDeadline(time.Time) error      { return nil }
func (n loopNetConn) SetReadDeadline(time.Time) error  { return nil }
func (n loopNetConn) SetWriteDeadline(time.Time) error { return nil }

func newEventLoop(s *Server) (*eventLoop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("transport: epoll_create1: %w", err)
	}
	wfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("transport: eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wfd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wfd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wfd)
		return nil, fmt.Errorf("transport: epoll_ctl eventfd: %w", err)
	}
	return &eventLoop{s: s, epfd: epfd, wakefd: wfd, conns: make(map[int32]*Conn),
		lns: make(map[int32]*loopListener), done: make(chan struct{})}, nil
}

// start runs the loop's first run; wg tracks every run.
func (l *eventLoop) start(wg *sync.WaitGroup) {
	r := l.newRun()
	l.active.Store(r)
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.run()
	}()
}

func (l *eventLoop) newRun() *loopRun {
	return &loopRun{l: l, events: make([]unix.EpollEvent, loopEvents), rbuf: make([]byte, loopReadBuf)}
}

// post hands r to the loop and wakes it; false when the loop has stopped.
func (l *eventLoop) post(r loopReq) bool {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return false
	}
	l.reqs = append(l.reqs, r)
	l.mu.Unlock()
	l.wake()
	return true
}

// wake makes the loop's epoll_wait return, once per burst of requests.
func (l *eventLoop) wake() {
	if l.wakePending.CompareAndSwap(false, true) {
		var one = [8]byte{1}
		_, _ = rawWrite(l.wakefd, one[:])
	}
}

// displace has a new run serve the loop in place of old, whose handler
// holds it: old's connection stops being read until old lets it go, and
// the answers old's pass queued are the new run's to write.
func (l *eventLoop) displace(old *loopRun, wg *sync.WaitGroup, state string) {
	l.mu.Lock()
	if l.stopped || l.active.Load() != old || !old.displaced.CompareAndSwap(false, true) {
		l.mu.Unlock()
		return
	}
	l.stalled.Add(1)
	c := old.serving.Load()
	if c != nil {
		c.lp.held.Store(true)
		c.lp.imu.Lock()
		c.lp.iRead = false
		c.lp.setInterest()
		c.lp.imu.Unlock()
	}
	nr := l.newRun()
	old.dmu.Lock()
	nr.dirty, old.dirty = old.dirty, nil
	old.dmu.Unlock()
	l.active.Store(nr)
	wg.Add(1)
	l.mu.Unlock()
	if c != nil {
		l.s.logger.Warn("remoting: a request held an event loop; another goroutine serves its other connections until it returns",
			"conn", c.ID(), "remote", c.RemoteAddr().String(), "held_over", loopStallLimit, "state", state)
	} else {
		l.s.logger.Warn("remoting: the end of a loop pass (the store's write of its records) held an event loop; another goroutine serves its connections until it returns",
			"held_over", loopStallLimit, "state", state)
	}
	go func() {
		defer wg.Done()
		nr.run()
	}()
}

// run serves the loop until it stops or the run is displaced.
func (r *loopRun) run() {
	r.gid.Store(curGoroutineID())
	l := r.l
	busy := false
	for {
		timeout := l.timeout()
		var n int
		var err error
		if busy {
			// After a pass with work, look again without sleeping and
			// without the scheduler's system call bookkeeping.
			n, err = epollWaitRaw(l.epfd, r.events)
		}
		if n == 0 && err == nil && timeout != 0 {
			// Let the goroutines the last pass made runnable (workers,
			// the store's dispatcher) run before the loop sleeps in a
			// system call that keeps its P.
			runtime.Gosched()
			n, err = unix.EpollWait(l.epfd, r.events, timeout)
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			l.s.logger.Error("remoting: epoll_wait failed; the event loop stops", "err", err)
			l.stop(r)
			return
		}
		r.now = time.Now()
		busy = n > 0
		for i := 0; i < n; i++ {
			ev := &r.events[i]
			fd := ev.Fd
			if int(fd) == l.wakefd {
				continue // requests are taken below
			}
			if ln := l.lns[fd]; ln != nil {
				r.accept(ln)
				continue
			}
			c := l.conns[fd]
			if c == nil || c.isClosed() {
				continue
			}
			if ev.Events&unix.EPOLLOUT != 0 {
				c.onWritable()
			}
			switch {
			case ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP) != 0 && !c.lp.readOff && !c.lp.held.Load():
				r.readFrom(c)
				if r.displaced.Load() {
					return
				}
			case ev.Events&(unix.EPOLLERR|unix.EPOLLHUP) != 0:
				// Reported whatever the interest: with reading paused
				// nothing else would notice the socket is gone.
				c.closeWith(io.ErrUnexpectedEOF)
			}
		}
		if !r.endPass() {
			return
		}
		r.flushDirty()
		if !r.passDone() {
			return
		}
		if r.takeRequests() || r.displaced.Load() {
			return
		}
		if !r.now.Before(l.tick) {
			r.idleCheck()
		}
	}
}

// epollWaitRaw polls without waiting.
func epollWaitRaw(epfd int, events []unix.EpollEvent) (int, error) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])),
		uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// timeout is epoll_wait's timeout in milliseconds: until the next idle
// check, or -1 without one.
func (l *eventLoop) timeout() int {
	if l.s.cfg.IdleTimeout <= 0 || len(l.conns) == 0 {
		return -1
	}
	if l.tick.IsZero() {
		l.tick = time.Now().Add(l.idleStep())
	}
	d := time.Until(l.tick)
	if d <= 0 {
		return 0
	}
	return int(d/time.Millisecond) + 1
}

func (l *eventLoop) idleStep() time.Duration {
	return min(l.s.cfg.IdleTimeout/8, time.Second)
}

// idleCheck closes the connections that read nothing for the idle
// timeout (a paused connection counts from its resumption).
func (r *loopRun) idleCheck() {
	l := r.l
	l.tick = r.now.Add(l.idleStep())
	idle := l.s.cfg.IdleTimeout
	for _, c := range l.conns {
		lc := c.lp
		if lc.readOff || lc.held.Load() || c.isClosed() {
			continue
		}
		if r.now.Sub(lc.lastRead) > idle {
			c.closeWith(os.ErrDeadlineExceeded)
		}
	}
}

// takeRequests runs the requests other goroutines posted; true when the
// loop must end. A run displaced meanwhile gives the rest back.
func (r *loopRun) takeRequests() bool {
	l := r.l
	if !l.wakePending.Load() {
		return false
	}
	// Drain the eventfd before clearing the flag: a post after the
	// clearing writes it again (the next epoll_wait returns at once), and
	// one before it is in the queue taken below. The other order lost a
	// wake-up: a write between the clearing and the drain was drained
	// with the flag left set, so later posts wrote nothing and a loop
	// without a timeout slept with requests queued.
	var drain [8]byte
	_, _ = rawRead(l.wakefd, drain[:])
	l.wakePending.Store(false)
	l.mu.Lock()
	reqs := l.reqs
	l.reqs = l.spare[:0]
	l.mu.Unlock()
	stop := false
	for i, q := range reqs {
		if r.displaced.Load() {
			l.requeue(reqs[i:])
			return false
		}
		switch q.kind {
		case reqAdd:
			r.add(q.c)
		case reqDrop:
			l.drop(q.c)
		case reqResume:
			r.resumeQueue(q.c)
		case reqBudget:
			r.resumeBudget(nil)
		case reqBudgetBack:
			r.resumeBudget(q.conns)
		case reqRelease:
			r.release(q.c)
		case reqListen:
			l.listen(q.ln)
		case reqStopListen:
			l.unlisten(q.ln)
		case reqStop:
			stop = true
		}
		if q.done != nil {
			close(q.done)
		}
	}
	clear(reqs)
	l.mu.Lock()
	l.spare = reqs[:0]
	l.mu.Unlock()
	if r.displaced.Load() {
		return false
	}
	if !r.endPass() {
		return false
	}
	if stop {
		l.shutdown(r)
	}
	r.flushDirty()
	return stop
}

// requeue puts requests a displaced run did not take back in front.
func (l *eventLoop) requeue(reqs []loopReq) {
	l.mu.Lock()
	l.reqs = append(append([]loopReq(nil), reqs...), l.reqs...)
	l.mu.Unlock()
	l.wake()
}

// stop ends the loop after a failure of its own: every connection closes.
func (l *eventLoop) stop(r *loopRun) {
	l.shutdown(r)
}

// shutdown closes what the loop serves and its descriptors.
func (l *eventLoop) shutdown(r *loopRun) {
	l.mu.Lock()
	l.stopped = true
	reqs := l.reqs
	l.reqs = nil
	l.mu.Unlock()
	for _, q := range reqs {
		if q.kind == reqAdd {
			r.add(q.c) // closed below with the others
		}
		if q.done != nil {
			close(q.done)
		}
	}
	for fd := range l.lns {
		_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
		delete(l.lns, fd)
	}
	for _, c := range l.conns {
		c.closeWith(ErrServerClosed)
		l.drop(c)
	}
	unix.Close(l.epfd)
	unix.Close(l.wakefd)
	close(l.done)
}

// listen starts accepting on ln.
func (l *eventLoop) listen(ln *loopListener) {
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(ln.fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, ln.fd, &ev); err != nil {
		l.s.logger.Error("remoting: the event loop cannot watch a listener", "addr", ln.ln.Addr().String(), "err", err)
		return
	}
	l.lns[int32(ln.fd)] = ln
}

// unlisten stops accepting on ln (before the listener is closed).
func (l *eventLoop) unlisten(ln *loopListener) {
	if l.lns[int32(ln.fd)] == ln {
		_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, ln.fd, nil)
		delete(l.lns, int32(ln.fd))
	}
}

// accept takes the connections waiting on ln and hands each to a loop.
func (r *loopRun) accept(ln *loopListener) {
	l := r.l
	for i := 0; i < 64; i++ {
		var nfd int
		var sa unix.Sockaddr
		var aerr error
		// Control holds a reference to the descriptor: a close of the
		// listener meanwhile waits for the accept.
		err := ln.raw.Control(func(fd uintptr) {
			nfd, sa, aerr = unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		})
		if err == nil {
			err = aerr
		}
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.ECONNABORTED) || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors and the like: the listener stays
			// readable, so the next pass tries again.
			l.s.logger.Warn("remoting: accept failed", "addr", ln.ln.Addr().String(), "err", err)
			return
		}
		_ = unix.SetsockoptInt(nfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		_ = unix.SetsockoptInt(nfd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)
		_ = unix.SetsockoptInt(nfd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, 30)
		_ = unix.SetsockoptInt(nfd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, 30)
		remote := sockaddrTCP(sa)
		var local net.Addr
		if lsa, err := unix.Getsockname(nfd); err == nil {
			local = sockaddrTCP(lsa)
		}
		l.s.serveLoopFD(r, nfd, local, remote)
	}
}

func sockaddrTCP(sa unix.Sockaddr) net.Addr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: append(net.IP(nil), a.Addr[:]...), Port: a.Port}
	case *unix.SockaddrInet6:
		ta := &net.TCPAddr{IP: append(net.IP(nil), a.Addr[:]...), Port: a.Port}
		if a.ZoneId != 0 {
			if ifi, err := net.InterfaceByIndex(int(a.ZoneId)); err == nil {
				ta.Zone = ifi.Name
			}
		}
		return ta
	}
	return &net.TCPAddr{}
}

// add registers a connection handed to this loop.
func (r *loopRun) add(c *Conn) {
	l := r.l
	lc := c.lp
	lc.lastRead = r.now
	if r.now.IsZero() {
		lc.lastRead = time.Now()
	}
	if c.isClosed() {
		l.drop(c)
		return
	}
	lc.imu.Lock()
	lc.iRead = true
	lc.interest = unix.EPOLLIN | unix.EPOLLRDHUP
	if lc.iWrite {
		lc.interest |= unix.EPOLLOUT
	}
	ev := unix.EpollEvent{Events: lc.interest, Fd: int32(lc.fd)}
	err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, lc.fd, &ev)
	lc.imu.Unlock()
	if err != nil {
		c.closeWith(fmt.Errorf("transport: epoll_ctl add: %w", err))
		l.drop(c)
		return
	}
	l.conns[int32(lc.fd)] = c
}

// drop removes a closed connection from the loop and gives up the loop's
// reference to its descriptor.
func (l *eventLoop) drop(c *Conn) {
	lc := c.lp
	lc.imu.Lock()
	if lc.dropped {
		lc.imu.Unlock()
		return
	}
	lc.dropped = true
	lc.imu.Unlock()
	if l.conns[int32(lc.fd)] == c {
		delete(l.conns, int32(lc.fd))
		_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, lc.fd, nil)
	}
	if !lc.held.Load() {
		lc.pend = nil // a displaced run still serving it drops it itself
	}
	lc.release()
}

// readFrom reads once from c and serves the complete frames.
func (r *loopRun) readFrom(c *Conn) {
	lc := c.lp
	if r.mustPause(c) {
		return
	}
	var buf []byte
	if lc.pend != nil {
		buf = lc.growPend(c.cfg.maxFrame)
	} else {
		buf = r.rbuf
	}
	n, e := rawRead(lc.fd, buf)
	switch {
	case e == syscall.EAGAIN:
		return
	case e != 0:
		c.closeWith(e)
		return
	case n == 0:
		if lc.pend != nil {
			c.closeWith(io.ErrUnexpectedEOF)
		} else {
			c.closeWith(io.EOF)
		}
		return
	}
	lc.lastRead = r.now
	if lc.pend != nil {
		lc.pend = lc.pend[:len(lc.pend)+n]
		r.serve(c, lc.pend, true)
		return
	}
	r.serve(c, r.rbuf[:n], false)
}

// growPend returns the free room of c's pending bytes, grown (doubling,
// up to the frame's size) when there is none: a frame's buffer grows as
// its bytes arrive, never to a size only announced.
func (lc *loopConn) growPend(maxFrame int) []byte {
	if len(lc.pend) < cap(lc.pend) {
		return lc.pend[len(lc.pend):cap(lc.pend)]
	}
	want := 2 * cap(lc.pend)
	if size, err := remoting.FrameSize(lc.pend, maxFrame); err == nil && size > 0 {
		want = min(max(want, 4<<10), size)
	}
	want = max(want, len(lc.pend)+512)
	grown := make([]byte, len(lc.pend), want)
	copy(grown, lc.pend)
	lc.pend = grown
	return lc.pend[len(lc.pend):cap(lc.pend)]
}

// serve dispatches the complete frames of b; what is left of an
// incomplete frame (or of frames not served because reading paused) is
// kept in c's pending bytes. owned says b is c's pending buffer, whose
// single frame may be handed over whole. A run displaced while it
// dispatched keeps the rest and lets c go.
func (r *loopRun) serve(c *Conn, b []byte, owned bool) {
	lc := c.lp
	for len(b) > 0 && !c.isClosed() {
		if r.mustPause(c) {
			break
		}
		size, err := remoting.FrameSize(b, c.cfg.maxFrame)
		if err != nil {
			c.closeWith(err)
			return
		}
		if size == 0 || size > len(b) {
			break
		}
		frame := b[:size]
		b = b[size:]
		cmd, err := remoting.DecodeFrameInline(frame[4:])
		if err != nil {
			c.closeWith(err)
			return
		}
		if owned && len(b) == 0 && size == cap(lc.pend) && &frame[0] == &lc.pend[0] {
			lc.pend = nil // the body aliases the buffer made for this frame
		} else if cmd.Body != nil {
			// Lent to the dispatch: copied by the paths that keep it
			// (ownBody), left in place for a handler that borrows it.
			lc.loaned = cmd.Body
		}
		c.pipelined = len(b) > 0
		r.dispatch(c, cmd)
		if lc.loaned != nil {
			if poisonLoans {
				fillPoison(lc.loaned)
			}
			lc.loaned = nil
		}
		if r.displaced.Load() {
			r.letGo(c, b, owned)
			return
		}
	}
	if c.isClosed() {
		lc.pend = nil
		return
	}
	lc.keep(b, owned)
	if len(b) == 0 && !lc.readOff {
		// Stop reading now, as a reader does before its next frame,
		// when a bound is reached: the peer's next bytes stay in the
		// kernel.
		r.mustPause(c)
	}
}

// keep makes rest, what serve left, c's pending bytes: a buffer of c's
// own, sized for the frame it starts (up to the loop's read buffer; it
// grows as more arrives).
func (lc *loopConn) keep(rest []byte, owned bool) {
	if len(rest) == 0 {
		lc.pend = nil
		return
	}
	if owned && &rest[0] == &lc.pend[0] {
		return // nothing was taken
	}
	size := len(rest)
	if s, err := remoting.FrameSize(rest, 0); err == nil && s > size {
		size = min(s, max(size, loopReadBuf))
	}
	if owned && cap(lc.pend) >= size {
		lc.pend = lc.pend[:copy(lc.pend[:cap(lc.pend)], rest)]
		return
	}
	p := make([]byte, len(rest), max(size, 512))
	copy(p, rest)
	lc.pend = p
}

// dispatch hands a frame's command on, as the reader goroutine does; the
// watchdog sees how long it takes.
func (r *loopRun) dispatch(c *Conn, cmd *remoting.Command) {
	if cmd.IsResponse() {
		c.ownBody(cmd)
		cmd.ExtMap()
		c.complete(cmd)
		return
	}
	r.joinPass(c)
	r.serving.Store(c)
	r.unit.Add(1)
	c.cfg.dispatch(c, cmd)
	r.unit.Add(1)
	c.arrived = time.Time{}
}

// joinPass counts a request of c's in the pass (its frame's dispatch, or
// one taken back from an executor's queue) and, in a pass that gathers
// its writes, holds c's writer role for it.
func (r *loopRun) joinPass(c *Conn) {
	lc := c.lp
	lc.run = r
	if r.dispatched == 0 {
		if s := r.l.s.cfg.LoopPassStart; s != nil {
			r.doneOwed = s()
		}
	}
	r.dispatched++
	if r.dispatched == 2 {
		// A pass with more than one frame gathers what they write; a
		// lone frame (one request in flight) writes its own at once.
		if b := r.l.s.cfg.LoopPassBegin; b != nil {
			r.passHeld = b()
		}
	}
	if r.passHeld && !lc.holding {
		// Hold the connection's writer role for the pass: the answers
		// LoopPassEnd completes, and any completed elsewhere meanwhile,
		// leave with the pass's one write to it.
		c.wmu.Lock()
		if !c.writing && !lc.blocked && !c.wclosed {
			c.writing = true
			lc.holding = true
		}
		c.wmu.Unlock()
		if lc.holding && lc.dirty.CompareAndSwap(false, true) {
			r.queueDirty(c)
		}
	}
}

// runTaken runs on the loop, within the dispatch of a frame of another
// request, a request of c's that its executor had queued
// (Executor.takeBack), as the frame's own would run inline: in the pass,
// its answer left for the pass's write.
func (r *loopRun) runTaken(c *Conn, h ReplyHandler, req *remoting.Command) {
	r.joinPass(c)
	c.lp.inline.Store(req)
	c.run(h, req, true)
	c.lp.inline.Store(nil)
}

// endPass calls LoopPassEnd for a pass whose Begin returned true; the
// watchdog sees how long it takes. False when the run was displaced
// meanwhile (it has then written its answers and must end).
func (r *loopRun) endPass() bool {
	r.dispatched = 0
	if !r.passHeld {
		return true
	}
	r.passHeld = false
	return r.passUnit(r.l.s.cfg.LoopPassEnd)
}

// passDone calls LoopPassDone for a pass whose Start returned true, once
// the pass's answers are written; the watchdog sees how long it takes.
// False when the run was displaced meanwhile.
func (r *loopRun) passDone() bool {
	if !r.doneOwed {
		return true
	}
	r.doneOwed = false
	return r.passUnit(r.l.s.cfg.LoopPassDone)
}

// passUnit runs a pass hook as a unit of work.
func (r *loopRun) passUnit(hook func()) bool {
	r.serving.Store(nil)
	r.unit.Add(1)
	hook()
	r.unit.Add(1)
	if r.displaced.Load() {
		r.letGo(nil, nil, false)
		return false
	}
	return true
}

// letGo ends a displaced run: it keeps the rest of c's bytes, writes the
// answers its handler queued, hands c back to the loop and ends.
func (r *loopRun) letGo(c *Conn, rest []byte, owned bool) {
	if r.passHeld {
		// The pass's gathered writes are this run's to finish.
		r.passHeld = false
		r.l.s.cfg.LoopPassEnd()
	}
	r.dispatched = 0
	if c != nil {
		lc := c.lp
		if c.isClosed() {
			lc.pend = nil
		} else {
			lc.keep(rest, owned)
		}
	}
	r.flushDirty()
	if r.doneOwed {
		r.doneOwed = false
		r.l.s.cfg.LoopPassDone()
	}
	if c != nil {
		c.lp.held.Store(false)
		if !r.l.post(loopReq{kind: reqRelease, c: c}) {
			c.lp.pend = nil
		}
	}
	r.l.stalled.Add(-1)
}

// release serves again a connection a displaced run let go.
func (r *loopRun) release(c *Conn) {
	lc := c.lp
	if c.isClosed() || lc.held.Load() {
		return
	}
	lc.lastRead = r.now
	if lc.readOff && !lc.pausedQueue.Load() && !lc.onBudget {
		lc.readOff = false
	}
	if !lc.readOff {
		lc.imu.Lock()
		lc.iRead = true
		lc.setInterest()
		lc.imu.Unlock()
		if len(lc.pend) > 0 {
			r.serve(c, lc.pend, true)
		}
	}
}

// mustPause checks, before a frame is served, the bounds that stop a
// connection's reading: its write queue, and the server's body budget.
func (r *loopRun) mustPause(c *Conn) bool {
	l := r.l
	lc := c.lp
	if c.queued.Load() > c.maxQueued() {
		c.pauses.Add(1)
		lc.pausedQueue.Store(true)
		lc.pauseRead(true)
		// The writer may have drained the queue meanwhile.
		if c.queued.Load() <= c.maxQueued() && lc.pausedQueue.CompareAndSwap(true, false) {
			lc.pauseRead(false)
			return false
		}
		return true
	}
	if b := c.cfg.budget; b.over() {
		if !lc.onBudget {
			lc.onBudget = true
			lc.pauseSince = r.now
			b.pauses.Add(1)
			l.budgetPaused = append(l.budgetPaused, c)
			lc.pauseRead(true)
			b.waitLoop(l)
		}
		return true
	}
	return false
}

// resumeQueue reads again from c, whose write queue drained.
func (r *loopRun) resumeQueue(c *Conn) {
	lc := c.lp
	if c.isClosed() || lc.onBudget || lc.held.Load() {
		return
	}
	lc.pauseRead(false)
	lc.lastRead = r.now
	if len(lc.pend) > 0 {
		r.serve(c, lc.pend, true)
	}
}

// resumeBudget reads again from the connections paused for the body
// budget (those of back, given back by a displaced run, or all), their
// pause counted as queue wait of their next request.
func (r *loopRun) resumeBudget(back []*Conn) {
	l := r.l
	if back != nil {
		l.budgetPaused = append(l.budgetPaused, back...)
	}
	if l.s.budget.over() {
		l.s.budget.waitLoop(l)
		return
	}
	paused := l.budgetPaused
	l.budgetPaused = nil
	for i, c := range paused {
		if r.displaced.Load() {
			l.post(loopReq{kind: reqBudgetBack, conns: append([]*Conn(nil), paused[i:]...)})
			return
		}
		lc := c.lp
		if !lc.onBudget {
			continue
		}
		lc.onBudget = false
		l.s.budget.pausedNs.Add(int64(r.now.Sub(lc.pauseSince)))
		if c.isClosed() {
			continue
		}
		c.arrived = lc.pauseSince
		lc.lastRead = r.now
		if !lc.pausedQueue.Load() {
			lc.pauseRead(false)
		}
		if len(lc.pend) > 0 {
			r.serve(c, lc.pend, true)
		}
		c.arrived = time.Time{}
	}
}

// queueDirty notes that c has answers to write after the pass.
func (r *loopRun) queueDirty(c *Conn) {
	r.dmu.Lock()
	r.dirty = append(r.dirty, c)
	r.dmu.Unlock()
}

// flushDirty writes the answers queued on the loop during the pass.
func (r *loopRun) flushDirty() {
	r.dmu.Lock()
	dirty := r.dirty
	r.dirty = nil
	r.dmu.Unlock()
	for i, c := range dirty {
		lc := c.lp
		lc.dirty.Store(false)
		dirty[i] = nil
		if lc.holding {
			lc.holding = false
			c.loopFlush() // the role held for the pass
		} else {
			c.loopFlushIfIdle()
		}
	}
	r.dmu.Lock()
	if r.dirty == nil {
		r.dirty = dirty[:0]
	}
	r.dmu.Unlock()
}

// ownBody gives req the bytes of its body when the loop lent them (the
// frame's body is still in the buffer it was read into): for a request
// kept past its dispatch, or a code whose handler does not borrow it.
func (c *Conn) ownBody(req *remoting.Command) {
	if lc := c.lp; lc != nil && lc.loaned != nil {
		if len(req.Body) > 0 && &req.Body[0] == &lc.loaned[0] {
			req.Body = append([]byte(nil), req.Body...)
		}
		lc.loaned = nil
	}
}

// poisonLoans makes the loop overwrite a lent body once its dispatch has
// returned, so that a handler that kept it reads garbage: in test
// binaries, and where SPOOL_POISON_LOANED_BODIES=1 (the end-to-end tests
// set it for their brokers).
var poisonLoans = testing.Testing() || os.Getenv("SPOOL_POISON_LOANED_BODIES") == "1"

// fillPoison overwrites b with a pattern no test sends.
func fillPoison(b []byte) {
	for i := range b {
		b[i] = 0xEE
	}
}
