package transport

import (
	"context"
	"errors"
	"fmt"

	"github.com/spoolmq/spool/remoting"
)

// register adds a pending call and returns its opaque; alone says no
// other call is pending on the connection.
func (c *Conn) register(cl *call) (op int32, alone bool, err error) {
	op = c.opaque.Add(1)
	c.pmu.Lock()
	if c.isClosed() {
		c.pmu.Unlock()
		return 0, false, ErrConnClosed
	}
	c.pending[op] = cl
	alone = len(c.pending) == 1
	c.pmu.Unlock()
	return op, alone, nil
}

// unregister removes the pending call for op if it is still cl; true when
// the caller now owns its completion.
func (c *Conn) unregister(op int32, cl *call) bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.pending[op] == cl {
		delete(c.pending, op)
		return true
	}
	return false
}

// complete delivers a response to its pending call; unknown opaques are
// dropped (the caller gave up).
func (c *Conn) complete(resp *remoting.Command) {
	c.pmu.Lock()
	cl := c.pending[resp.Opaque]
	if cl != nil {
		delete(c.pending, resp.Opaque)
	}
	c.pmu.Unlock()
	if cl == nil {
		if c.cfg.logger != nil {
			c.cfg.logger.Debug("remoting: response for no pending call", "conn", c.cfg.id, "opaque", resp.Opaque)
		}
		return
	}
	cl.deliver(resp, nil)
}

// fail completes the pending call for op with err.
func (c *Conn) fail(op int32, err error) {
	c.pmu.Lock()
	cl := c.pending[op]
	delete(c.pending, op)
	c.pmu.Unlock()
	if cl != nil {
		cl.deliver(nil, err)
	}
}

func (cl *call) deliver(resp *remoting.Command, err error) {
	if cl.cb != nil {
		if cl.stop != nil {
			cl.stop()
		}
		go cl.cb(resp, err)
		return
	}
	cl.resp, cl.err = resp, err
	cl.done <- struct{}{}
}

func prepareRequest(req *remoting.Command, oneway bool) {
	req.Flag &^= remoting.FlagResponse | remoting.FlagOneway
	if oneway {
		req.Flag |= remoting.FlagOneway
	}
}

// Invoke sends req to the peer and waits for its response, until ctx ends
// or the connection closes. It sets req's opaque and clears its flag bits.
// Do not call it from a handler running inline on this connection's reader.
func (c *Conn) Invoke(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	prepareRequest(req, false)
	cl := callPool.Get().(*call)
	op, alone, err := c.register(cl)
	if err != nil {
		callPool.Put(cl)
		return nil, err
	}
	req.Opaque = op
	send := c.enqueue
	if alone {
		// The only call: write it here rather than waking the writer
		// (never blocking; what the socket does not take goes to it).
		send = c.writeNow
	}
	if err := send(outItem{cmd: req, request: true}); err != nil {
		if c.unregister(op, cl) {
			callPool.Put(cl)
			return nil, err
		}
		<-cl.done
		return c.finishCall(cl)
	}
	select {
	case <-cl.done:
		return c.finishCall(cl)
	case <-ctx.Done():
		if c.unregister(op, cl) {
			callPool.Put(cl)
			return nil, ctxError(ctx, req, c)
		}
		<-cl.done
		return c.finishCall(cl)
	}
}

func (c *Conn) finishCall(cl *call) (*remoting.Command, error) {
	resp, err := cl.resp, cl.err
	cl.resp, cl.err = nil, nil
	callPool.Put(cl)
	return resp, err
}

func ctxError(ctx context.Context, req *remoting.Command, c *Conn) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %s (opaque %d) to %s: %w", ErrTimeout, remoting.RequestName(req.Code),
			req.Opaque, c.nc.RemoteAddr(), err)
	}
	return fmt.Errorf("transport: %s (opaque %d) to %s: %w", remoting.RequestName(req.Code), req.Opaque,
		c.nc.RemoteAddr(), err)
}

// InvokeAsync sends req and calls cb (on its own goroutine) with the
// response, or with an error when ctx ends or the connection closes first.
// cb is called exactly once unless InvokeAsync returns an error.
func (c *Conn) InvokeAsync(ctx context.Context, req *remoting.Command, cb func(*remoting.Command, error)) error {
	prepareRequest(req, false)
	cl := &call{cb: cb}
	// The watcher is installed before the call is visible, so deliver
	// always sees cl.stop.
	var op int32
	if ctx.Done() != nil {
		var ready = make(chan struct{})
		cl.stop = context.AfterFunc(ctx, func() {
			<-ready
			if c.unregister(op, cl) {
				cb(nil, ctxError(ctx, req, c))
			}
		})
		defer close(ready)
	}
	var err error
	op, _, err = c.register(cl)
	if err != nil {
		if cl.stop != nil {
			cl.stop()
		}
		return err
	}
	req.Opaque = op
	if err := c.enqueue(outItem{cmd: req, request: true}); err != nil {
		if c.unregister(op, cl) {
			if cl.stop != nil {
				cl.stop()
			}
			return err
		}
	}
	return nil
}

// InvokeOneway sends req with the oneway flag set and waits for nothing.
func (c *Conn) InvokeOneway(req *remoting.Command) error {
	prepareRequest(req, true)
	req.Opaque = c.opaque.Add(1)
	return c.enqueue(outItem{cmd: req})
}
