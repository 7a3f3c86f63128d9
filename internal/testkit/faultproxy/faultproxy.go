// Package faultproxy owns a userspace TCP relay for tests: it sits
// between two peers (a slave and its master's HA port, a client and a
// broker) and can delay, stall, drop and cut the bytes of either
// direction, so tests produce lag, disconnects and timeouts without
// touching the peers.
//
// Only tests import it (internal/layering checks), and it imports nothing
// of the module.
package faultproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Dir is a direction through the proxy.
type Dir int

const (
	// Up is from the connecting peer to the target.
	Up Dir = iota
	// Down is from the target back to the connecting peer.
	Down
)

// Proxy relays connections accepted on Addr to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	cond    *sync.Cond
	pairs   map[*pair]struct{}
	delay   [2]time.Duration
	stalled [2]bool
	drop    [2]bool
	refuse  bool
	closed  bool

	accepted atomic.Int64
	bytes    [2]atomic.Int64 // forwarded
	dropped  [2]atomic.Int64
	wg       sync.WaitGroup
}

type pair struct{ a, b net.Conn }

func (p *pair) close() {
	p.a.Close()
	p.b.Close()
}

// New starts a proxy on a loopback port relaying to target.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, pairs: map[*pair]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address peers connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetDelay holds every chunk going in d for v before it is forwarded.
func (p *Proxy) SetDelay(d Dir, v time.Duration) {
	p.mu.Lock()
	p.delay[d] = v
	p.mu.Unlock()
}

// Stall stops forwarding in d: bytes stay unread (the sender's socket
// buffers fill) until Unstall.
func (p *Proxy) Stall(d Dir) {
	p.mu.Lock()
	p.stalled[d] = true
	p.mu.Unlock()
}

// Unstall resumes forwarding in d.
func (p *Proxy) Unstall(d Dir) {
	p.mu.Lock()
	p.stalled[d] = false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// SetDrop makes the proxy read and discard the bytes going in d (on) or
// forward them again (off).
func (p *Proxy) SetDrop(d Dir, on bool) {
	p.mu.Lock()
	p.drop[d] = on
	p.mu.Unlock()
}

// Refuse makes the proxy close new connections at once (on), as a peer
// that is down would, or accept them again (off).
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

// Cut closes every relayed connection now; new ones are still accepted
// unless Refuse is on.
func (p *Proxy) Cut() {
	p.mu.Lock()
	for pr := range p.pairs {
		pr.close()
		delete(p.pairs, pr)
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Conns is the number of relayed connections open.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pairs)
}

// Accepted is the number of connections accepted so far.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Forwarded is the number of bytes forwarded in d.
func (p *Proxy) Forwarded(d Dir) int64 { return p.bytes[d].Load() }

// Dropped is the number of bytes discarded in d.
func (p *Proxy) Dropped(d Dir) int64 { return p.dropped[d].Load() }

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		a, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		p.mu.Lock()
		refuse := p.refuse || p.closed
		p.mu.Unlock()
		if refuse {
			a.Close()
			continue
		}
		b, err := net.Dial("tcp", p.target)
		if err != nil {
			a.Close()
			continue
		}
		pr := &pair{a: a, b: b}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			pr.close()
			continue
		}
		p.pairs[pr] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pump(pr, a, b, Up)
		go p.pump(pr, b, a, Down)
	}
}

// pump forwards src to dst in direction d, applying the faults per chunk.
func (p *Proxy) pump(pr *pair, src, dst net.Conn, d Dir) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.pairs, pr)
		p.cond.Broadcast()
		p.mu.Unlock()
		pr.close()
	}()
	buf := make([]byte, 64<<10)
	for {
		if !p.waitUnstalled(pr, d) {
			return
		}
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitUnstalled(pr, d) {
				return
			}
			p.mu.Lock()
			delay, drop := p.delay[d], p.drop[d]
			p.mu.Unlock()
			if delay > 0 {
				time.Sleep(delay)
			}
			if drop {
				p.dropped[d].Add(int64(n))
			} else {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
				p.bytes[d].Add(int64(n))
			}
		}
		if err != nil {
			return // an end in either direction ends the relayed connection
		}
	}
}

// waitUnstalled blocks while d is stalled; false when the pair was cut.
func (p *Proxy) waitUnstalled(pr *pair, d Dir) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.stalled[d] {
		if _, ok := p.pairs[pr]; !ok {
			return false
		}
		p.cond.Wait()
	}
	_, ok := p.pairs[pr]
	return ok
}
