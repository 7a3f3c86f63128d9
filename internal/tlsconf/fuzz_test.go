package tlsconf

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

var fuzzTLS struct {
	once sync.Once
	cfg  *tls.Config
}

func fuzzServerTLS(t testing.TB) *tls.Config {
	fuzzTLS.once.Do(func() {
		c := Defaults() // test mode: a self-signed certificate
		cfg, err := c.ServerTLS(nil)
		if err != nil {
			t.Fatal(err)
		}
		fuzzTLS.cfg = cfg
	})
	return fuzzTLS.cfg
}

// FuzzSniff feeds arbitrary first bytes to an accepted connection in both
// TLS modes: the opening never panics or hangs, a plain stream in
// permissive mode reads back byte for byte, and a plain stream in
// enforcing mode is refused without a byte read.
func FuzzSniff(f *testing.F) {
	f.Add([]byte{0, 0, 0, 20, 0, 0, 0, 16}, false)
	f.Add([]byte{0x16, 3, 1, 0, 5, 1, 0, 0, 1, 0}, true)
	f.Add([]byte{0x16}, false)
	f.Add([]byte{}, true)
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, enforcing bool) {
		mode := Permissive
		if enforcing {
			mode = Enforcing
		}
		l, err := NewListener(nil, ListenerConfig{Mode: mode, TLS: fuzzServerTLS(t), HandshakeTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		server, client := net.Pipe()
		c := newConn(l, server, "pipe")
		l.open++
		defer c.Close()
		go func() {
			go io.Copy(io.Discard, client) // alerts and handshake answers
			client.Write(data)
			client.Close()
		}()
		got, err := io.ReadAll(c)
		isTLS := len(data) > 0 && data[0] == recordTLS
		switch {
		case len(data) == 0:
			if len(got) != 0 {
				t.Fatalf("read %q from nothing", got)
			}
		case !isTLS && mode == Permissive:
			if !bytes.Equal(got, data) {
				t.Fatalf("plain stream read back %q, want %q (err %v)", got, data, err)
			}
		case !isTLS && mode == Enforcing:
			if len(got) != 0 || !errors.Is(err, ErrPlainRefused) {
				t.Fatalf("enforcing read %q, %v", got, err)
			}
		default:
			// Bytes that open a handshake never read as plain data.
			if err == nil && len(got) > 0 && bytes.Equal(got, data) {
				t.Fatalf("a TLS opening read back as plain data")
			}
		}
	})
}
