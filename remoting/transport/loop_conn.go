package transport

import (
	"golang.org/x/sys/unix"
)

// The write side of a loop connection (loop.go). The writer role
// (c.writing, under c.wmu) is taken by whoever finds it free with
// something to write: the loop after a pass, the loop on EPOLLOUT, or the
// goroutine that completes an answer. Its holder encodes the queue into
// the out buffer and writes without blocking; while the socket is full
// (lp.blocked) only the loop resumes, on EPOLLOUT.

// loopQueue queues it from the loop goroutine: it is written after the
// pass, with the other answers the pass gives this connection.
func (c *Conn) loopQueue(it outItem) error {
	if _, err := c.loopAppend(it, false); err != nil {
		return err
	}
	if lc := c.lp; lc.dirty.CompareAndSwap(false, true) {
		lc.run.queueDirty(c)
	}
	return nil
}

// loopAppend adds it to the write queue; with mayTake it also takes the
// writer role when it is free and the socket has room (take: the caller
// writes).
func (c *Conn) loopAppend(it outItem, mayTake bool) (take bool, err error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.wclosed {
		return false, ErrConnClosed
	}
	c.wq = append(c.wq, it)
	c.queued.Add(1)
	if mayTake && !c.writing && !c.lp.blocked {
		c.writing = true
		return true, nil
	}
	return false, nil
}

// loopSend queues it from any goroutine and writes at once, unless another
// goroutine is writing (it writes this too) or the socket is full (the
// loop writes it when there is room).
func (c *Conn) loopSend(it outItem) error {
	take, err := c.loopAppend(it, true)
	if err != nil {
		return err
	}
	if take {
		c.loopFlush()
	}
	return nil
}

// loopFlushIfIdle writes the queue unless another goroutine is writing or
// the socket is full.
func (c *Conn) loopFlushIfIdle() {
	c.wmu.Lock()
	take := !c.writing && !c.lp.blocked && len(c.wq) > 0
	if take {
		c.writing = true
	}
	c.wmu.Unlock()
	if take {
		c.loopFlush()
	}
}

// onWritable resumes writing when a full socket has room (EPOLLOUT).
func (c *Conn) onWritable() {
	lc := c.lp
	c.wmu.Lock()
	if !lc.blocked || c.writing {
		c.wmu.Unlock()
		return
	}
	lc.blocked = false
	c.writing = true
	c.wmu.Unlock()
	lc.armWrite(false)
	c.loopFlush()
}

// loopFlush is the writer role's turn: it encodes what is queued into the
// out buffer (at most outBufCopyMax copied bytes at a time) and writes it
// until the queue is empty or the socket full. It gives up the role.
func (c *Conn) loopFlush() {
	lc := c.lp
	if !lc.acquire() {
		c.loopAbandon(nil)
		return
	}
	defer lc.release()
	for {
		c.wmu.Lock()
		if c.wclosed {
			c.wmu.Unlock()
			c.loopAbandon(nil)
			return
		}
		batch := c.wq
		c.wq = c.wspare[:0]
		c.wmu.Unlock()
		k := c.encodeOut(batch)
		done, errno := lc.out.writeTo(lc.fd)
		if errno != 0 {
			c.loopAbandon(batch[k:])
			c.closeWith(errno)
			return
		}
		c.wmu.Lock()
		if k < len(batch) {
			// The out buffer is full: what was not encoded goes back to
			// the front of the queue.
			q := make([]outItem, 0, len(batch)-k+len(c.wq))
			q = append(append(q, batch[k:]...), c.wq...)
			clear(batch)
			c.wq = q
		} else {
			clear(batch)
			c.wspare = batch[:0]
		}
		if !done {
			lc.blocked = true
			c.writing = false
			c.wmu.Unlock()
			lc.armWrite(true)
			// A close meanwhile found the role taken: the out buffer is
			// the loop's to discard when it sees the close.
			return
		}
		if len(c.wq) == 0 || c.wclosed {
			closed := c.wclosed
			c.writing = false
			c.wmu.Unlock()
			if closed {
				c.loopDiscardOut()
			}
			return
		}
		c.wmu.Unlock()
	}
}

// encodeOut encodes batch's items into the out buffer until it holds
// outBufCopyMax copied bytes, and returns how many it took; each is
// released (its pieces copied) or left to the out buffer (pieces written
// in place) and counted out of the queue and its slot.
func (c *Conn) encodeOut(batch []outItem) int {
	lc := c.lp
	k := 0
	for ; k < len(batch) && lc.out.copiedBytes() < outBufCopyMax; k++ {
		it := batch[k]
		batch[k] = outItem{}
		c.encodeOne(it)
	}
	if k > 0 {
		c.queued.Add(-int64(k))
		if lc.pausedQueue.Load() && c.queued.Load() <= c.maxQueued() && lc.pausedQueue.CompareAndSwap(true, false) {
			lc.l.post(loopReq{kind: reqResume, c: c})
		}
	}
	return k
}

// encodeOne encodes one item into the out buffer.
func (c *Conn) encodeOne(it outItem) {
	lc := c.lp
	if it.counted {
		defer c.inflight.Add(-1)
	}
	defer c.trimScratch()
	cmd, extra, ok := c.encodeHeader(&it)
	if !ok {
		it.release()
		return
	}
	lc.out.appendCopy(c.scratch)
	lc.out.appendCopy(cmd.Body)
	if extra < loopPiecesRefMin {
		for _, p := range it.pieces {
			lc.out.appendCopy(p)
		}
		it.release()
		return
	}
	for _, p := range it.pieces {
		lc.out.appendRef(p)
	}
	lc.out.releaseAfter(it)
}

// loopAbandon ends the writer role of a closed connection: the out
// buffer is discarded and the items in hand dropped.
func (c *Conn) loopAbandon(items []outItem) {
	for i := range items {
		if items[i].cmd != nil {
			c.drop(items[i])
		}
	}
	c.wmu.Lock()
	c.writing = false
	c.wmu.Unlock()
	c.loopDiscardOut()
}

// loopDiscardOut releases the out buffer of a closed connection, taking
// the writer role for it; a holder of the role does it when it sees the
// close.
func (c *Conn) loopDiscardOut() {
	c.wmu.Lock()
	if c.writing || !c.wclosed {
		c.wmu.Unlock()
		return
	}
	c.writing = true
	c.lp.blocked = false
	c.wmu.Unlock()
	c.lp.out.discard()
	c.wmu.Lock()
	c.writing = false
	c.wmu.Unlock()
}

// loopClose is the close of a loop connection's socket: the peer sees it
// at once (shutdown), the loop drops the descriptor from its epoll set and
// the last user closes it.
func (c *Conn) loopClose() {
	lc := c.lp
	if lc.acquire() {
		_ = unix.Shutdown(lc.fd, unix.SHUT_RDWR)
		lc.closing.Store(true)
		lc.release()
	} else {
		lc.closing.Store(true)
	}
	c.loopDiscardOut()
	lc.l.post(loopReq{kind: reqDrop, c: c})
}
