package tlsconf

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/spoolmq/spool/internal/config"
)

// RocketMQ's TLS keys (TlsSystemConfig).
const (
	KeyServerMode           = "tls.server.mode"
	KeyEnable               = "tls.enable"
	KeyConfigFile           = "tls.config.file"
	KeyTestModeEnable       = "tls.test.mode.enable"
	KeyServerNeedClientAuth = "tls.server.need.client.auth"
	KeyServerKeyPath        = "tls.server.keyPath"
	KeyServerKeyPassword    = "tls.server.keyPassword"
	KeyServerCertPath       = "tls.server.certPath"
	KeyServerAuthClient     = "tls.server.authClient"
	KeyServerTrustCertPath  = "tls.server.trustCertPath"
	KeyClientKeyPath        = "tls.client.keyPath"
	KeyClientKeyPassword    = "tls.client.keyPassword"
	KeyClientCertPath       = "tls.client.certPath"
	KeyClientAuthServer     = "tls.client.authServer"
	KeyClientTrustCertPath  = "tls.client.trustCertPath"
)

// DefaultConfigFile is RocketMQ's default tls.config.file.
const DefaultConfigFile = "/etc/rocketmq/tls.properties"

// Mode is tls.server.mode.
type Mode int

// The server modes.
const (
	Disabled Mode = iota
	Permissive
	Enforcing
)

func (m Mode) String() string {
	switch m {
	case Disabled:
		return "disabled"
	case Permissive:
		return "permissive"
	case Enforcing:
		return "enforcing"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads a tls.server.mode value (case-insensitive).
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "disabled":
		return Disabled, nil
	case "permissive":
		return Permissive, nil
	case "enforcing":
		return Enforcing, nil
	}
	return 0, fmt.Errorf("tlsconf: %s=%q: want disabled, permissive or enforcing", KeyServerMode, s)
}

// ClientAuth is tls.server.need.client.auth.
type ClientAuth int

// The client-certificate policies.
const (
	ClientAuthNone ClientAuth = iota
	ClientAuthOptional
	ClientAuthRequire
)

func (a ClientAuth) String() string {
	switch a {
	case ClientAuthNone:
		return "none"
	case ClientAuthOptional:
		return "optional"
	case ClientAuthRequire:
		return "require"
	}
	return fmt.Sprintf("ClientAuth(%d)", int(a))
}

// ParseClientAuth reads a tls.server.need.client.auth value
// (case-insensitive; empty is none, as in RocketMQ).
func ParseClientAuth(s string) (ClientAuth, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "none":
		return ClientAuthNone, nil
	case "optional":
		return ClientAuthOptional, nil
	case "require":
		return ClientAuthRequire, nil
	}
	return 0, fmt.Errorf("tlsconf: %s=%q: want none, optional or require", KeyServerNeedClientAuth, s)
}

// Config is RocketMQ's TLS configuration. Parse fills it with RocketMQ's
// defaults: permissive, test mode on (a self-signed server certificate,
// no verification by the client), no client certificate asked, neither
// side verifying the other, client TLS on only when the mode is
// enforcing.
type Config struct {
	Mode     Mode // tls.server.mode (default permissive)
	TestMode bool // tls.test.mode.enable (default true)
	// ClientEnable is tls.enable: whether this process's outgoing
	// connections use TLS (default: Mode == Enforcing, as RocketMQ's
	// broker start-up sets it).
	ClientEnable bool

	ServerNeedClientAuth ClientAuth // tls.server.need.client.auth (default none)
	ServerKeyPath        string     // tls.server.keyPath
	ServerKeyPassword    string     // tls.server.keyPassword
	ServerCertPath       string     // tls.server.certPath
	ServerAuthClient     bool       // tls.server.authClient (default false)
	ServerTrustCertPath  string     // tls.server.trustCertPath

	ClientKeyPath       string // tls.client.keyPath
	ClientKeyPassword   string // tls.client.keyPassword
	ClientCertPath      string // tls.client.certPath
	ClientAuthServer    bool   // tls.client.authServer (default false)
	ClientTrustCertPath string // tls.client.trustCertPath

	// ConfigFile is tls.config.file (default /etc/rocketmq/tls.properties).
	ConfigFile string
}

// Defaults returns RocketMQ's defaults.
func Defaults() Config {
	return Config{Mode: Permissive, TestMode: true, ConfigFile: DefaultConfigFile}
}

// Parse reads the TLS keys of props over RocketMQ's defaults, then, as
// RocketMQ does, the keys of tls.config.file when that file exists (every
// key but tls.server.mode and tls.enable; the file's values win). A file
// that does not exist is skipped; one that cannot be read or parsed is an
// error. Unlike RocketMQ, an unknown mode or client-auth value is an
// error rather than a silent fallback.
func Parse(props map[string]string) (Config, error) {
	c := Defaults()
	var err error
	if v, ok := props[KeyServerMode]; ok {
		if c.Mode, err = ParseMode(v); err != nil {
			return Config{}, err
		}
	}
	c.ClientEnable = c.Mode == Enforcing
	if v, ok := props[KeyEnable]; ok {
		c.ClientEnable = javaBool(v)
	}
	if v, ok := props[KeyConfigFile]; ok {
		c.ConfigFile = strings.TrimSpace(v)
	}
	if err := c.apply(props); err != nil {
		return Config{}, err
	}
	if c.ConfigFile != "" {
		file, err := config.LoadFile(c.ConfigFile)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return Config{}, fmt.Errorf("tlsconf: %s: %w", KeyConfigFile, err)
		default:
			if err := c.apply(file); err != nil {
				return Config{}, fmt.Errorf("tlsconf: %s: %w", c.ConfigFile, err)
			}
		}
	}
	return c, nil
}

// apply reads the keys a tls.config.file may hold.
func (c *Config) apply(p map[string]string) error {
	if v, ok := p[KeyTestModeEnable]; ok {
		c.TestMode = javaBool(v)
	}
	if v, ok := p[KeyServerNeedClientAuth]; ok {
		a, err := ParseClientAuth(v)
		if err != nil {
			return err
		}
		c.ServerNeedClientAuth = a
	}
	str := func(key string, dst *string) {
		if v, ok := p[key]; ok {
			*dst = v
		}
	}
	str(KeyServerKeyPath, &c.ServerKeyPath)
	str(KeyServerKeyPassword, &c.ServerKeyPassword)
	str(KeyServerCertPath, &c.ServerCertPath)
	str(KeyServerTrustCertPath, &c.ServerTrustCertPath)
	str(KeyClientKeyPath, &c.ClientKeyPath)
	str(KeyClientKeyPassword, &c.ClientKeyPassword)
	str(KeyClientCertPath, &c.ClientCertPath)
	str(KeyClientTrustCertPath, &c.ClientTrustCertPath)
	if v, ok := p[KeyServerAuthClient]; ok {
		c.ServerAuthClient = javaBool(v)
	}
	if v, ok := p[KeyClientAuthServer]; ok {
		c.ClientAuthServer = javaBool(v)
	}
	return nil
}

// LoadFile parses a .properties file holding TLS keys (a tls.config.file
// given directly, or a broker configuration).
func LoadFile(path string) (Config, error) {
	p, err := config.LoadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("tlsconf: %w", err)
	}
	return Parse(p)
}

// javaBool is Boolean.parseBoolean: "true" in any case, anything else false.
func javaBool(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }

// Redacted returns the configuration as key=value with the key passwords
// hidden, for logs and runtime information.
func (c Config) Redacted() map[string]string {
	hide := func(s string) string {
		if s == "" {
			return ""
		}
		return "******"
	}
	return map[string]string{
		KeyServerMode:           c.Mode.String(),
		KeyEnable:               fmt.Sprint(c.ClientEnable),
		KeyConfigFile:           c.ConfigFile,
		KeyTestModeEnable:       fmt.Sprint(c.TestMode),
		KeyServerNeedClientAuth: c.ServerNeedClientAuth.String(),
		KeyServerKeyPath:        c.ServerKeyPath,
		KeyServerKeyPassword:    hide(c.ServerKeyPassword),
		KeyServerCertPath:       c.ServerCertPath,
		KeyServerAuthClient:     fmt.Sprint(c.ServerAuthClient),
		KeyServerTrustCertPath:  c.ServerTrustCertPath,
		KeyClientKeyPath:        c.ClientKeyPath,
		KeyClientKeyPassword:    hide(c.ClientKeyPassword),
		KeyClientCertPath:       c.ClientCertPath,
		KeyClientAuthServer:     fmt.Sprint(c.ClientAuthServer),
		KeyClientTrustCertPath:  c.ClientTrustCertPath,
	}
}

// String is the redacted form, so a Config printed by mistake shows no
// password.
func (c Config) String() string {
	r := c.Redacted()
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(r[k])
	}
	return b.String()
}
