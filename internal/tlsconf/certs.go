package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"strings"
	"sync"
	"time"
)

// fileStamp is what tells a changed file: identity (a rename replaces
// it), modification time and size.
type fileStamp struct {
	fi os.FileInfo
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{fi: fi}, nil
}

func (s fileStamp) same(o fileStamp) bool {
	if s.fi == nil || o.fi == nil {
		return s.fi == nil && o.fi == nil
	}
	return os.SameFile(s.fi, o.fi) && s.fi.ModTime().Equal(o.fi.ModTime()) && s.fi.Size() == o.fi.Size()
}

// keyPair is a certificate chain and its key read from two PEM files,
// read again when either file changes. A reload that fails keeps the pair
// in use and is logged once per change.
type keyPair struct {
	certPath, keyPath, password string
	logger                      *slog.Logger

	mu        sync.Mutex
	cert      *tls.Certificate
	certStamp fileStamp
	keyStamp  fileStamp
}

// newKeyPair reads the pair; a first read that fails is an error.
func newKeyPair(certPath, keyPath, password string, logger *slog.Logger) (*keyPair, error) {
	if certPath == "" || keyPath == "" {
		return nil, errors.New("tlsconf: a certificate needs both its certPath and its keyPath")
	}
	kp := &keyPair{certPath: certPath, keyPath: keyPath, password: password, logger: logger}
	if _, err := kp.get(); err != nil {
		return nil, err
	}
	return kp, nil
}

// get returns the current pair, reading the files again when they changed
// since the last read.
func (kp *keyPair) get() (*tls.Certificate, error) {
	cs, cerr := stampOf(kp.certPath)
	ks, kerr := stampOf(kp.keyPath)
	kp.mu.Lock()
	defer kp.mu.Unlock()
	if cerr != nil || kerr != nil {
		if kp.cert != nil {
			return kp.cert, nil // a file being replaced: keep serving the old pair
		}
		return nil, fmt.Errorf("tlsconf: %w", errors.Join(cerr, kerr))
	}
	if kp.cert != nil && cs.same(kp.certStamp) && ks.same(kp.keyStamp) {
		return kp.cert, nil
	}
	first := kp.cert == nil
	kp.certStamp, kp.keyStamp = cs, ks
	cert, err := loadKeyPair(kp.certPath, kp.keyPath, kp.password)
	if err != nil {
		if first {
			return nil, err
		}
		kp.logger.Warn("tls: reloading the certificate failed, the previous one stays in use",
			"cert", kp.certPath, "key", kp.keyPath, "err", err)
		return kp.cert, nil
	}
	kp.cert = cert
	if !first {
		kp.logger.Info("tls: certificate reloaded", "cert", kp.certPath, "not_after", cert.Leaf.NotAfter)
	}
	return cert, nil
}

// loadKeyPair reads a PEM certificate chain and its PEM key.
func loadKeyPair(certPath, keyPath, password string) (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: %w", err)
	}
	plain, err := decryptKeyPEM(keyPEM, password)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: %s: %w", keyPath, err)
	}
	cert, err := tls.X509KeyPair(certPEM, plain)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: %s, %s: %w", certPath, keyPath, err)
	}
	return &cert, nil
}

// ErrEncryptedPKCS8 is returned for a key the standard library cannot
// decrypt.
var ErrEncryptedPKCS8 = errors.New("encrypted PKCS#8 keys are not supported; " +
	"write the key unencrypted (openssl pkcs8 -in key.pem -out key-plain.pem) " +
	"or with the legacy PEM encryption (openssl rsa -aes256 -traditional, openssl ec -aes256)")

// decryptKeyPEM returns the first private key block of data as
// unencrypted PEM: as is when it is not encrypted, decrypted with
// password when it carries the legacy PEM encryption headers.
func decryptKeyPEM(data []byte, password string) ([]byte, error) {
	rest := data
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, errors.New("no PEM private key found")
		}
		if b.Type == "ENCRYPTED PRIVATE KEY" {
			return nil, ErrEncryptedPKCS8
		}
		if !strings.HasSuffix(b.Type, "PRIVATE KEY") {
			continue
		}
		//lint:ignore SA1019 the legacy PEM encryption is the one the standard library decrypts
		if !x509.IsEncryptedPEMBlock(b) { //nolint:staticcheck
			return pem.EncodeToMemory(b), nil
		}
		if password == "" {
			return nil, errors.New("the key is encrypted and no keyPassword is set")
		}
		der, err := x509.DecryptPEMBlock(b, []byte(password)) //nolint:staticcheck
		if err != nil {
			return nil, fmt.Errorf("decrypt the key: %w", err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: b.Type, Bytes: der}), nil
	}
}

// caPool is a PEM bundle of trusted certificates, read again when the
// file changes.
type caPool struct {
	path   string
	logger *slog.Logger

	mu    sync.Mutex
	pool  *x509.CertPool
	stamp fileStamp
}

func newCAPool(path string, logger *slog.Logger) (*caPool, error) {
	p := &caPool{path: path, logger: logger}
	if _, err := p.get(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *caPool) get() (*x509.CertPool, error) {
	st, err := stampOf(p.path)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if p.pool != nil {
			return p.pool, nil
		}
		return nil, fmt.Errorf("tlsconf: %w", err)
	}
	if p.pool != nil && st.same(p.stamp) {
		return p.pool, nil
	}
	first := p.pool == nil
	p.stamp = st
	pool, err := loadPool(p.path)
	if err != nil {
		if first {
			return nil, err
		}
		p.logger.Warn("tls: reloading the trusted certificates failed, the previous ones stay in use",
			"path", p.path, "err", err)
		return p.pool, nil
	}
	p.pool = pool
	return pool, nil
}

func loadPool(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("tlsconf: %s: no PEM certificate found", path)
	}
	return pool, nil
}

// selfSigned makes the certificate of RocketMQ's test mode: self-signed,
// for localhost, valid for a year.
func selfSigned() (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}
