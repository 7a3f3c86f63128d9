package transport

import (
	"syscall"
	"unsafe"
)

// outBufKeep is the copy buffer an out buffer keeps between bursts; a
// larger one is dropped once everything is written.
const outBufKeep = 64 << 10

// outBufCopyMax bounds the bytes a flush copies into the out buffer
// before writing them; the rest of the queue waits in it until they are
// written, so a peer that does not read holds its queued answers, not
// copies of them.
const outBufCopyMax = 256 << 10

// maxIovecs bounds the slices of one writev (the kernel's IOV_MAX).
const maxIovecs = 1024

// outSeg is one run of bytes waiting for the socket: a part of the copy
// buffer, or a body piece written in place. rel, when set, releases the
// pieces of the answer this segment ends, once it is written.
type outSeg struct {
	b        []byte
	copied   bool
	from, to int // the segment's range in the copy buffer (copied segments)
	rel      outItem
}

// loopPiecesRefMin is the body size from which an answer's pieces are
// written in place by a loop connection rather than copied. It is lower
// than piecesWritevMin: a loop writes each connection's answers with one
// writev whatever they hold, and pieces that lie end to end in memory (a
// pull's records read with one pread) share one iovec, so referencing
// them costs no system call; copying a 32 KiB pull cost more than the
// pread that read it.
const loopPiecesRefMin = 8 << 10

// outBuf holds a loop connection's encoded frames that are not written
// yet: frame headers and small bodies copied into one growing buffer,
// larger bodies (loopPiecesRefMin and more) referenced where they are and
// released once written. Only the holder of the connection's writer role
// touches it.
type outBuf struct {
	segs  []outSeg
	copyb []byte
	n     int // bytes in segs
	vecs  []syscall.Iovec
}

// empty reports whether nothing waits.
func (o *outBuf) empty() bool { return len(o.segs) == 0 }

// copiedBytes is what the copy buffer holds.
func (o *outBuf) copiedBytes() int { return len(o.copyb) }

// appendCopy copies p into the buffer.
func (o *outBuf) appendCopy(p []byte) {
	if len(p) == 0 {
		return
	}
	start, oldCap := len(o.copyb), cap(o.copyb)
	o.copyb = append(o.copyb, p...)
	o.n += len(p)
	if k := len(o.segs) - 1; k >= 0 && o.segs[k].copied && o.segs[k].to == start && cap(o.copyb) == oldCap {
		s := &o.segs[k]
		s.to = len(o.copyb)
		s.b = o.copyb[s.from:s.to]
		return
	}
	o.segs = append(o.segs, outSeg{b: o.copyb[start:], copied: true, from: start, to: len(o.copyb)})
}

// appendRef adds p, written in place.
func (o *outBuf) appendRef(p []byte) {
	if len(p) == 0 {
		return
	}
	o.n += len(p)
	o.segs = append(o.segs, outSeg{b: p})
}

// releaseAfter makes it's pieces released once the bytes added so far
// are written; with nothing waiting they are released at once.
func (o *outBuf) releaseAfter(it outItem) {
	if len(o.segs) == 0 {
		it.release()
		return
	}
	s := &o.segs[len(o.segs)-1]
	if s.rel.done != nil || s.rel.owner != nil {
		// The segment already ends another answer (an empty piece
		// list): a segment of no bytes carries this one.
		o.segs = append(o.segs, outSeg{})
		s = &o.segs[len(o.segs)-1]
	}
	s.rel = outItem{done: it.done, owner: it.owner}
}

// writeTo writes what the socket takes, without blocking. done says
// everything was written; err is the socket's error.
func (o *outBuf) writeTo(fd int) (done bool, err syscall.Errno) {
	for {
		for len(o.segs) > 0 && len(o.segs[0].b) == 0 {
			o.pop(0) // a release with no bytes of its own
		}
		if len(o.segs) == 0 {
			break
		}
		var n int
		if len(o.segs[0].b) == o.n {
			n, err = rawWrite(fd, o.segs[0].b)
		} else {
			o.fillVecs(mergeIovecs)
			n, err = rawWritev(fd, o.vecs)
			clear(o.vecs)
		}
		if err == syscall.EAGAIN {
			return false, 0
		}
		if err != 0 {
			return false, err
		}
		if n == 0 {
			return false, 0
		}
		o.pop(n)
	}
	o.reset()
	return true, 0
}

// fillVecs sets vecs to the segments' bytes, at most maxIovecs slices.
// With merge, a segment that starts where the one before it ends in memory
// extends its iovec instead of taking one (the segments keep their own
// slices, so each buffer stays referenced as it is; an iovec may then span
// two allocations, which only the kernel reads).
func (o *outBuf) fillVecs(merge bool) {
	o.vecs = o.vecs[:0]
	var end uintptr
	for i := 0; i < len(o.segs); i++ {
		b := o.segs[i].b
		if len(b) == 0 {
			continue
		}
		start := uintptr(unsafe.Pointer(&b[0]))
		if k := len(o.vecs) - 1; merge && k >= 0 && start == end {
			o.vecs[k].Len += uint64(len(b))
		} else if len(o.vecs) == maxIovecs {
			break
		} else {
			o.vecs = append(o.vecs, syscall.Iovec{Base: &b[0], Len: uint64(len(b))})
		}
		end = start + uintptr(len(b))
	}
}

// pop drops n written bytes from the front, releasing the answers whose
// last segment they complete (segments of no bytes included).
func (o *outBuf) pop(n int) {
	o.n -= n
	i := 0
	for ; i < len(o.segs); i++ {
		s := &o.segs[i]
		if n < len(s.b) {
			s.b = s.b[n:]
			if s.copied {
				s.from += n
			}
			break
		}
		n -= len(s.b)
		s.rel.release()
		*s = outSeg{}
	}
	if i > 0 {
		o.segs = o.segs[:copy(o.segs, o.segs[i:])]
	}
	if len(o.segs) == 0 {
		o.reset()
	}
}

// reset empties the buffer once everything is written.
func (o *outBuf) reset() {
	o.segs = o.segs[:0]
	o.n = 0
	if cap(o.copyb) > outBufKeep {
		o.copyb = nil
	} else {
		o.copyb = o.copyb[:0]
	}
}

// discard releases everything waiting (the connection closed).
func (o *outBuf) discard() {
	for i := range o.segs {
		o.segs[i].rel.release()
		o.segs[i] = outSeg{}
	}
	o.reset()
	o.copyb = nil
}

func unsafeSlice(p *byte, n int) []byte { return unsafe.Slice(p, n) }
