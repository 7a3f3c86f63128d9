package transport

import (
	"bytes"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Pieces that lie end to end in memory share an iovec; pieces of separate
// buffers, and copied bytes, do not merge with them unless they too are
// adjacent; a write never takes more than maxIovecs slices.
func TestOutBufVecsMergeAdjacentPieces(t *testing.T) {
	block := bytes.Repeat([]byte("0123456789"), 100)
	var o outBuf
	o.appendCopy([]byte("header"))
	o.appendRef(block[0:100])
	o.appendRef(block[100:300]) // follows block[0:100]
	o.appendRef(block[400:500]) // a gap of 100 bytes
	o.appendRef(block[500:1000])
	o.fillVecs(true)
	want := []struct {
		p *byte
		n uint64
	}{{&o.copyb[0], 6}, {&block[0], 300}, {&block[400], 600}}
	if len(o.vecs) != len(want) {
		t.Fatalf("%d iovecs, want %d", len(o.vecs), len(want))
	}
	for i, w := range want {
		if o.vecs[i].Base != w.p || o.vecs[i].Len != w.n {
			t.Fatalf("iovec %d: %p+%d, want %p+%d", i, o.vecs[i].Base, o.vecs[i].Len, w.p, w.n)
		}
	}

	// A piece that starts where another ends lies end to end even when
	// the two slices are capped to their own lengths.
	var p outBuf
	p.appendRef(block[0:10:10])
	p.appendRef(block[10:20:20])
	p.fillVecs(true)
	if len(p.vecs) != 1 || p.vecs[0].Len != 20 {
		t.Fatalf("capped adjacent pieces: %d iovecs", len(p.vecs))
	}

	// Separate pieces beyond the kernel's limit: one writev takes the
	// first maxIovecs of them.
	var q outBuf
	for i := 0; i < maxIovecs+10; i++ {
		q.appendRef(block[2*(i%400) : 2*(i%400)+1])
	}
	q.fillVecs(true)
	if len(q.vecs) != maxIovecs {
		t.Fatalf("%d iovecs, want %d", len(q.vecs), maxIovecs)
	}
}

// An out buffer whose adjacent pieces merge into iovecs (outside the race
// detector, whose builds write each piece alone) is written whole and in
// order through a socket that takes a little at a time, and each answer's
// pieces are released once, after their last byte left.
func TestOutBufWritesMergedPiecesThroughPartialWrites(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	peer := os.NewFile(uintptr(fds[1]), "peer")
	defer peer.Close()

	// Three answers: a copied header, then a body of records read end to
	// end into one buffer, with a hole between two runs of them.
	var want []byte
	var o outBuf
	var released [3]atomic.Int64
	for a := 0; a < 3; a++ {
		data := make([]byte, 64<<10)
		for i := range data {
			data[i] = byte(a*7 + i%251)
		}
		head := []byte{'h', byte('0' + a)}
		o.appendCopy(head)
		want = append(want, head...)
		for off := 0; off+1024 <= len(data); off += 1024 {
			if off/1024 == 20 {
				continue // a record of another queue
			}
			o.appendRef(data[off : off+1024 : off+1024])
			want = append(want, data[off:off+1024]...)
		}
		n := &released[a]
		o.releaseAfter(outItem{done: func() { n.Add(1) }})
	}

	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(want))))
		got <- b
	}()
	for {
		done, errno := o.writeTo(fds[0])
		if errno != 0 {
			t.Fatal(errno)
		}
		if done {
			break
		}
		// Wait until the socket has room again.
		pfd := []unix.PollFd{{Fd: int32(fds[0]), Events: unix.POLLOUT}}
		if _, err := unix.Poll(pfd, 1000); err != nil && err != syscall.EINTR {
			t.Fatal(err)
		}
	}
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("peer read %d bytes; they differ from the %d written", len(b), len(want))
	}
	for a := range released {
		if n := released[a].Load(); n != 1 {
			t.Fatalf("answer %d released %d times", a, n)
		}
	}
	if !o.empty() || o.n != 0 {
		t.Fatalf("out buffer not empty after the write: %d segments, %d bytes", len(o.segs), o.n)
	}
}
