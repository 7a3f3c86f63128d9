package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/spoolmq/spool/internal/tlsconf"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// A producer's connection to one broker, driven without a client library
// (bench produce): the generator's own cost per message stays small, so
// on a machine it shares with the broker it measures the broker, not
// itself. With one request in flight a single goroutine writes a request
// and reads its answer; with more, a single goroutine keeps up to
// --inflight requests outstanding, writing those it may send at once
// together, and matches each answer to its request's send time by
// opaque.
// Requests are built, signed (--accessKey) and framed as Spool's client
// would; --tls dials TLS.

// pipeBatchMax bounds the requests framed into one write.
const pipeBatchMax = 64

// produceConn sends to the queues qs (all of one broker) until ctx ends,
// dialing again (after 100 ms) when the connection fails.
func produceConn(ctx context.Context, addr string, qs []queueRef, window int, build requestBuilder, m *meter) {
	for ctx.Err() == nil {
		nc, err := benchDial(ctx, addr)
		if err != nil {
			if ctx.Err() == nil {
				m.failure(err)
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		if window == 1 {
			err = produceSync(ctx, nc, qs, build, m)
		} else {
			err = producePipelined(ctx, nc, qs, window, build, m)
		}
		nc.Close()
		if err != nil && ctx.Err() == nil {
			m.failure(err)
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// requestBuilder builds the next request for queue q with sb, and says
// how many messages and body bytes it carries.
type requestBuilder func(sb *sendBuilder, q queueRef, now time.Time) (req *remoting.Command, msgs, bytes int)

// benchDial connects to a broker as bench's client does.
func benchDial(ctx context.Context, addr string) (net.Conn, error) {
	d := &tlsconf.Dialer{Timeout: 5 * time.Second}
	if benchTLS {
		d.TLS = &tls.Config{InsecureSkipVerify: true}
	}
	return d.DialContext(ctx, "tcp", addr)
}

// connIO is what the generator reads and writes nc through: the
// transport's raw system calls on a plain TCP connection (no wake-up of
// the runtime's monitor thread per call), nc itself under TLS.
func connIO(nc net.Conn) io.ReadWriter {
	if r := transport.NewRawIO(nc); r != nil {
		return r
	}
	return nc
}

// frame sets req's opaque, signs it and appends its frame to dst.
func frame(dst []byte, req *remoting.Command, opaque int32) ([]byte, error) {
	req.Opaque = opaque
	req.Flag = 0
	signAdmin(req)
	return remoting.AppendFrame(dst, req)
}

// account records an answer that came lat after its request.
func account(m *meter, resp *remoting.Command, msgs, bytes int, lat time.Duration) bool {
	if resp.Code == remoting.Success {
		m.success(msgs, bytes, lat)
		return true
	}
	m.failure(fmt.Errorf("code %d: %s", resp.Code, resp.Remark))
	return false
}

// produceSync is one request in flight: write, read the answer, again.
func produceSync(ctx context.Context, nc net.Conn, qs []queueRef, build requestBuilder, m *meter) error {
	var sb sendBuilder
	rw := connIO(nc)
	br := bufio.NewReaderSize(rw, 64<<10)
	var buf []byte
	var err error
	for seq := 0; ctx.Err() == nil; seq++ {
		q := qs[seq%len(qs)]
		t0 := time.Now()
		req, msgs, bytes := build(&sb, q, t0)
		if buf, err = frame(buf[:0], req, int32(seq)); err != nil {
			return err
		}
		_ = nc.SetDeadline(t0.Add(3 * time.Second))
		if _, err := rw.Write(buf); err != nil {
			return err
		}
		resp, err := remoting.ReadCommandCompact(br, 0)
		if err != nil {
			return err
		}
		if !account(m, resp, msgs, bytes, time.Since(t0)) {
			time.Sleep(time.Millisecond) // a busy broker: back off a little
		}
	}
	return nil
}

// sent is what the generator keeps of an outstanding request.
type sent struct {
	at          time.Time
	msgs, bytes int
}

// backedOff is a slot whose request got a busy answer: it sends again
// once until has passed.
type backedOff struct {
	slot  int
	until time.Time
}

// producePipelined keeps up to window requests outstanding from one
// goroutine, as redis-benchmark drives a pipelined client: it writes the
// requests of every free slot (up to pipeBatchMax per write), reads
// answers, and once no whole answer is left in its buffer writes the
// requests of the slots the answers freed, then waits for more. A
// request's opaque is its slot. A busy answer holds its slot back for
// 1 ms. When ctx ends it sends nothing more and returns once the
// outstanding requests are answered (or none came for 3 s).
func producePipelined(ctx context.Context, nc net.Conn, qs []queueRef, window int, build requestBuilder, m *meter) error {
	rw := connIO(nc)
	br := bufio.NewReaderSize(rw, 256<<10)
	slots := make([]sent, window)
	busy := make([]bool, window)
	free := make([]int, 0, window)
	for i := window - 1; i >= 0; i-- {
		free = append(free, i)
	}
	var held []backedOff
	var sb sendBuilder
	var buf []byte
	inflight, seq := 0, 0
	for {
		if !frameBuffered(br) {
			now := time.Now()
			keep := held[:0]
			for _, b := range held {
				if now.Before(b.until) {
					keep = append(keep, b)
				} else {
					free = append(free, b.slot)
				}
			}
			held = keep
			for ctx.Err() == nil && len(free) > 0 {
				for n := 0; n < pipeBatchMax && len(free) > 0; n++ {
					slot := free[len(free)-1]
					free = free[:len(free)-1]
					req, msgs, bytes := build(&sb, qs[seq%len(qs)], now)
					seq++
					var err error
					if buf, err = frame(buf, req, int32(slot)); err != nil {
						return err
					}
					slots[slot], busy[slot] = sent{at: now, msgs: msgs, bytes: bytes}, true
					inflight++
				}
				_ = nc.SetWriteDeadline(now.Add(3 * time.Second))
				if _, err := rw.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
			if inflight == 0 {
				if ctx.Err() != nil {
					return nil
				}
				// Every slot is held back after a busy answer.
				time.Sleep(time.Until(held[0].until))
				continue
			}
			_ = nc.SetReadDeadline(now.Add(3 * time.Second))
		}
		resp, err := remoting.ReadCommandCompact(br, 0)
		if err != nil {
			return fmt.Errorf("%d requests unanswered: %w", inflight, err)
		}
		slot := int(resp.Opaque)
		if !resp.IsResponse() || slot < 0 || slot >= window || !busy[slot] {
			continue // not an answer to a request of this connection
		}
		now := time.Now()
		s := slots[slot]
		busy[slot] = false
		inflight--
		if account(m, resp, s.msgs, s.bytes, now.Sub(s.at)) {
			free = append(free, slot)
		} else {
			held = append(held, backedOff{slot: slot, until: now.Add(time.Millisecond)})
		}
		if inflight == 0 && ctx.Err() != nil {
			return nil
		}
	}
}
