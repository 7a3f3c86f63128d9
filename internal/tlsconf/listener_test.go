package tlsconf

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

const codeEcho = 10001

// startTransport serves echo on a transport Server behind a Listener of
// lc on 127.0.0.1.
func startTransport(t testing.TB, lc ListenerConfig) (*Listener, string) {
	t.Helper()
	ln, addr, _ := startTransportServer(t, lc)
	return ln, addr
}

// startTransportServer is startTransport that also returns the server.
func startTransportServer(t testing.TB, lc ListenerConfig) (*Listener, string, *transport.Server) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := NewListener(inner, lc)
	if err != nil {
		t.Fatal(err)
	}
	s := transport.NewServer(transport.ServerConfig{})
	s.Register(codeEcho, func(_ *transport.Conn, req *remoting.Command) *remoting.Command {
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.Body = req.Body
		return resp
	}, nil)
	s.Register(remoting.GetAllTopicListFromNameserver, func(_ *transport.Conn, req *remoting.Command) *remoting.Command {
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.Body = []byte(`{"topicList":["TopicA"]}`)
		return resp
	}, nil)
	addr, err := s.Serve(ln)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return ln, addr.String(), s
}

// invoke sends one echo through a transport Client dialing with tc (nil:
// plain).
func invoke(t testing.TB, addr string, tc *tls.Config) error {
	t.Helper()
	d := &Dialer{TLS: tc}
	cl := transport.NewClient(transport.ClientConfig{Dial: d.DialContext})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, remoting.NewRequest(codeEcho, nil, []byte("ping")))
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success || string(resp.Body) != "ping" {
		t.Fatalf("answer %+v", resp)
	}
	return nil
}

// rawEcho sends one echo frame on a plain socket and reads the answer.
func rawEcho(nc net.Conn) error {
	frame, err := remoting.Encode(remoting.NewRequest(codeEcho, nil, []byte("ping")))
	if err != nil {
		return err
	}
	if _, err := nc.Write(frame); err != nil {
		return err
	}
	resp, err := remoting.ReadCommand(bufio.NewReader(nc), remoting.MaxFrameSize)
	if err != nil {
		return err
	}
	if string(resp.Body) != "ping" {
		return errors.New("wrong answer")
	}
	return nil
}

func TestEnforcingAcceptsTLSAndClosesPlain(t *testing.T) {
	p := newPKI(t)
	cfg := p.config(Enforcing, ClientAuthNone)
	ln, addr := startTransport(t, ListenerConfig{Name: "broker", Mode: Enforcing, TLS: serverTLS(t, cfg)})
	if err := invoke(t, addr, clientTLS(t, cfg)); err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := rawEcho(nc); err == nil {
		t.Fatal("a plain client was answered on an enforcing port")
	}
	st := ln.Stats()
	if st.TLS != 1 || st.Plain != 0 || st.Refused[PlainRefused] != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestPermissiveAcceptsBoth(t *testing.T) {
	p := newPKI(t)
	cfg := p.config(Permissive, ClientAuthNone)
	ln, addr := startTransport(t, ListenerConfig{Mode: Permissive, TLS: serverTLS(t, cfg)})
	if err := invoke(t, addr, clientTLS(t, cfg)); err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	if err := invoke(t, addr, nil); err != nil {
		t.Fatalf("plain client: %v", err)
	}
	if st := ln.Stats(); st.TLS != 1 || st.Plain != 1 || len(st.Refused) != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// RocketMQ's default configuration (permissive, test mode) serves a
// self-signed certificate that its clients do not verify.
func TestTestModeDefaults(t *testing.T) {
	cfg, err := Parse(map[string]string{KeyConfigFile: ""})
	if err != nil {
		t.Fatal(err)
	}
	lc, err := cfg.ListenerConfig(nil)
	if err != nil || lc.Mode != Permissive || lc.TLS == nil {
		t.Fatalf("%+v %v", lc, err)
	}
	_, addr := startTransport(t, lc)
	if err := invoke(t, addr, clientTLS(t, cfg)); err != nil {
		t.Fatal(err)
	}
	if err := invoke(t, addr, nil); err != nil {
		t.Fatal(err)
	}
	// A dialer of the defaults is plain (tls.enable follows enforcing).
	if d, err := cfg.NewDialer(); err != nil || d.TLS != nil {
		t.Fatalf("%+v %v", d, err)
	}
	cfg.ClientEnable = true
	d, err := cfg.NewDialer()
	if err != nil || d.TLS == nil || !d.TLS.InsecureSkipVerify {
		t.Fatalf("%+v %v", d, err)
	}
	ln, err := Listen("127.0.0.1:0", ListenerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if _, err := Listen("127.0.0.1:0", ListenerConfig{Mode: Enforcing}); err == nil {
		t.Fatal("an enforcing listener without TLS was made")
	}
}

func TestClientAuthRequire(t *testing.T) {
	p := newPKI(t)
	cfg := p.config(Enforcing, ClientAuthRequire)
	ln, addr, s := startTransportServer(t, ListenerConfig{Mode: Enforcing, TLS: serverTLS(t, cfg)})
	if err := invoke(t, addr, clientTLS(t, cfg)); err != nil {
		t.Fatalf("client with a certificate: %v", err)
	}
	noCert := cfg
	noCert.ClientCertPath, noCert.ClientKeyPath = "", ""
	if err := invoke(t, addr, clientTLS(t, noCert)); err == nil {
		t.Fatal("a client without a certificate was answered")
	}
	// A certificate from another CA is refused too.
	other := newPKI(t)
	foreign := cfg
	foreign.ClientCertPath, foreign.ClientKeyPath = other.clientCert, other.clientKey
	if err := invoke(t, addr, clientTLS(t, foreign)); err == nil {
		t.Fatal("a client with a foreign certificate was answered")
	}
	// The client may see the server's alert before the server counts the
	// failure; Close waits for the connections' readers, where the
	// handshakes ran. A transport client whose fresh connection closed
	// dials again, so each refused client counts at least once.
	s.Close()
	if st := ln.Stats(); st.TLS != 1 || st.Refused[HandshakeFail] < 2 ||
		st.Refused[HandshakeFail] != st.Accepted-1 || st.Open != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestClientVerifiesServer(t *testing.T) {
	p := newPKI(t)
	cfg := p.config(Enforcing, ClientAuthNone)
	_, addr := startTransport(t, ListenerConfig{Mode: Enforcing, TLS: serverTLS(t, cfg)})
	other := newPKI(t)
	wrong := cfg
	wrong.ClientTrustCertPath = other.caPath
	if err := invoke(t, addr, clientTLS(t, wrong)); err == nil {
		t.Fatal("the client accepted a server its CA did not sign")
	}
	wrong.ClientAuthServer = false // RocketMQ's default: no verification
	if err := invoke(t, addr, clientTLS(t, wrong)); err != nil {
		t.Fatal(err)
	}
}

// peerSerial completes a handshake with addr and returns the serial of
// the certificate served.
func peerSerial(t *testing.T, addr string) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func TestReplacedCertificateServedToNextConnection(t *testing.T) {
	p := newPKI(t)
	cfg := p.config(Enforcing, ClientAuthNone)
	_, addr := startTransport(t, ListenerConfig{Mode: Enforcing, TLS: serverTLS(t, cfg)})
	if got := peerSerial(t, addr); got != p.serverSerial.String() {
		t.Fatalf("served %s, want %s", got, p.serverSerial)
	}
	certPEM, keyPEM, serial := p.ca.issue(t, "server 2")
	writeFile(t, p.dir, "server.pem", certPEM)
	// Between the two renames the pair does not match: the old one stays.
	if got := peerSerial(t, addr); got != p.serverSerial.String() {
		t.Fatalf("mismatched pair: served %s, want the old %s", got, p.serverSerial)
	}
	writeFile(t, p.dir, "server.key", keyPEM)
	if got := peerSerial(t, addr); got != serial.String() {
		t.Fatalf("after the rotation served %s, want %s", got, serial)
	}
	// A TLS client still gets answers.
	if err := invoke(t, addr, clientTLS(t, cfg)); err != nil {
		t.Fatal(err)
	}
}

func TestSlowClientDoesNotBlockAccept(t *testing.T) {
	p := newPKI(t)
	cfg := p.config(Permissive, ClientAuthNone)
	_, addr := startTransport(t, ListenerConfig{Mode: Permissive, TLS: serverTLS(t, cfg),
		HandshakeTimeout: time.Hour})
	silent := make([]net.Conn, 3)
	for i := range silent {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		silent[i] = nc
	}
	// One silent peer has sent a TLS record header and stopped.
	if _, err := silent[0].Write([]byte{0x16, 0x03}); err != nil {
		t.Fatal(err)
	}
	if err := invoke(t, addr, nil); err != nil {
		t.Fatalf("plain client behind silent ones: %v", err)
	}
	if err := invoke(t, addr, clientTLS(t, cfg)); err != nil {
		t.Fatalf("TLS client behind silent ones: %v", err)
	}
}

// acceptAll accepts from ln into a channel until it is closed.
func acceptAll(ln net.Listener) <-chan net.Conn {
	ch := make(chan net.Conn, 16)
	go func() {
		defer close(ch)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			ch <- c
		}
	}()
	return ch
}

func listen(t *testing.T, lc ListenerConfig) (*Listener, <-chan net.Conn) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := NewListener(inner, lc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln, acceptAll(ln)
}

func dial(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// closedByPeer reports whether the server closed nc: a read ends with
// EOF or a reset. A connection the server keeps open and silent fails the
// test after a generous bound instead of hanging it.
func closedByPeer(t *testing.T, nc net.Conn) bool {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer nc.SetReadDeadline(time.Time{})
	_, err := nc.Read(make([]byte, 1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the connection stayed open and silent")
	}
	return err != nil
}

func TestPerIPAndTotalLimits(t *testing.T) {
	for _, c := range []struct {
		name   string
		lc     ListenerConfig
		reason Refusal
	}{
		{"per IP", ListenerConfig{MaxConnsPerIP: 2}, OverPerIP},
		{"total", ListenerConfig{MaxConns: 2, MaxConnsPerIP: 10}, OverTotal},
	} {
		t.Run(c.name, func(t *testing.T) {
			ln, accepted := listen(t, c.lc)
			dial(t, ln)
			dial(t, ln)
			a1, a2 := <-accepted, <-accepted
			defer a2.Close()
			third := dial(t, ln)
			if !closedByPeer(t, third) {
				t.Fatal("the third connection was not closed")
			}
			if st := ln.Stats(); st.Refused[c.reason] != 1 || st.Open != 2 {
				t.Fatalf("stats %+v", st)
			}
			// A closed connection gives its place back.
			a1.Close()
			fourth := dial(t, ln)
			a4 := <-accepted
			defer a4.Close()
			if _, err := a4.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			if closedByPeer(t, fourth) {
				t.Fatal("the fourth connection was refused after a place was freed")
			}
		})
	}
}
