package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/remoting"
)

// With one pull in flight per queue (RocketMQ's consumers keep one), the
// pulls of all the queues a broker serves go over one connection driven by
// one goroutine, as redis-benchmark drives its clients: it writes every
// pull that is due in one write, reads answers, and each answer's next
// pull joins the next write. Over the shared client a pull costs the
// consumer a hand-off from its queue's goroutine to the writer, from the
// reader back to the queue's goroutine, and a write of its own; in a drain
// that made the consumer, not the broker, set the rate.

// pullTimeout bounds the wait for any answer: a long-polling pull is held
// at most suspendTimeoutMillis (5 s).
const pullTimeout = 15 * time.Second

// consumeBroker pulls qs, all served by addr, from offsets (advanced as
// the answers come) until ctx ends. A failure is counted, and after 100 ms
// the connection is made again and every queue pulls from where it was.
func consumeBroker(ctx context.Context, addr string, qs []queueRef, offsets []int64, spec pullSpec, m *meter, last *atomic.Int64) {
	for ctx.Err() == nil {
		if err := pullLoop(ctx, addr, qs, offsets, spec, m, last); err != nil && ctx.Err() == nil {
			m.failure(err)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// pullLoop serves one connection to addr until ctx ends (nil) or the
// connection or an answer fails.
func pullLoop(ctx context.Context, addr string, qs []queueRef, offsets []int64, spec pullSpec, m *meter, last *atomic.Int64) error {
	nc, err := benchDial(ctx, addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	// A read blocked when ctx ends returns at once.
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	defer stop()
	rw := connIO(nc)
	br := bufio.NewReaderSize(rw, 256<<10)
	var out []byte
	for i, q := range qs {
		if out, err = frame(out, spec.request(q, offsets[i], true), int32(i)); err != nil {
			return err
		}
	}
	for {
		if !frameBuffered(br) {
			// About to wait for the broker: what is due goes first.
			if len(out) > 0 {
				_ = nc.SetWriteDeadline(time.Now().Add(pullTimeout))
				if _, err := rw.Write(out); err != nil {
					return quietAfter(ctx, err)
				}
				out = out[:0]
			}
			_ = nc.SetReadDeadline(time.Now().Add(pullTimeout))
			if ctx.Err() != nil {
				return nil // the deadline just set may have replaced ctx's
			}
		}
		resp, used, err := peekCommand(br)
		if err != nil {
			return quietAfter(ctx, err)
		}
		i := int(resp.Opaque)
		if !resp.IsResponse() || i < 0 || i >= len(qs) {
			_, _ = br.Discard(used)
			continue // not an answer to a pull of this loop
		}
		next, _, err := accountPull(resp, m, last)
		_, _ = br.Discard(used) // the answer's body is read: its bytes may go
		if err != nil {
			return fmt.Errorf("queue %d: %w", qs[i].queueID, err)
		}
		offsets[i] = next
		if out, err = frame(out, spec.request(qs[i], next, true), int32(i)); err != nil {
			return err
		}
	}
}

// peekCommand reads the next frame from br. A frame that fits br's buffer
// is decoded where it lies, its body pointing into the buffer, and stays
// there (used > 0) until the caller discards used bytes, after its last
// use of the command: a drain's 32 KiB answers are then neither copied
// nor allocated. A larger frame is read into a command of its own (used
// 0).
func peekCommand(br *bufio.Reader) (cmd *remoting.Command, used int, err error) {
	pre, err := br.Peek(4)
	if err != nil {
		if err == io.EOF && len(pre) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, 0, err
	}
	if _, err := remoting.FrameSize(pre, 0); err != nil {
		return nil, 0, err
	}
	size := 4 + int(binary.BigEndian.Uint32(pre))
	if size > br.Size() {
		cmd, err = remoting.ReadCommandCompact(br, 0)
		return cmd, 0, err
	}
	b, err := br.Peek(size)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, 0, err
	}
	if _, err := remoting.FrameSize(b, 0); err != nil {
		return nil, 0, err
	}
	if cmd, err = remoting.DecodeFrameInline(b[4:]); err != nil {
		return nil, 0, err
	}
	return cmd, size, nil
}

// frameBuffered says a whole frame is already read into br, so reading it
// will not wait.
func frameBuffered(br *bufio.Reader) bool {
	n := br.Buffered()
	if n < 4 {
		return false
	}
	b, err := br.Peek(4)
	return err == nil && uint64(n) >= 4+uint64(binary.BigEndian.Uint32(b))
}

// quietAfter is err, or nil once ctx has ended (the error is then the
// deadline that ended the read).
func quietAfter(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
