package main

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// The producers' plain TCP connections with one request in flight each
// are driven by one goroutine waiting in epoll_wait for all of them, as
// redis-benchmark drives its clients: a goroutine per connection would
// cost the generator a park and a wake-up per message, and with many
// connections the generator, not the broker, would set the rate.

// epollConn is one connection of produceEpoll.
type epollConn struct {
	fd    int
	qs    []queueRef
	seq   int
	sb    sendBuilder
	out   []byte
	in    []byte
	sent  time.Time
	msgs  int
	bytes int
	addr  string
	// wait is when a failed connection may be dialed again; backoff when
	// a busy answer's next request may go.
	wait    time.Time
	backoff time.Time
	// busy says a request is unanswered.
	busy bool
}

// produceEpoll sends one request at a time on each of conns' connections
// until ctx ends. targets gives each connection's broker and queues.
func produceEpoll(ctx context.Context, targets []epollTarget, build requestBuilder, m *meter) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		m.failure(err)
		return
	}
	defer unix.Close(ep)
	conns := make([]*epollConn, len(targets))
	for i, t := range targets {
		conns[i] = &epollConn{fd: -1, qs: t.qs, addr: t.addr}
	}
	defer func() {
		for _, c := range conns {
			if c.fd >= 0 {
				unix.Close(c.fd)
			}
		}
	}()
	events := make([]unix.EpollEvent, len(conns))
	// A connection that failed is dialed again 100 ms later.
	fail := func(i int, err error) {
		c := conns[i]
		if ctx.Err() == nil {
			m.failure(err)
		}
		if c.fd >= 0 {
			_ = unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, c.fd, nil)
			unix.Close(c.fd)
			c.fd = -1
		}
		c.in = c.in[:0]
		c.busy = false
		c.wait = time.Now().Add(100 * time.Millisecond)
	}
	stopping := false
	send := func(i int) {
		c := conns[i]
		if stopping {
			return // the run is over: no new request
		}
		now := time.Now()
		q := c.qs[c.seq%len(c.qs)]
		req, msgs, bytes := build(&c.sb, q, now)
		var err error
		if c.out, err = frame(c.out[:0], req, int32(c.seq)); err != nil {
			fail(i, err)
			return
		}
		c.seq++
		c.sent, c.msgs, c.bytes, c.busy = now, msgs, bytes, true
		if n, err := transport.RawWrite(c.fd, c.out); err != nil || n != len(c.out) {
			// A request this small always fits an idle socket.
			if err == nil {
				err = errors.New("short write of a request")
			}
			fail(i, err)
		}
	}
	buf := make([]byte, 64<<10)
	var drainBy time.Time
	for {
		now := time.Now()
		if !stopping && ctx.Err() != nil {
			// The answers of the requests in flight are still
			// counted, for up to the request timeout.
			stopping, drainBy = true, now.Add(3*time.Second)
		}
		if stopping {
			busy := 0
			for _, c := range conns {
				if c.busy {
					busy++
				}
			}
			if busy == 0 || now.After(drainBy) {
				return
			}
		}
		timeout := 100
		for i, c := range conns {
			if stopping {
				break
			}
			switch {
			case c.fd < 0 && !now.Before(c.wait):
				fd, err := dialRawFD(ctx, c.addr)
				if err != nil {
					fail(i, err)
					continue
				}
				c.fd = fd
				ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
				if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
					fail(i, err)
					continue
				}
				send(i)
			case c.fd >= 0 && !c.backoff.IsZero() && !now.Before(c.backoff):
				c.backoff = time.Time{}
				send(i)
			case c.fd >= 0 && !c.backoff.IsZero():
				timeout = 1
			}
		}
		n, err := unix.EpollWait(ep, events, timeout)
		if errors.Is(err, unix.EINTR) {
			continue // a signal (the runtime preempts with them): wait again
		}
		if err != nil {
			m.failure(err)
			return
		}
		for _, ev := range events[:n] {
			i := int(ev.Fd)
			c := conns[i]
			if c.fd < 0 {
				continue
			}
			r, err := transport.RawRead(c.fd, buf)
			if err != nil || r == 0 {
				if errors.Is(err, unix.EAGAIN) {
					continue
				}
				if err == nil {
					err = errors.New("connection closed by the broker")
				}
				fail(i, err)
				continue
			}
			c.in = append(c.in, buf[:r]...)
			size, err := remoting.FrameSize(c.in, 0)
			if err != nil {
				fail(i, err)
				continue
			}
			if size == 0 || size > len(c.in) {
				continue
			}
			resp, err := remoting.DecodeFrame(c.in[4:size])
			c.in = c.in[:copy(c.in, c.in[size:])]
			c.busy = false
			if err != nil {
				fail(i, err)
				continue
			}
			if account(m, resp, c.msgs, c.bytes, time.Since(c.sent)) {
				send(i)
			} else {
				c.backoff = time.Now().Add(time.Millisecond) // a busy broker: back off a little
			}
		}
	}
}

// epollTarget is one connection's broker and queues.
type epollTarget struct {
	addr string
	qs   []queueRef
}

// dialRawFD connects to addr and returns a non-blocking descriptor of the
// connection that the Go runtime's poller does not watch.
func dialRawFD(ctx context.Context, addr string) (int, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return -1, err
	}
	defer nc.Close()
	raw, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(s uintptr) { fd, derr = unix.Dup(int(s)) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	// The duplicate shares the socket's non-blocking mode; closing the
	// connection leaves it open, out of the Go poller's set.
	unix.CloseOnExec(fd)
	return fd, nil
}

// epollProducers runs produceEpoll over the targets, one goroutine for
// every 256 connections.
func epollProducers(ctx context.Context, targets []epollTarget, build requestBuilder, m *meter) {
	const perLoop = 256
	var wg sync.WaitGroup
	for len(targets) > 0 {
		part := targets[:min(perLoop, len(targets))]
		targets = targets[len(part):]
		wg.Add(1)
		go func() {
			defer wg.Done()
			produceEpoll(ctx, part, build, m)
		}()
	}
	wg.Wait()
}
