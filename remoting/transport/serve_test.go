package transport

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
)

// countingListener counts the connections its Accept returned.
type countingListener struct {
	net.Listener
	n atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// Serve takes a listener the caller built (TLS, limits), and a Client
// dials through its Dial hook; Close closes the listener.
func TestServeAndDialHook(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: inner}
	s := NewServer(ServerConfig{})
	s.Register(codeEcho, echo, nil)
	addr, err := s.Serve(ln)
	if err != nil {
		t.Fatal(err)
	}
	var dials atomic.Int32
	cl := NewClient(ClientConfig{Dial: func(ctx context.Context, network, a string) (net.Conn, error) {
		dials.Add(1)
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the dial context has no deadline")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, a)
	}})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr.String(), remoting.NewRequest(codeEcho, nil, []byte("x")))
	if err != nil || string(resp.Body) != "x" {
		t.Fatalf("%+v %v", resp, err)
	}
	if dials.Load() != 1 || ln.n.Load() != 1 {
		t.Fatalf("dials %d, accepts %d", dials.Load(), ln.n.Load())
	}
	s.Close()
	if _, err := inner.Accept(); err == nil {
		t.Fatal("the served listener is still open after Close")
	}
	if _, err := s.Serve(ln); err != ErrServerClosed {
		t.Fatalf("Serve after Close: %v", err)
	}
}
