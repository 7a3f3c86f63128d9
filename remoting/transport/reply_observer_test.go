package transport

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
)

// TestReplyObserver: the observer sees a value answer, a deferred answer
// completed after its handler returned (observed once it is completed,
// not before) and one completed before, each with its request and
// response codes and a handling time that is not negative; a oneway
// request is not observed.
func TestReplyObserver(t *testing.T) {
	type seen struct {
		code, resp int32
		elapsed    time.Duration
		completed  bool // the deferred answer was completed when observed
	}
	var mu sync.Mutex
	var got []seen
	var completed atomic.Bool
	const codeLater, codeEarly = 9101, 9102
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.OnReply(func(req *remoting.Command, a Answer) {
			mu.Lock()
			got = append(got, seen{req.Code, a.Code, a.Elapsed, completed.Load()})
			mu.Unlock()
		})
		s.Register(codeEcho, echo, nil)
		s.RegisterReply(codeLater, func(c *Conn, req *remoting.Command) Reply {
			r := c.Defer(req)
			go func() {
				// Complete it once the handler has returned and the
				// connection holds it.
				for c.Held() == 0 {
					time.Sleep(time.Millisecond)
				}
				completed.Store(true)
				r.Reply(remoting.NewResponse(req, remoting.SystemBusy, "later"))
			}()
			return Later(r)
		}, nil)
		s.RegisterReply(codeEarly, func(c *Conn, req *remoting.Command) Reply {
			r := c.Defer(req)
			r.Reply(remoting.NewResponse(req, remoting.TopicNotExist, "early"))
			return Later(r)
		}, nil)
	})
	cl := NewClient(ClientConfig{})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, code := range []int32{codeEcho, codeLater, codeEarly} {
		if _, err := cl.Invoke(ctx, addr, remoting.NewRequest(code, nil, []byte("x"))); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.InvokeOneway(addr, remoting.NewRequest(codeEcho, nil, []byte("x"))); err != nil {
		t.Fatal(err)
	}
	// A last round trip: the oneway request was handled before it.
	if _, err := cl.Invoke(ctx, addr, remoting.NewRequest(codeEcho, nil, []byte("x"))); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []seen{{codeEcho, remoting.Success, 0, false}, {codeLater, remoting.SystemBusy, 0, true},
		{codeEarly, remoting.TopicNotExist, 0, true}, {codeEcho, remoting.Success, 0, true}}
	if len(got) != len(want) {
		t.Fatalf("observed %+v, want %d answers", got, len(want))
	}
	for i, w := range want {
		if got[i].code != w.code || got[i].resp != w.resp || got[i].elapsed < 0 || got[i].completed != w.completed {
			t.Errorf("answer %d observed as %+v, want code %d response %d completed %v", i, got[i], w.code, w.resp, w.completed)
		}
	}
}

// TestReplyObserverLongPolledAndUnsent: an answer whose responder was
// marked long-polled is observed so; a value answer given after its
// handler closed the connection and a deferred answer given after the
// peer closed it are observed as unsent.
func TestReplyObserverLongPolledAndUnsent(t *testing.T) {
	const codeLong, codeGoneValue, codeGoneHeld = 9111, 9112, 9113
	seen := make(chan struct {
		code int32
		a    Answer
	}, 8)
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.OnReply(func(req *remoting.Command, a Answer) {
			seen <- struct {
				code int32
				a    Answer
			}{req.Code, a}
		})
		s.RegisterReply(codeLong, func(c *Conn, req *remoting.Command) Reply {
			r := c.Defer(req)
			r.MarkLongPolled()
			go func() {
				for c.Held() == 0 {
					time.Sleep(time.Millisecond)
				}
				r.Reply(remoting.NewResponse(req, remoting.PullNotFound, "nothing"))
			}()
			return Later(r)
		}, nil)
		s.Register(codeGoneValue, func(c *Conn, req *remoting.Command) *remoting.Command {
			c.Close()
			return remoting.NewResponse(req, remoting.Success, "too late")
		}, nil)
		s.RegisterReply(codeGoneHeld, func(c *Conn, req *remoting.Command) Reply {
			r := c.Defer(req)
			go func() {
				<-c.Closed()
				r.Reply(remoting.NewResponse(req, remoting.Success, "too late"))
			}()
			return Later(r)
		}, nil)
	})
	next := func() (int32, Answer) {
		t.Helper()
		select {
		case s := <-seen:
			return s.code, s.a
		case <-time.After(10 * time.Second):
			t.Fatal("no answer observed")
			return 0, Answer{}
		}
	}

	cl := NewClient(ClientConfig{})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cl.Invoke(ctx, addr, remoting.NewRequest(codeLong, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if code, a := next(); code != codeLong || a.Code != remoting.PullNotFound || !a.LongPolled || a.Unsent {
		t.Errorf("long-polled answer observed as %d %+v", code, a)
	}

	for _, code := range []int32{codeGoneValue, codeGoneHeld} {
		rc := dialRaw(t, addr)
		rc.send(request(code, 1, remoting.SerializeJSON))
		rc.nc.Close()
		if got, a := next(); got != code || a.Code != remoting.Success || a.LongPolled || !a.Unsent {
			t.Errorf("answer of %d after its connection closed observed as %d %+v", code, got, a)
		}
	}
}
