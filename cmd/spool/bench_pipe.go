package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/spoolmq/spool/internal/tlsconf"
	"github.com/spoolmq/spool/remoting"
)

// A producer's connection to one broker, driven without a client library
// (bench produce): the generator's own cost per message stays small, so
// on a machine it shares with the broker it measures the broker, not
// itself. With one request in flight a single goroutine writes a request
// and reads its answer; with more, a writer keeps up to --inflight
// requests outstanding, writing those it may send at once together, and
// a reader matches each answer to its request's send time by opaque.
// Requests are built, signed (--accessKey) and framed as Spool's client
// would; --tls dials TLS.

// pipeBatchMax bounds the requests the writer frames into one write.
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
	br := bufio.NewReaderSize(nc, 64<<10)
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
		if _, err := nc.Write(buf); err != nil {
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

// sent is what the reader needs of an outstanding request.
type sent struct {
	at          time.Time
	msgs, bytes int
}

// producePipelined keeps up to window requests outstanding.
func producePipelined(ctx context.Context, nc net.Conn, qs []queueRef, window int, build requestBuilder, m *meter) error {
	var mu sync.Mutex
	outstanding := make(map[int32]sent, window) // guarded by mu
	slots := make(chan struct{}, window)
	for range window {
		slots <- struct{}{}
	}
	readErr := make(chan error, 1)
	writerDone := make(chan struct{})
	go func() {
		br := bufio.NewReaderSize(nc, 256<<10)
		for {
			resp, err := remoting.ReadCommandCompact(br, 0)
			if err != nil {
				readErr <- err
				return
			}
			now := time.Now()
			mu.Lock()
			s, ok := outstanding[resp.Opaque]
			delete(outstanding, resp.Opaque)
			left := len(outstanding)
			mu.Unlock()
			if !ok {
				continue
			}
			if account(m, resp, s.msgs, s.bytes, now.Sub(s.at)) {
				slots <- struct{}{}
			} else {
				// A busy broker: this slot backs off a little.
				time.AfterFunc(time.Millisecond, func() { slots <- struct{}{} })
			}
			select {
			case <-writerDone:
				if left == 0 {
					readErr <- nil
					return
				}
			default:
			}
		}
	}()
	var sb sendBuilder
	var buf []byte
	var err error
	seq := 0
	write := func() error {
		if len(buf) == 0 {
			return nil
		}
		_ = nc.SetWriteDeadline(time.Now().Add(3 * time.Second))
		_, err := nc.Write(buf)
		buf = buf[:0]
		return err
	}
	for err == nil {
		select {
		case <-ctx.Done():
		case <-slots:
		case err = <-readErr:
			continue
		}
		if ctx.Err() != nil {
			break
		}
		for n := 0; ; n++ {
			q := qs[seq%len(qs)]
			now := time.Now()
			req, msgs, bytes := build(&sb, q, now)
			op := int32(seq)
			seq++
			mu.Lock()
			outstanding[op] = sent{at: now, msgs: msgs, bytes: bytes}
			mu.Unlock()
			if buf, err = frame(buf, req, op); err != nil {
				break
			}
			if n+1 == pipeBatchMax {
				break
			}
			select {
			case <-slots:
				continue
			default:
			}
			break
		}
		if err == nil {
			err = write()
		}
	}
	close(writerDone)
	if err != nil {
		return err
	}
	// Wait for the answers still outstanding, up to the request timeout.
	mu.Lock()
	left := len(outstanding)
	mu.Unlock()
	if left == 0 {
		return nil
	}
	_ = nc.SetReadDeadline(time.Now().Add(3 * time.Second))
	if err := <-readErr; err != nil && !errors.Is(err, net.ErrClosed) {
		mu.Lock()
		n := len(outstanding)
		mu.Unlock()
		if n > 0 {
			return fmt.Errorf("%d requests unanswered: %w", n, err)
		}
	}
	return nil
}
