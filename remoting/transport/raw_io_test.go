package transport

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client, server
}

// TestRawIOCarriesBytesBothWays: a write larger than the sockets' buffers
// (so that it waits for the reader in the poller) arrives whole and in
// order, the peer's close reads as io.EOF, and a read deadline ends a
// read that waits.
func TestRawIOCarriesBytesBothWays(t *testing.T) {
	a, b := tcpPair(t)
	ra, rb := NewRawIO(a), NewRawIO(b)
	if ra == nil || rb == nil {
		t.Fatal("no RawIO for a TCP connection")
	}
	want := make([]byte, 16<<20)
	for i := range want {
		want[i] = byte(i * 7 >> 3)
	}
	werr := make(chan error, 1)
	go func() {
		n, err := ra.Write(want)
		if err == nil && n != len(want) {
			err = io.ErrShortWrite
		}
		werr <- err
	}()
	got := make([]byte, 0, len(want))
	buf := make([]byte, 64<<10)
	if err := b.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err) // a writer that gave up leaves the reader waiting
	}
	for len(got) < len(want) {
		n, err := rb.Read(buf)
		if err != nil {
			t.Fatalf("read after %d bytes: %v", len(got), err)
		}
		got = append(got, buf[:n]...)
	}
	if err := <-werr; err != nil {
		t.Fatalf("write: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the bytes read differ from those written")
	}

	// Nothing to read: the deadline ends the wait.
	if err := b.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := rb.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past its deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	if err := b.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}

	// The other way, then the peer's close.
	if _, err := rb.Write([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	if n, err := io.ReadFull(ra, buf[:2]); err != nil || string(buf[:n]) != "ok" {
		t.Fatalf("read %q, %v; want \"ok\"", buf[:n], err)
	}
	a.Close()
	if _, err := rb.Read(buf); err != io.EOF {
		t.Fatalf("read after the peer closed: %v, want io.EOF", err)
	}
}

// TestRawIONotForOtherConns: a connection that is not plain TCP gets no
// RawIO (its caller uses the connection itself).
func TestRawIONotForOtherConns(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if r := NewRawIO(a); r != nil {
		t.Fatalf("RawIO %v for a pipe", r)
	}
}

// TestRawReadWrite: on a non-blocking socket RawRead of nothing is
// EAGAIN, and what RawWrite wrote on one end RawRead reads on the other.
func TestRawReadWrite(t *testing.T) {
	a, b := tcpPair(t)
	fdOf := func(c net.Conn) (fd int) {
		rc, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		if err := rc.Control(func(s uintptr) { fd = int(s) }); err != nil {
			t.Fatal(err)
		}
		return fd
	}
	fa, fb := fdOf(a), fdOf(b)
	buf := make([]byte, 16)
	if _, err := RawRead(fb, buf); !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("read of an empty socket: %v, want EAGAIN", err)
	}
	if n, err := RawWrite(fa, []byte("hello")); err != nil || n != 5 {
		t.Fatalf("write: %d, %v", n, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := RawRead(fb, buf)
		if err == nil {
			if string(buf[:n]) != "hello" {
				t.Fatalf("read %q, want \"hello\"", buf[:n])
			}
			return
		}
		if !errors.Is(err, syscall.EAGAIN) || time.Now().After(deadline) {
			t.Fatalf("read: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
}
