package tlsconf

import (
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
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var serialSeq = big.NewInt(100)

func nextSerial() *big.Int {
	serialSeq = new(big.Int).Add(serialSeq, big.NewInt(1))
	return new(big.Int).Set(serialSeq)
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: "spool test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a leaf certificate for 127.0.0.1 and localhost (server and
// client use), returning its PEM, its key's PEM (PKCS#8) and its serial.
func (ca *testCA) issue(t testing.TB, cn string) (certPEM, keyPEM []byte, serial *big.Int) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial = nextSerial()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}), serial
}

// writeFile writes data to dir/name by rename, as a certificate rotation
// does, and returns the path.
func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// pki is a CA with a server and a client certificate written to a
// temporary directory.
type pki struct {
	dir                   string
	ca                    *testCA
	caPath                string
	serverCert, serverKey string
	clientCert, clientKey string
	serverSerial          *big.Int
}

func newPKI(t testing.TB) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir(), ca: newTestCA(t)}
	p.caPath = writeFile(t, p.dir, "ca.pem", p.ca.pem)
	c, k, s := p.ca.issue(t, "server")
	p.serverCert, p.serverKey, p.serverSerial = writeFile(t, p.dir, "server.pem", c), writeFile(t, p.dir, "server.key", k), s
	c, k, _ = p.ca.issue(t, "client")
	p.clientCert, p.clientKey = writeFile(t, p.dir, "client.pem", c), writeFile(t, p.dir, "client.key", k)
	return p
}

// config is the files' configuration with test mode off and no
// tls.config.file.
func (p *pki) config(mode Mode, need ClientAuth) Config {
	return Config{Mode: mode, ServerNeedClientAuth: need, ServerAuthClient: true,
		ServerCertPath: p.serverCert, ServerKeyPath: p.serverKey, ServerTrustCertPath: p.caPath,
		ClientCertPath: p.clientCert, ClientKeyPath: p.clientKey, ClientAuthServer: true,
		ClientTrustCertPath: p.caPath, ClientEnable: true}
}

func TestDecryptKeyPEM(t *testing.T) {
	ca := newTestCA(t)
	certPEM, keyPEM, _ := ca.issue(t, "k")
	blk, _ := pem.Decode(keyPEM)
	//lint:ignore SA1019 the legacy encryption is what the reader supports
	enc, err := x509.EncryptPEMBlock(rand.Reader, "PRIVATE KEY", blk.Bytes, []byte("s3cret"), x509.PEMCipherAES256) //nolint:staticcheck
	if err != nil {
		t.Fatal(err)
	}
	encPEM := pem.EncodeToMemory(enc)
	dir := t.TempDir()
	cp := writeFile(t, dir, "c.pem", certPEM)
	for _, c := range []struct {
		name, password string
		key            []byte
		ok             bool
	}{
		{"plain", "", keyPEM, true},
		{"plain, password ignored", "x", keyPEM, true},
		{"legacy encrypted", "s3cret", encPEM, true},
		{"legacy encrypted, wrong password", "nope", encPEM, false},
		{"legacy encrypted, no password", "", encPEM, false},
		{"encrypted PKCS#8", "s3cret", pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1, 2}}), false},
		{"no key", "", certPEM, false},
	} {
		kp := writeFile(t, dir, "k.pem", c.key)
		_, err := loadKeyPair(cp, kp, c.password)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v", c.name, err)
		}
	}
}

// serverTLS builds c's server side or fails the test.
func serverTLS(t testing.TB, c Config) *tls.Config {
	t.Helper()
	cfg, err := c.ServerTLS(nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func clientTLS(t testing.TB, c Config) *tls.Config {
	t.Helper()
	cfg, err := c.ClientTLS(nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
