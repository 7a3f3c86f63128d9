package tlsconf

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseDefaults(t *testing.T) {
	c, err := Parse(map[string]string{KeyConfigFile: ""})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Mode: Permissive, TestMode: true}
	if c != want {
		t.Fatalf("defaults %+v, want %+v", c, want)
	}
	if d := Defaults(); d.ConfigFile != "/etc/rocketmq/tls.properties" || d.Mode != Permissive || !d.TestMode {
		t.Fatalf("Defaults %+v", d)
	}
}

func TestParseKeysAndFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tls.properties")
	// The file wins over the map for every key but the mode and
	// tls.enable, as RocketMQ reads it.
	if err := os.WriteFile(file, []byte(strings.Join([]string{
		"tls.test.mode.enable=false",
		"tls.server.need.client.auth=require",
		"tls.server.keyPath=/f/server.key",
		"tls.server.keyPassword=pw1",
		"tls.server.certPath=/f/server.pem",
		"tls.server.authClient=TRUE",
		"tls.server.trustCertPath=/f/ca.pem",
		"tls.client.keyPath=/f/client.key",
		"tls.client.keyPassword=pw2",
		"tls.client.certPath=/f/client.pem",
		"tls.client.authServer=true",
		"tls.client.trustCertPath=/f/ca2.pem",
		"tls.server.mode=disabled",
		"tls.enable=false",
	}, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Parse(map[string]string{
		KeyServerMode: "Enforcing", KeyConfigFile: file,
		KeyServerKeyPath: "/m/server.key", KeyServerCertPath: "/m/server.pem",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Mode: Enforcing, TestMode: false, ClientEnable: true,
		ServerNeedClientAuth: ClientAuthRequire, ServerKeyPath: "/f/server.key", ServerKeyPassword: "pw1",
		ServerCertPath: "/f/server.pem", ServerAuthClient: true, ServerTrustCertPath: "/f/ca.pem",
		ClientKeyPath: "/f/client.key", ClientKeyPassword: "pw2", ClientCertPath: "/f/client.pem",
		ClientAuthServer: true, ClientTrustCertPath: "/f/ca2.pem", ConfigFile: file}
	if c != want {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
	if s := c.String(); strings.Contains(s, "pw1") || strings.Contains(s, "pw2") ||
		!strings.Contains(s, "tls.server.keyPassword=******") {
		t.Fatalf("String shows secrets or hides the wrong thing: %s", s)
	}
	// A missing file is skipped; tls.enable overrides the mode's default.
	c, err = Parse(map[string]string{KeyConfigFile: filepath.Join(dir, "none"), KeyEnable: "true", KeyServerMode: "disabled"})
	if err != nil || c.Mode != Disabled || !c.ClientEnable || !c.TestMode {
		t.Fatalf("%+v %v", c, err)
	}
}

func TestParseRefusesUnknownValues(t *testing.T) {
	for _, p := range []map[string]string{
		{KeyConfigFile: "", KeyServerMode: "enforce"},
		{KeyConfigFile: "", KeyServerNeedClientAuth: "required"},
	} {
		if _, err := Parse(p); err == nil {
			t.Errorf("%v: no error", p)
		}
	}
	if a, err := ParseClientAuth(" OPTIONAL "); err != nil || a != ClientAuthOptional {
		t.Fatal(a, err)
	}
}

func TestClientAuthType(t *testing.T) {
	for _, c := range []struct {
		need   ClientAuth
		verify bool
		want   tls.ClientAuthType
	}{
		{ClientAuthNone, false, tls.NoClientCert},
		{ClientAuthNone, true, tls.NoClientCert},
		{ClientAuthOptional, false, tls.RequestClientCert},
		{ClientAuthOptional, true, tls.VerifyClientCertIfGiven},
		{ClientAuthRequire, false, tls.RequireAnyClientCert},
		{ClientAuthRequire, true, tls.RequireAndVerifyClientCert},
	} {
		if got := clientAuthType(c.need, c.verify); got != c.want {
			t.Errorf("%s verify=%v: %v, want %v", c.need, c.verify, got, c.want)
		}
	}
}

func TestSniff(t *testing.T) {
	for _, c := range []struct {
		mode  Mode
		first byte
		tls   bool
		r     Refusal
	}{
		{Permissive, 0x16, true, Admitted},
		{Permissive, 0x00, false, Admitted},
		{Permissive, 0x15, false, Admitted},
		{Enforcing, 0x16, true, Admitted},
		{Enforcing, 0x00, false, PlainRefused},
		{Enforcing, 0x17, false, PlainRefused},
		{Disabled, 0x16, false, Admitted},
	} {
		useTLS, r := sniff(c.mode, c.first)
		if useTLS != c.tls || r != c.r {
			t.Errorf("%s %#x: tls=%v %v, want %v %v", c.mode, c.first, useTLS, r, c.tls, c.r)
		}
	}
}

func TestAdmit(t *testing.T) {
	for _, c := range []struct {
		max, perIP, open, fromIP int
		want                     Refusal
	}{
		{0, 0, 1000, 1000, Admitted},
		{10, 0, 9, 9, Admitted},
		{10, 0, 10, 0, OverTotal},
		{10, 2, 10, 2, OverTotal},
		{0, 2, 5, 1, Admitted},
		{0, 2, 5, 2, OverPerIP},
		{10, 2, 3, 2, OverPerIP},
		{-1, -1, 5, 5, Admitted},
	} {
		if got := admit(c.max, c.perIP, c.open, c.fromIP); got != c.want {
			t.Errorf("admit(%d, %d, %d, %d) = %v, want %v", c.max, c.perIP, c.open, c.fromIP, got, c.want)
		}
	}
}

func TestSourceKey(t *testing.T) {
	for _, c := range []struct {
		a    net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1}, "10.0.0.1"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1"), Port: 2}, "10.0.0.1"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 3}, "2001:db8::1"},
		{&net.UnixAddr{Name: "/s", Net: "unix"}, "/s"},
		{nil, ""},
	} {
		if got := sourceKey(c.a); got != c.want {
			t.Errorf("%v: %q, want %q", c.a, got, c.want)
		}
	}
}
