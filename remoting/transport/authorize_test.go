package transport

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
)

// The Authorize hook answers in the handler's place, before admission;
// a nil answer lets the request through; a refused oneway request gets
// no answer and does not run.
func TestAuthorizeHook(t *testing.T) {
	var ran atomic.Int32
	s := NewServer(ServerConfig{Authorize: func(c *Conn, req *remoting.Command) *remoting.Command {
		if c == nil {
			t.Error("no connection")
		}
		if string(req.Body) == "deny" {
			return remoting.NewResponse(req, remoting.NoPermission, "no")
		}
		return nil
	}})
	s.Register(codeEcho, func(c *Conn, req *remoting.Command) *remoting.Command {
		ran.Add(1)
		return echo(c, req)
	}, nil)
	addr, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cl := NewClient(ClientConfig{})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr.String(), remoting.NewRequest(codeEcho, nil, []byte("ok")))
	if err != nil || resp.Code != remoting.Success || string(resp.Body) != "ok" {
		t.Fatalf("allowed: %+v %v", resp, err)
	}
	resp, err = cl.Invoke(ctx, addr.String(), remoting.NewRequest(codeEcho, nil, []byte("deny")))
	if err != nil || resp.Code != remoting.NoPermission || resp.Remark != "no" {
		t.Fatalf("refused: %+v %v", resp, err)
	}
	if err := cl.InvokeOneway(addr.String(), remoting.NewRequest(codeEcho, nil, []byte("deny"))); err != nil {
		t.Fatal(err)
	}
	resp, err = cl.Invoke(ctx, addr.String(), remoting.NewRequest(codeEcho, nil, []byte("ok")))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("after: %+v %v", resp, err)
	}
	if n := ran.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2", n)
	}
}
