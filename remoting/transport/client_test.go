package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
)

func TestClientInvokeBothSerializations(t *testing.T) {
	_, addr := startServer(t, ServerConfig{}, func(s *Server) { s.Register(codeEcho, echo, nil) })
	for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		cl := NewClient(ClientConfig{Serialize: st})
		for i := range 20 {
			req := remoting.NewRequest(codeEcho, map[string]string{"i": fmt.Sprint(i)}, []byte("hello"))
			resp, err := cl.Invoke(context.Background(), addr, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Ext("i") != fmt.Sprint(i) || string(resp.Body) != "hello" || resp.Serialize != st ||
				resp.Opaque != req.Opaque {
				t.Fatalf("response %+v", resp)
			}
		}
		cl.Close()
	}
}

// Many concurrent calls on one connection, answered out of order, each
// matched to its caller by opaque.
func TestClientConcurrentCallsMatchedByOpaque(t *testing.T) {
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		ex := s.NewExecutor(ExecutorConfig{Workers: 4, QueueCapacity: 1000})
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply {
			r := c.Defer(req)
			go func() { r.Reply(echo(c, req)) }() // completion order is arbitrary
			return Later(r)
		}, ex)
	})
	cl := NewClient(ClientConfig{})
	defer cl.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				want := fmt.Sprintf("%d/%d", g, i)
				resp, err := cl.Invoke(context.Background(), addr, remoting.NewRequest(codeEcho, nil, []byte(want)))
				if err != nil {
					errs <- err
					return
				}
				if string(resp.Body) != want {
					errs <- fmt.Errorf("got %q, want %q", resp.Body, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestClientAsync(t *testing.T) {
	_, addr := startServer(t, ServerConfig{}, func(s *Server) { s.Register(codeEcho, echo, nil) })
	cl := NewClient(ClientConfig{})
	defer cl.Close()
	const n = 200
	var wg sync.WaitGroup
	var bad atomic.Int32
	wg.Add(n)
	for i := range n {
		want := fmt.Sprint(i)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := cl.InvokeAsync(ctx, addr, remoting.NewRequest(codeEcho, nil, []byte(want)), func(resp *remoting.Command, err error) {
			defer wg.Done()
			defer cancel()
			if err != nil || string(resp.Body) != want {
				bad.Add(1)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d bad callbacks", bad.Load())
	}
}

func TestClientOneway(t *testing.T) {
	got := make(chan *remoting.Command, 1)
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(remoting.UpdateConsumerOffset, func(c *Conn, req *remoting.Command) *remoting.Command {
			got <- req
			return echo(c, req) // dropped: the request is oneway
		}, nil)
		s.Register(codeEcho, echo, nil)
	})
	cl := NewClient(ClientConfig{})
	defer cl.Close()
	if err := cl.InvokeOneway(addr, remoting.NewRequest(remoting.UpdateConsumerOffset, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.Flag&remoting.FlagOneway == 0 {
		t.Fatalf("flag %d", r.Flag)
	}
	// the connection still works and the dropped response caused no confusion
	if _, err := cl.Invoke(context.Background(), addr, remoting.NewRequest(codeEcho, nil, nil)); err != nil {
		t.Fatal(err)
	}
}

func TestClientTimeouts(t *testing.T) {
	held := make(chan *Responder, 4)
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply {
			r := c.Defer(req)
			held <- r
			return Later(r)
		}, nil)
	})
	cl := NewClient(ClientConfig{})
	defer cl.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	_, err := cl.Invoke(ctx, addr, remoting.NewRequest(codeEcho, nil, nil))
	cancel()
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("sync: %v", err)
	}
	late := <-held

	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	asyncErr := make(chan error, 1)
	if err := cl.InvokeAsync(ctx, addr, remoting.NewRequest(codeEcho, nil, nil), func(_ *remoting.Command, err error) {
		asyncErr <- err
	}); err != nil {
		t.Fatal(err)
	}
	if err := <-asyncErr; !errors.Is(err, ErrTimeout) {
		t.Fatalf("async: %v", err)
	}
	<-held

	// a cancelled context is not a timeout
	ctx, cancel = context.WithCancel(context.Background())
	go func() { <-held; cancel() }()
	if _, err := cl.Invoke(ctx, addr, remoting.NewRequest(codeEcho, nil, nil)); !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("cancelled: %v", err)
	}

	// a late response is dropped; the connection keeps working
	late.Reply(remoting.NewResponse(late.Request(), remoting.Success, "late"))
	go func() {
		r := <-held
		r.Reply(remoting.NewResponse(r.Request(), remoting.Success, "on time"))
	}()
	resp, err := cl.Invoke(context.Background(), addr, remoting.NewRequest(codeEcho, nil, nil))
	if err != nil || resp.Remark != "on time" {
		t.Fatalf("after a late response: %+v %v", resp, err)
	}
}

func TestClientReconnects(t *testing.T) {
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(codeEcho, echo, nil)
		s.Register(2, func(c *Conn, req *remoting.Command) *remoting.Command {
			c.Close()
			return nil
		}, nil)
	})
	cl := NewClient(ClientConfig{})
	defer cl.Close()
	c1, err := cl.Conn(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Invoke(context.Background(), addr, remoting.NewRequest(2, nil, nil)); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("call on a connection the server closed: %v", err)
	}
	<-c1.Closed()
	resp, err := cl.Invoke(context.Background(), addr, remoting.NewRequest(codeEcho, nil, []byte("again")))
	if err != nil || string(resp.Body) != "again" {
		t.Fatalf("after reconnect: %+v %v", resp, err)
	}
	c2, _ := cl.Conn(context.Background(), addr)
	if c2 == c1 {
		t.Fatal("same connection after close")
	}
}

func TestClientDialFailureAndClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	cl := NewClient(ClientConfig{DialTimeout: time.Second})
	if _, err := cl.Invoke(context.Background(), dead, remoting.NewRequest(codeEcho, nil, nil)); !errors.Is(err, ErrDial) {
		t.Fatalf("dial to a closed port: %v", err)
	}
	if err := cl.InvokeOneway(dead, remoting.NewRequest(codeEcho, nil, nil)); !errors.Is(err, ErrDial) {
		t.Fatalf("oneway dial to a closed port: %v", err)
	}

	held := make(chan struct{}, 1)
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply { held <- struct{}{}; return Later(c.Defer(req)) }, nil)
	})
	errs := make(chan error, 1)
	go func() {
		_, err := cl.Invoke(context.Background(), addr, remoting.NewRequest(codeEcho, nil, nil))
		errs <- err
	}()
	<-held
	cl.Close()
	if err := <-errs; !errors.Is(err, ErrConnClosed) {
		t.Fatalf("pending call at close: %v", err)
	}
	if _, err := cl.Invoke(context.Background(), addr, remoting.NewRequest(codeEcho, nil, nil)); !errors.Is(err, ErrClientClosed) {
		t.Fatalf("call after close: %v", err)
	}
}

func TestClientWithoutHandlerAnswersNotSupported(t *testing.T) {
	result := make(chan *remoting.Command, 1)
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply {
			r := c.Defer(req)
			go func() {
				resp, err := c.Invoke(context.Background(), remoting.NewRequest(remoting.GetConsumerRunningInfo, nil, nil))
				if err != nil {
					resp = remoting.NewResponse(req, remoting.SystemError, err.Error())
				}
				result <- resp
				r.Reply(remoting.NewResponse(req, remoting.Success, ""))
			}()
			return Later(r)
		}, nil)
	})
	cl := NewClient(ClientConfig{})
	defer cl.Close()
	if _, err := cl.Invoke(context.Background(), addr, remoting.NewRequest(codeEcho, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if r := <-result; r.Code != remoting.RequestCodeNotSupported || r.Remark != "request type 307 not supported" {
		t.Fatalf("client answer %+v", r)
	}
}

func TestCallsOnClosedConn(t *testing.T) {
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(codeEcho, echo, nil)
		s.RegisterDefault(func(c *Conn, req *remoting.Command) *remoting.Command {
			return remoting.NewResponse(req, remoting.SystemError, "custom default")
		})
	})
	cl := NewClient(ClientConfig{})
	defer cl.Close()
	ctx := context.Background()
	resp, err := cl.Invoke(ctx, addr, remoting.NewRequest(777, nil, nil))
	if err != nil || resp.Remark != "custom default" {
		t.Fatalf("default handler: %+v %v", resp, err)
	}
	c, err := cl.Conn(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if c.LocalAddr() == nil || c.RemoteAddr().String() != addr {
		t.Fatalf("addrs %v %v", c.LocalAddr(), c.RemoteAddr())
	}
	cl.CloseConn(addr)
	<-c.Closed()
	if _, err := c.Invoke(ctx, remoting.NewRequest(codeEcho, nil, nil)); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("Invoke: %v", err)
	}
	if err := c.InvokeAsync(ctx, remoting.NewRequest(codeEcho, nil, nil), func(*remoting.Command, error) {
		t.Error("callback after a refused call")
	}); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("InvokeAsync: %v", err)
	}
	if err := c.InvokeOneway(remoting.NewRequest(codeEcho, nil, nil)); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("InvokeOneway: %v", err)
	}
	// the client dials a new connection
	if _, err := cl.Invoke(ctx, addr, remoting.NewRequest(codeEcho, nil, nil)); err != nil {
		t.Fatal(err)
	}
}

// An async call pending when the connection closes gets ErrConnClosed.
func TestAsyncCallFailsOnClose(t *testing.T) {
	held := make(chan *Conn, 1)
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply { held <- c; return Later(c.Defer(req)) }, nil)
	})
	cl := NewClient(ClientConfig{})
	defer cl.Close()
	errs := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.InvokeAsync(ctx, addr, remoting.NewRequest(codeEcho, nil, nil), func(_ *remoting.Command, err error) {
		errs <- err
	}); err != nil {
		t.Fatal(err)
	}
	(<-held).Close()
	if err := <-errs; !errors.Is(err, ErrConnClosed) {
		t.Fatalf("err %v", err)
	}
}

// Prepare sees every request the client sends, whichever way it is sent,
// before it is written.
func TestClientPrepareSeesEveryRequest(t *testing.T) {
	got := make(chan string, 3)
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(codeEcho, func(c *Conn, req *remoting.Command) *remoting.Command {
			got <- req.Ext("signed")
			if req.IsOneway() {
				return nil
			}
			return echo(c, req)
		}, nil)
	})
	cl := NewClient(ClientConfig{Prepare: func(req *remoting.Command) {
		if req.ExtFields == nil {
			req.ExtFields = map[string]string{}
		}
		req.ExtFields["signed"] = "yes"
	}})
	defer cl.Close()
	if _, err := cl.Invoke(context.Background(), addr, remoting.NewRequest(codeEcho, nil, nil)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	if err := cl.InvokeAsync(context.Background(), addr, remoting.NewRequest(codeEcho, nil, nil), func(_ *remoting.Command, err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := cl.InvokeOneway(addr, remoting.NewRequest(codeEcho, nil, nil)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		select {
		case v := <-got:
			if v != "yes" {
				t.Fatalf("request %d reached the server without Prepare's field", i)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("request %d never arrived", i)
		}
	}
}
