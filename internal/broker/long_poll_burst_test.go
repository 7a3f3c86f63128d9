package broker

import (
	"context"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/longpoll"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// A burst of long-poll wake-ups re-enters through the pull executor: with
// its only worker busy, every woken pull waits in its queue (none is
// answered on a goroutine of its own), and all are answered once the
// worker is free.
func TestLongPollWakeUpsBoundedByPullExecutor(t *testing.T) {
	const n = 20
	e := startBroker(t, func(c *Config, _ *store.Config) {
		c.PullMessageThreadPoolNums = 1
		c.PullThreadPoolQueueCapacity = 100
	})
	e.createTopic("LB", 1)
	answers := make(chan *remoting.Command, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range n {
		err := e.client.InvokeAsync(ctx, e.b.Addr(), pullReq("g", "LB", 0, 0, pullFlagSubscription|pullFlagSuspend, 20000, "*"),
			func(r *remoting.Command, err error) {
				if err != nil {
					t.Error(err)
				}
				answers <- r
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the pulls to be held", func() bool { return e.b.longPoll.Held() == n })

	// Occupy the pull executor's only worker.
	var conn *transport.Conn
	e.b.longPoll.Each(func(p *longpoll.Pull) { conn = p.Responder.Conn() })
	gate, running := make(chan struct{}), make(chan struct{})
	blocker := conn.Defer(remoting.NewRequest(remoting.PullMessage, nil, nil))
	e.b.pullEx.Resume(blocker, func(*transport.Responder) {
		close(running)
		<-gate
	})
	<-running

	before := e.b.pullEx.Stats().Resumed
	e.mustSend("LB", 0, "", "wake")
	waitFor(t, "the woken pulls to queue", func() bool { return e.b.pullEx.QueueLen() == n })
	if got := e.b.pullEx.Stats().Resumed - before; got != n {
		t.Fatalf("%d pulls resumed through the executor, want %d", got, n)
	}
	select {
	case r := <-answers:
		t.Fatalf("a woken pull was answered while the only pull worker was busy: %+v", r)
	default:
	}
	close(gate)
	for range n {
		r := <-answers
		if r == nil || r.Code != remoting.Success {
			t.Fatalf("woken pull: %+v", r)
		}
	}
	if e.b.longPoll.Held() != 0 {
		t.Errorf("%d pulls still held", e.b.longPoll.Held())
	}
}
