package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// TestConsumeBrokerDrainsEveryQueue drives the consumer's one-goroutine
// pull loop against a standalone broker, with PULL_MESSAGE and with
// LITE_PULL_MESSAGE: it must receive every message of every queue once,
// leave each queue's offset at its end, and then keep long-polling, so
// that messages sent while it waits arrive too.
func TestConsumeBrokerDrainsEveryQueue(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a standalone process")
	}
	f := startStandalone(t)
	t.Run("PULL_MESSAGE", func(t *testing.T) { drainEveryQueue(t, f.addr, "DrainT", false) })
	t.Run("LITE_PULL_MESSAGE", func(t *testing.T) { drainEveryQueue(t, f.addr, "DrainLiteT", true) })
}

// drainEveryQueue is TestConsumeBrokerDrainsEveryQueue against the broker
// at addr, on a topic of its own.
func drainEveryQueue(t *testing.T, addr, topic string, lite bool) {
	cli := transport.NewClient(transport.ClientConfig{DialTimeout: time.Second})
	defer cli.Close()
	const queues, size = 4, 100
	body := make([]byte, size)
	sent := make([]int64, queues)
	var sb sendBuilder // the producer's requests: SEND_MESSAGE_V2, 4 queues when the topic is made
	send := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			q := i % queues
			if _, err := call(cli, addr, sb.build(topic, q, body, 1, remoting.SerializeJSON, time.Now())); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
			sent[q]++
		}
	}
	send(203)
	qs := make([]queueRef, queues)
	for i := range qs {
		qs[i] = queueRef{addr: addr, queueID: i}
	}
	offsets := make([]int64, queues)
	m := newMeter()
	var last atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		consumeBroker(ctx, addr, qs, offsets, pullSpec{topic: topic, group: "drain-test-group", batch: 8, lite: lite}, m, &last)
	}()
	waitFor := func(n int64) {
		t.Helper()
		for m.ok.Load() < n && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		if got := m.ok.Load(); got != n {
			t.Fatalf("received %d messages, want %d (errors %d, first %v)", got, n, m.errs.Load(), m.firstErr.Load())
		}
	}
	waitFor(203)
	// Held pulls now wait on every queue; these arrive through them.
	time.Sleep(100 * time.Millisecond)
	send(41)
	waitFor(244)
	time.Sleep(200 * time.Millisecond) // nothing more may arrive
	cancel()
	<-done
	if got := m.ok.Load(); got != 244 {
		t.Fatalf("received %d messages in the end, want 244", got)
	}
	if got := m.bytes.Load(); got != 244*size {
		t.Fatalf("received %d body bytes, want %d", got, 244*size)
	}
	if n := m.errs.Load(); n != 0 {
		t.Fatalf("%d failures, first %v", n, m.firstErr.Load())
	}
	for q := range offsets {
		if offsets[q] != sent[q] {
			t.Fatalf("queue %d ends at offset %d, %d were sent to it", q, offsets[q], sent[q])
		}
	}
}

// TestFrameBuffered checks the test the pull loop makes before it reads:
// only a whole frame in the reader's buffer is read without waiting.
func TestFrameBuffered(t *testing.T) {
	req := remoting.NewRequest(remoting.PullMessage, map[string]string{"topic": "T"}, []byte("body"))
	frameBytes, err := remoting.AppendFrame(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want bool
	}{
		{"nothing", nil, false},
		{"part of the length", frameBytes[:3], false},
		{"part of the frame", frameBytes[:len(frameBytes)-1], false},
		{"the frame", frameBytes, true},
		{"a frame and part of the next", append(append([]byte{}, frameBytes...), frameBytes[:5]...), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufioWith(t, tc.in)
			if got := frameBuffered(br); got != tc.want {
				t.Fatalf("frameBuffered = %v, want %v", got, tc.want)
			}
		})
	}
}

// bufioWith is a reader whose buffer holds in, as after one read.
func bufioWith(t *testing.T, in []byte) *bufio.Reader {
	t.Helper()
	br := bufio.NewReaderSize(bytes.NewReader(in), 4096)
	_, _ = br.Peek(1) // one read fills the buffer with all of in
	if br.Buffered() != len(in) {
		t.Fatalf("buffered %d of %d bytes", br.Buffered(), len(in))
	}
	return br
}

// TestPullSpecRequest checks the pulls the generator sends: a lite pull is
// LITE_PULL_MESSAGE with the lite pull flag, as RocketMQ's clients send it,
// and only the held (suspended) pull has the suspend flag.
func TestPullSpecRequest(t *testing.T) {
	for _, c := range []struct {
		lite, suspend bool
		code          int32
		sysFlag       string
	}{
		{false, true, remoting.PullMessage, "6"},
		{false, false, remoting.PullMessage, "4"},
		{true, true, remoting.LitePullMessage, "22"},
		{true, false, remoting.LitePullMessage, "20"},
	} {
		spec := pullSpec{topic: "T", group: "g", batch: 16, lite: c.lite}
		req := spec.request(queueRef{queueID: 3}, 40, c.suspend)
		if req.Code != c.code || req.Ext("sysFlag") != c.sysFlag || req.Ext("queueId") != "3" ||
			req.Ext("queueOffset") != "40" || req.Ext("maxMsgNums") != "16" || req.Ext("topic") != "T" || req.Ext("consumerGroup") != "g" {
			t.Errorf("lite %v suspend %v: code %d, fields %v", c.lite, c.suspend, req.Code, req.ExtFields)
		}
	}
}

// TestPeekCommand checks the pull loop's frame reader: frames that fit
// the reader's buffer are decoded in place and left for the caller to
// discard, a larger one is read out whole, and a cut or malformed frame
// is an error.
func TestPeekCommand(t *testing.T) {
	answer := func(body []byte, opaque int32) []byte {
		resp := remoting.NewResponse(remoting.NewRequest(remoting.PullMessage, nil, nil), remoting.Success, "")
		resp.Opaque = opaque
		resp.ExtFields = map[string]string{"nextBeginOffset": "7"}
		resp.Body = body
		b, err := remoting.AppendFrame(nil, resp)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	small, large := bytes.Repeat([]byte("s"), 300), bytes.Repeat([]byte("L"), 5000)
	two := append(answer(small, 1), answer(large, 2)...)
	two = append(two, answer(small, 3)...)
	br := bufio.NewReaderSize(bytes.NewReader(two), 4096)
	for _, want := range []struct {
		opaque  int32
		body    []byte
		inPlace bool
	}{{1, small, true}, {2, large, false}, {3, small, true}} {
		cmd, used, err := peekCommand(br)
		if err != nil {
			t.Fatalf("opaque %d: %v", want.opaque, err)
		}
		if cmd.Opaque != want.opaque || !bytes.Equal(cmd.Body, want.body) || cmd.Ext("nextBeginOffset") != "7" || (used > 0) != want.inPlace {
			t.Fatalf("got opaque %d, %d body bytes, used %d; want opaque %d, %d bytes, in place %v",
				cmd.Opaque, len(cmd.Body), used, want.opaque, len(want.body), want.inPlace)
		}
		if _, err := br.Discard(used); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := peekCommand(br); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
	one := answer(small, 1)
	for _, c := range []struct {
		name string
		in   []byte
		want error
	}{
		{"cut in the length", one[:2], io.ErrUnexpectedEOF},
		{"cut in the frame", one[:len(one)-1], io.ErrUnexpectedEOF},
		{"length too short", []byte{0, 0, 0, 1, 0, 0, 0, 0}, remoting.ErrFrameTooShort},
	} {
		_, _, err := peekCommand(bufio.NewReaderSize(bytes.NewReader(c.in), 4096))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
