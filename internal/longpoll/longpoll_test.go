package longpoll

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// rig is a server whose one request code holds every request in a
// Service built from its Deps alone: the queue ends are a map, and a
// resumed pull is answered with its topic as remark.
type rig struct {
	t       *testing.T
	s       *Service
	mu      sync.Mutex
	max     map[string]int64
	resumed []string
	addr    string
	client  *transport.Client
	timeout time.Duration
	holds   atomic.Int32 // OnHold calls
}

func newRig(t *testing.T, timeout time.Duration) *rig {
	g := &rig{t: t, max: make(map[string]int64), timeout: timeout}
	g.s = New(Deps{
		MaxOffset: func(topic string, queueID int32) int64 {
			g.mu.Lock()
			defer g.mu.Unlock()
			return g.max[pullKey(topic, queueID)]
		},
		Resume: func(p *Pull) {
			g.mu.Lock()
			g.resumed = append(g.resumed, p.Header.(string))
			g.mu.Unlock()
			p.Responder.Reply(remoting.NewResponse(p.Responder.Request(), remoting.Success, p.Header.(string)))
		},
		OnHold: func() { g.holds.Add(1) },
	})
	srv := transport.NewServer(transport.ServerConfig{})
	srv.RegisterReply(remoting.PullMessage, func(c *transport.Conn, req *remoting.Command) transport.Reply {
		r := c.Defer(req)
		topic := req.Ext("topic")
		g.s.Suspend(&Pull{Responder: r, Topic: topic, QueueID: 0, Offset: 0, Header: topic}, g.timeout)
		return transport.Later(r)
	}, nil)
	la, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g.addr = la.String()
	g.client = transport.NewClient(transport.ClientConfig{})
	t.Cleanup(func() {
		g.client.Close()
		srv.Close()
	})
	return g
}

// pull sends a held request for topic and returns where its answer lands.
func (g *rig) pull(topic string) <-chan *remoting.Command {
	out := make(chan *remoting.Command, 1)
	req := remoting.NewRequest(remoting.PullMessage, nil, nil)
	req.SetExt("topic", topic)
	err := g.client.InvokeAsync(context.Background(), g.addr, req, func(r *remoting.Command, err error) {
		if err != nil {
			g.t.Error(err)
		}
		out <- r
	})
	if err != nil {
		g.t.Fatal(err)
	}
	return out
}

func (g *rig) waitHeld(n int) {
	g.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for g.s.Held() != n {
		if time.Now().After(deadline) {
			g.t.Fatalf("%d pulls held, want %d", g.s.Held(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func answer(t *testing.T, ch <-chan *remoting.Command) *remoting.Command {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
		return nil
	}
}

// A dispatch wakes only the pulls held on its queue, and only once the
// queue's end passes their offset; each is resumed exactly once.
func TestDispatchWakesTheQueuesPulls(t *testing.T) {
	g := newRig(t, time.Hour)
	a, b := g.pull("A"), g.pull("B")
	g.waitHeld(2)
	g.s.OnDispatch("A", 0, 0) // not past offset 0
	g.s.OnDispatch("A", 1, 5) // another queue
	if g.s.Held() != 2 {
		t.Fatalf("%d pulls held after dispatches that wake none, want 2", g.s.Held())
	}
	g.s.OnDispatch("A", 0, 1)
	if r := answer(t, a); r.Remark != "A" {
		t.Fatalf("answer %q, want A", r.Remark)
	}
	g.waitHeld(1)
	g.s.OnDispatch("A", 0, 2)
	g.s.Shutdown()
	if r := answer(t, b); r.Remark != "B" {
		t.Fatalf("answer %q, want B", r.Remark)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.resumed) != 2 {
		t.Fatalf("resumed %v, want each pull once", g.resumed)
	}
}

// A held pull is resumed when its suspend time passes, and by the
// re-check once its queue has grown.
func TestExpiryAndRecheck(t *testing.T) {
	g := newRig(t, 20*time.Millisecond)
	if r := answer(t, g.pull("T")); r.Remark != "T" {
		t.Fatalf("answer %q, want T", r.Remark)
	}
	g.waitHeld(0)

	g.timeout = time.Hour
	ch := g.pull("R")
	g.waitHeld(1)
	g.s.Recheck()
	if g.s.Held() != 1 {
		t.Fatal("the re-check resumed a pull whose queue did not grow")
	}
	g.mu.Lock()
	g.max[pullKey("R", 0)] = 3
	g.mu.Unlock()
	g.s.Recheck()
	if r := answer(t, ch); r.Remark != "R" {
		t.Fatalf("answer %q, want R", r.Remark)
	}
}

// After Shutdown nothing is held: a new pull is resumed at once.
func TestShutdownRefusesToHold(t *testing.T) {
	g := newRig(t, time.Hour)
	g.s.Shutdown()
	if r := answer(t, g.pull("S")); r.Remark != "S" {
		t.Fatalf("answer %q, want S", r.Remark)
	}
	if g.s.Held() != 0 {
		t.Fatalf("%d pulls held after shutdown", g.s.Held())
	}
}

// The held count (what the store's dispatcher asks through Holding)
// follows every way a pull leaves the table, and each hold is reported
// through OnHold once.
func TestHoldingFollowsTheTable(t *testing.T) {
	g := newRig(t, 300*time.Millisecond)
	if g.s.Holding() {
		t.Fatal("holding before any pull")
	}
	a, b := g.pull("A"), g.pull("B")
	g.waitHeld(2)
	if !g.s.Holding() || g.holds.Load() != 2 {
		t.Fatalf("holding %v with %d OnHold calls, want true with 2", g.s.Holding(), g.holds.Load())
	}
	g.s.OnDispatch("A", 0, 1) // wakes A
	answer(t, a)
	g.waitHeld(1)
	answer(t, b) // B's suspend time passes
	g.waitHeld(0)
	if g.s.Holding() {
		t.Fatal("holding after every pull was answered")
	}
	c := g.pull("C")
	g.waitHeld(1)
	g.s.Shutdown()
	answer(t, c)
	g.waitHeld(0)
	if g.holds.Load() != 3 {
		t.Fatalf("%d OnHold calls for 3 holds", g.holds.Load())
	}
}
