package faultproxy

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// echo starts a server that writes back what it reads.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func start(t *testing.T) (*Proxy, net.Conn) {
	t.Helper()
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return p, c
}

func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read back: %v", err)
	}
	if string(got) != msg {
		t.Fatalf("got %q, want %q", got, msg)
	}
}

// eventually polls cond until it holds (10 s at most).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRelays(t *testing.T) {
	p, c := start(t)
	roundTrip(t, c, "hello")
	// A relay counts the bytes after writing them: the peer can read them
	// first.
	eventually(t, "5 bytes counted each way", func() bool { return p.Forwarded(Up) == 5 && p.Forwarded(Down) == 5 })
	if p.Conns() != 1 || p.Accepted() != 1 {
		t.Fatalf("conns %d accepted %d", p.Conns(), p.Accepted())
	}
}

func TestStallHoldsBytesUntilUnstall(t *testing.T) {
	p, c := start(t)
	roundTrip(t, c, "a")
	p.Stall(Up)
	if _, err := c.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	// While stalled nothing passes: a read with a short deadline times out.
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var b [4]byte
	if n, err := c.Read(b[:]); n != 0 || err == nil {
		t.Fatalf("read %d bytes (%v) through a stalled proxy", n, err)
	}
	eventually(t, "the round trip's byte counted", func() bool { return p.Forwarded(Up) >= 1 })
	if p.Forwarded(Up) != 1 {
		t.Fatalf("forwarded %d bytes up while stalled, want 1", p.Forwarded(Up))
	}
	p.Unstall(Up)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, b[:]); err != nil || string(b[:]) != "held" {
		t.Fatalf("after unstall: %q, %v", b, err)
	}
}

func TestDropDiscards(t *testing.T) {
	p, c := start(t)
	p.SetDrop(Down, true)
	if _, err := c.Write([]byte("lost")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the echo dropped", func() bool { return p.Dropped(Down) == 4 })
	p.SetDrop(Down, false)
	roundTrip(t, c, "kept")
}

func TestDelayStillDelivers(t *testing.T) {
	p, c := start(t)
	p.SetDelay(Up, 5*time.Millisecond)
	p.SetDelay(Down, 5*time.Millisecond)
	roundTrip(t, c, "slow")
}

func TestCutClosesAndRefuseKeepsClosed(t *testing.T) {
	p, c := start(t)
	roundTrip(t, c, "x")
	p.Refuse(true)
	p.Cut()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	if _, err := c.Read(b[:]); err == nil {
		t.Fatal("a cut connection still reads")
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c2.Read(b[:]); err == nil {
		t.Fatal("a refused connection still reads")
	}
	p.Refuse(false)
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	roundTrip(t, c3, bytes.NewBufferString("again").String())
}
