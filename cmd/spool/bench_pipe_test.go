package main

import (
	"context"
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
