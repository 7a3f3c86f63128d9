package e2e

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/spoolmq/spool/remoting"
)

// With tls.server.mode=enforcing (RocketMQ's test certificate), the
// official client with WithTls sends through the name server and the
// broker; a plain client is closed without an answer.
func TestTLSEnforcing(t *testing.T) {
	s := startSpool(t, "tls.server.mode=enforcing")
	// The client's WithTls sets its process-wide default remoting
	// configuration: put it back for the tests after this one (cleanups
	// run last-in first-out, so this runs after the producer's shutdown).
	t.Cleanup(func() {
		if _, err := producer.NewDefaultProducer(producer.WithNameServer([]string{s.namesrvAddr}), producer.WithTls(false)); err != nil {
			t.Errorf("reset WithTls: %v", err)
		}
	})
	p := s.newProducer(t, "pg-tls", producer.WithTls(true))
	var err error
	waitFor(t, 30*time.Second, "a send over TLS", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var r *primitive.SendResult
		r, err = p.SendSync(ctx, primitive.NewMessage("TLSTopic", []byte("over tls")))
		return err == nil && r.Status == primitive.SendOK
	})

	for _, addr := range []string{s.brokerAddr, s.namesrvAddr} {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		req := remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil)
		frame, err := remoting.Encode(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(frame); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if n, err := bufio.NewReader(c).Read(make([]byte, 64)); err == nil {
			t.Fatalf("%s: a plain client read %d bytes, want the connection closed", addr, n)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("%s: a plain client was left open", addr)
		}
		c.Close()
	}
}

// rawTLSCall sends one request over a TLS connection to addr (any
// certificate accepted) and returns the answer and the certificate the
// server presented.
func rawTLSCall(t testing.TB, addr string, req *remoting.Command) (*remoting.Command, *x509.Certificate) {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("TLS dial %s: %v", addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	frame, err := remoting.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	resp, err := remoting.ReadCommand(bufio.NewReader(c), 64<<20)
	if err != nil {
		t.Fatalf("TLS %s: read: %v", addr, err)
	}
	return resp, c.ConnectionState().PeerCertificates[0]
}

// resetWithTls puts the Go client's process-wide TLS default back to
// plain when the test ends (after the producers' shutdown).
func resetWithTls(t *testing.T, namesrv string) {
	t.Cleanup(func() {
		// An instance name of its own: the client keeps every instance it
		// built, and one named alike for another name server is refused.
		if _, err := producer.NewDefaultProducer(producer.WithNameServer([]string{namesrv}),
			producer.WithInstanceName(instance("reset-tls-"+t.Name())), producer.WithTls(false)); err != nil {
			t.Errorf("reset WithTls: %v", err)
		}
	})
}

// With tls.server.mode=permissive the name-server, broker and VIP ports
// answer plain and TLS clients alike (raw requests both ways on each),
// and the official client sends both without and with WithTls.
func TestTLSPermissive(t *testing.T) {
	s := startSpool(t, "tls.server.mode=permissive")
	resetWithTls(t, s.namesrvAddr)
	for _, l := range []struct {
		name, addr string
		code       int32
	}{{"namesrv", s.namesrvAddr, remoting.GetBrokerClusterInfo}, {"broker", s.brokerAddr, remoting.GetBrokerRuntimeInfo},
		{"vip", s.vipAddr, remoting.GetBrokerRuntimeInfo}} {
		rc := dialRaw(t, l.addr)
		if resp := rc.call(t, rawRequest(l.code, nil, nil)); resp.Code != remoting.Success {
			t.Fatalf("%s plain: code %d %q", l.name, resp.Code, resp.Remark)
		}
		rc.c.Close()
		if resp, _ := rawTLSCall(t, l.addr, rawRequest(l.code, nil, nil)); resp.Code != remoting.Success {
			t.Fatalf("%s TLS: code %d %q", l.name, resp.Code, resp.Remark)
		}
	}
	send := func(p interface {
		SendSync(ctx context.Context, mq ...*primitive.Message) (*primitive.SendResult, error)
	}, body string) {
		t.Helper()
		var err error
		waitFor(t, 30*time.Second, "a send of "+body, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var r *primitive.SendResult
			r, err = p.SendSync(ctx, primitive.NewMessage("TLSPermissive", []byte(body)))
			return err == nil && r.Status == primitive.SendOK
		})
	}
	send(s.newProducer(t, "pg-plain"), "plain")
	send(s.newProducer(t, "pg-tls-permissive", producer.WithTls(true)), "tls")
}

// writeCert writes a new self-signed certificate for 127.0.0.1 named cn
// and its key to certPath and keyPath, each replaced by a rename.
func writeCert(t testing.TB, certPath, keyPath, cn string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for path, block := range map[string]*pem.Block{certPath: {Type: "CERTIFICATE", Bytes: der}, keyPath: {Type: "PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(path+".tmp", pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
}

// A certificate and key replaced on disk are served to the next TLS
// connection, on the broker and the name-server ports, without a restart.
func TestTLSCertificateReload(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	writeCert(t, cert, key, "spool-first")
	s := startSpool(t, "tls.server.mode=enforcing", "tls.test.mode.enable=false",
		"tls.server.certPath="+cert, "tls.server.keyPath="+key)
	served := func(addr string, code int32) string {
		resp, c := rawTLSCall(t, addr, rawRequest(code, nil, nil))
		if resp.Code != remoting.Success {
			t.Fatalf("%s: code %d %q", addr, resp.Code, resp.Remark)
		}
		return c.Subject.CommonName
	}
	if cn := served(s.brokerAddr, remoting.GetBrokerRuntimeInfo); cn != "spool-first" {
		t.Fatalf("broker serves %q, want spool-first", cn)
	}
	if cn := served(s.namesrvAddr, remoting.GetBrokerClusterInfo); cn != "spool-first" {
		t.Fatalf("name server serves %q, want spool-first", cn)
	}
	writeCert(t, cert, key, "spool-second")
	for _, l := range []struct {
		addr string
		code int32
	}{{s.brokerAddr, remoting.GetBrokerRuntimeInfo}, {s.namesrvAddr, remoting.GetBrokerClusterInfo}} {
		if cn := served(l.addr, l.code); cn != "spool-second" {
			t.Fatalf("%s serves %q after the replacement, want spool-second", l.addr, cn)
		}
	}
}
