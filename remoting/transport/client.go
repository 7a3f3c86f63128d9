package transport

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/remoting"
)

// ClientConfig configures a Client. Zero values take the defaults.
type ClientConfig struct {
	// DialTimeout bounds a connection attempt (default 3 s, Java's
	// connectTimeoutMillis).
	DialTimeout time.Duration
	// MaxFrameSize bounds 4 + frame length of what the client reads
	// (default 16 MiB).
	MaxFrameSize int
	// Handler serves requests the server sends (CHECK_TRANSACTION_STATE,
	// NOTIFY_CONSUMER_IDS_CHANGED, ...), each on its own goroutine. nil
	// answers REQUEST_CODE_NOT_SUPPORTED.
	Handler Handler
	// Serialize is the header serialization of requests the client sends.
	Serialize remoting.SerializeType
	// Logger receives connection events (default: discard).
	Logger *slog.Logger
	// Dial opens a connection (e.g. with TLS); nil dials TCP with
	// DialTimeout. The connection is ready for frames when it returns.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Prepare, when set, sees every request just before Invoke,
	// InvokeAsync or InvokeOneway sends it (RocketMQ's RPC hook: a broker
	// signs its own requests with its inner credentials here). It must not
	// block.
	Prepare func(req *remoting.Command)
	// InlineResponses leaves the ext fields of the responses the client
	// reads in their inline table (remoting.ReadCommandInline) instead of
	// building ExtFields for each: the caller reads them with
	// Command.LookupExt and Command.Ext (ExtMap builds the map), and a
	// short header's text comes with the command's allocation
	// (remoting.ReadCommandCompact), so a field kept keeps the whole
	// command alive. For callers that never touch ExtFields directly and
	// keep nothing of an answer, such as load generators; the map is
	// built by default.
	InlineResponses bool
}

// Client sends requests to servers, one connection per address, dialed on
// first use and dialed again after it fails.
type Client struct {
	cfg    ClientConfig
	nextID atomic.Uint64

	mu     sync.Mutex
	closed bool
	conns  map[string]*clientConn
	wg     sync.WaitGroup
}

// clientConn is an address's connection, or the dial in progress.
type clientConn struct {
	ready chan struct{} // closed when the dial ended
	conn  *Conn
	err   error
}

// NewClient returns a client; it dials nothing until the first call.
func NewClient(cfg ClientConfig) *Client {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 3 * time.Second
	}
	if cfg.MaxFrameSize <= 0 {
		cfg.MaxFrameSize = remoting.MaxFrameSize
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Client{cfg: cfg, conns: make(map[string]*clientConn)}
}

// Conn returns the connection to addr, dialing it when there is none.
func (cl *Client) Conn(ctx context.Context, addr string) (*Conn, error) {
	for {
		cl.mu.Lock()
		if cl.closed {
			cl.mu.Unlock()
			return nil, ErrClientClosed
		}
		e := cl.conns[addr]
		if e == nil {
			e = &clientConn{ready: make(chan struct{})}
			cl.conns[addr] = e
			cl.mu.Unlock()
			cl.dial(ctx, addr, e)
		} else {
			cl.mu.Unlock()
		}
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %s: %w", ErrDial, addr, ctx.Err())
		}
		if e.err != nil {
			return nil, e.err
		}
		if !e.conn.isClosed() {
			return e.conn, nil
		}
		// Closed since: forget it and dial again.
		cl.mu.Lock()
		if cl.conns[addr] == e {
			delete(cl.conns, addr)
		}
		cl.mu.Unlock()
	}
}

func (cl *Client) dial(ctx context.Context, addr string, e *clientConn) {
	defer close(e.ready)
	dial := cl.cfg.Dial
	if dial == nil {
		d := &net.Dialer{Timeout: cl.cfg.DialTimeout, KeepAlive: 30 * time.Second}
		dial = d.DialContext
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cl.cfg.DialTimeout)
		defer cancel()
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		e.err = fmt.Errorf("%w: %s: %w", ErrDial, addr, err)
		cl.mu.Lock()
		if cl.conns[addr] == e {
			delete(cl.conns, addr)
		}
		cl.mu.Unlock()
		return
	}
	c := newConn(nc, connConfig{
		id:       cl.nextID.Add(1),
		maxFrame: cl.cfg.MaxFrameSize,
		logger:   cl.cfg.Logger,
		dispatch: cl.dispatch,
		// responses keep their fields inline when asked to
		inlineResponses: cl.cfg.InlineResponses,
		onClose: func(c *Conn) {
			cl.mu.Lock()
			if cl.conns[addr] == e {
				delete(cl.conns, addr)
			}
			cl.mu.Unlock()
		},
	})
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		nc.Close()
		e.err = ErrClientClosed
		return
	}
	e.conn = c
	cl.mu.Unlock()
	c.start(&cl.wg)
}

// dispatch serves a server-initiated request on its own goroutine, so a
// handler may call back into the client without stalling the reader.
func (cl *Client) dispatch(c *Conn, req *remoting.Command) {
	h := cl.cfg.Handler
	if h == nil {
		h = NotSupported
	}
	req.ExtMap()
	c.acquire()
	go c.run(valueHandler(h), req, false)
}

// Invoke sends req to addr and waits for the response until ctx ends.
func (cl *Client) Invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	c, err := cl.Conn(ctx, addr)
	if err != nil {
		return nil, err
	}
	req.Serialize = cl.cfg.Serialize
	cl.prepare(req)
	return c.Invoke(ctx, req)
}

// InvokeAsync sends req to addr; cb gets the response or the error (on its
// own goroutine) unless InvokeAsync itself returns an error.
func (cl *Client) InvokeAsync(ctx context.Context, addr string, req *remoting.Command, cb func(*remoting.Command, error)) error {
	c, err := cl.Conn(ctx, addr)
	if err != nil {
		return err
	}
	req.Serialize = cl.cfg.Serialize
	cl.prepare(req)
	return c.InvokeAsync(ctx, req, cb)
}

// InvokeOneway sends req to addr with the oneway flag and waits for nothing
// but the dial.
func (cl *Client) InvokeOneway(addr string, req *remoting.Command) error {
	ctx, cancel := context.WithTimeout(context.Background(), cl.cfg.DialTimeout)
	defer cancel()
	c, err := cl.Conn(ctx, addr)
	if err != nil {
		return err
	}
	req.Serialize = cl.cfg.Serialize
	cl.prepare(req)
	return c.InvokeOneway(req)
}

// prepare runs the Prepare hook, if any.
func (cl *Client) prepare(req *remoting.Command) {
	if cl.cfg.Prepare != nil {
		cl.cfg.Prepare(req)
	}
}

// CloseConn closes the connection to addr, if any.
func (cl *Client) CloseConn(addr string) {
	cl.mu.Lock()
	e := cl.conns[addr]
	delete(cl.conns, addr)
	cl.mu.Unlock()
	if e != nil {
		<-e.ready
		if e.conn != nil {
			e.conn.Close()
		}
	}
}

// Close closes every connection; calls in progress fail with ErrConnClosed
// and later calls with ErrClientClosed.
func (cl *Client) Close() error {
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return nil
	}
	cl.closed = true
	entries := make([]*clientConn, 0, len(cl.conns))
	for _, e := range cl.conns {
		entries = append(entries, e)
	}
	cl.conns = map[string]*clientConn{}
	cl.mu.Unlock()
	for _, e := range entries {
		<-e.ready
		if e.conn != nil {
			e.conn.Close()
		}
	}
	cl.wg.Wait()
	return nil
}
