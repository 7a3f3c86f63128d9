package main

import (
	"bufio"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/broker"
	"github.com/spoolmq/spool/remoting"
)

// startBenchBroker runs a broker without name servers on a fresh store.
func startBenchBroker(t *testing.T) *broker.Broker {
	t.Helper()
	b := startServeBroker(t, &serveFlags{store: t.TempDir(), listen: "127.0.0.1:0"})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	})
	return b
}

// checkStored waits for the consume queues of qs (they follow the
// CommitLog asynchronously) and fails unless they hold exactly counted
// messages of topic.
func checkStored(t *testing.T, b *broker.Broker, topic string, qs []queueRef, counted int64) {
	t.Helper()
	var stored int64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		stored = 0
		for _, q := range qs {
			stored += b.Store().MaxOffsetInQueue(topic, int32(q.queueID))
		}
		if stored >= counted {
			break
		}
	}
	if stored != counted {
		t.Fatalf("counted %d messages, the broker stored %d", counted, stored)
	}
}

// The producer's connections, one request in flight and many: every
// answer is counted once, as a success, and the broker stored exactly
// the messages counted (single sends and batches).
func TestProduceConnCountsWhatWasStored(t *testing.T) {
	b := startBenchBroker(t)
	for _, c := range []struct {
		name          string
		window, batch int
		ser           remoting.SerializeType
	}{
		{"sync", 1, 1, remoting.SerializeJSON},
		{"pipelined", 16, 1, remoting.SerializeRocketMQ},
		{"pipelined-batch", 8, 4, remoting.SerializeJSON},
	} {
		t.Run(c.name, func(t *testing.T) {
			topic := "Bench" + c.name
			body := []byte("0123456789")
			qs := []queueRef{{addr: b.Addr(), queueID: 0}, {addr: b.Addr(), queueID: 1}}
			build := func(sb *sendBuilder, q queueRef, now time.Time) (*remoting.Command, int, int) {
				return sb.build(topic, q.queueID, body, c.batch, c.ser, now), c.batch, c.batch * len(body)
			}
			m := newMeter()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			produceConn(ctx, b.Addr(), qs, c.window, build, m)
			cancel()
			s := m.summary()
			if s.OK == 0 || s.Errors != 0 {
				t.Fatalf("summary %+v", s)
			}
			checkStored(t, b, topic, qs, s.OK)
		})
	}
}

// The producers with one request in flight, driven by one epoll loop:
// every answer counted once, and exactly what was counted stored.
func TestEpollProducersCountWhatWasStored(t *testing.T) {
	b := startBenchBroker(t)
	topic := "BenchEpoll"
	body := []byte("0123456789")
	qs := []queueRef{{addr: b.Addr(), queueID: 0}, {addr: b.Addr(), queueID: 1}}
	build := func(sb *sendBuilder, q queueRef, now time.Time) (*remoting.Command, int, int) {
		return sb.build(topic, q.queueID, body, 1, remoting.SerializeRocketMQ, now), 1, len(body)
	}
	var targets []epollTarget
	for range 5 {
		targets = append(targets, epollTarget{addr: b.Addr(), qs: qs})
	}
	m := newMeter()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	epollProducers(ctx, targets, build, m)
	cancel()
	s := m.summary()
	if s.OK == 0 || s.Errors != 0 {
		t.Fatalf("summary %+v", s)
	}
	checkStored(t, b, topic, qs, s.OK)
}

// scriptedBroker answers sends as they arrive, the answers to what one
// read brought in reverse order, every busyEvery-th answer SYSTEM_BUSY; it
// records the most requests it held unanswered and what it answered.
type scriptedBroker struct {
	busyEvery int

	mu             sync.Mutex
	maxOutstanding int
	ok, busy       int
}

func (s *scriptedBroker) serve(t *testing.T, nc net.Conn) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	n := 0
	for {
		var batch []*remoting.Command
		req, err := remoting.ReadCommandCompact(br, 0)
		if err != nil {
			return
		}
		batch = append(batch, req)
		for frameBuffered(br) {
			if req, err = remoting.ReadCommandCompact(br, 0); err != nil {
				return
			}
			batch = append(batch, req)
		}
		s.mu.Lock()
		s.maxOutstanding = max(s.maxOutstanding, len(batch))
		s.mu.Unlock()
		var out []byte
		for i := len(batch) - 1; i >= 0; i-- {
			n++
			code := int32(remoting.Success)
			if n%s.busyEvery == 0 {
				code = remoting.SystemBusy
			}
			resp := remoting.NewResponse(batch[i], code, "")
			resp.Opaque = batch[i].Opaque
			if out, err = remoting.AppendFrame(out, resp); err != nil {
				t.Error(err)
				return
			}
			s.mu.Lock()
			if code == remoting.Success {
				s.ok++
			} else {
				s.busy++
			}
			s.mu.Unlock()
		}
		if _, err := nc.Write(out); err != nil {
			return
		}
	}
}

// TestProducePipelinedKeepsItsWindow drives the one-goroutine pipelined
// producer against a broker that answers out of order and sometimes busy:
// it never has more than its window unanswered, counts every answer (the
// busy ones as failures), and returns once ctx has ended and what it sent
// is answered.
func TestProducePipelinedKeepsItsWindow(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := &scriptedBroker{busyEvery: 7}
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(t, nc)
		}
	}()
	body := []byte("0123456789")
	build := func(sb *sendBuilder, q queueRef, now time.Time) (*remoting.Command, int, int) {
		return sb.build("T", q.queueID, body, 1, remoting.SerializeJSON, now), 1, len(body)
	}
	qs := []queueRef{{addr: ln.Addr().String(), queueID: 0}, {addr: ln.Addr().String(), queueID: 1}}
	const window = 16
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	m := newMeter()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := producePipelined(ctx, nc, qs, window, build, m); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ok == 0 || s.busy == 0 {
		t.Fatalf("the broker answered %d OK and %d busy; want both", s.ok, s.busy)
	}
	if s.maxOutstanding > window {
		t.Fatalf("%d requests unanswered at once, window %d", s.maxOutstanding, window)
	}
	if got := m.ok.Load(); got != int64(s.ok) {
		t.Fatalf("counted %d sent, the broker answered %d OK", got, s.ok)
	}
	if got := m.errs.Load(); got != int64(s.busy) {
		t.Fatalf("counted %d failures, the broker answered %d busy", got, s.busy)
	}
	if got := m.bytes.Load(); got != int64(s.ok*len(body)) {
		t.Fatalf("counted %d bytes, want %d", got, s.ok*len(body))
	}
}
