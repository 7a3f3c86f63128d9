package authserve

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/spoolmq/spool/internal/auth"
	"github.com/spoolmq/spool/internal/auth/aclv1"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// Config holds the keys the owner read (its properties file) and where
// the store lives.
type Config struct {
	AuthenticationEnabled   bool
	AuthorizationEnabled    bool
	AuthenticationWhitelist string
	AuthorizationWhitelist  string
	// InitAuthenticationUser is {"username":...,"password":...}: a super
	// user created at start when missing.
	InitAuthenticationUser string
	// InnerCredentials is innerClientAuthenticationCredentials,
	// {"accessKey":...,"secretKey":...}: the user created (a super user)
	// when missing, the only one allowed broker-to-server codes, and what
	// the owner signs its own outgoing requests with.
	InnerCredentials string
	// AclEnable turns ACL 1.0 on with the file at PlainACLPath.
	AclEnable    bool
	PlainACLPath string
	// MigrateFromV1 copies the accounts of PlainACLPath into the store at
	// start (migrateAuthFromV1Enabled).
	MigrateFromV1 bool
	ClusterName   string
	// StoreDir is the directory of users.json and acls.json.
	StoreDir string
	Logger   *slog.Logger
}

// PlainACLPath is RocketMQ's place of plain_acl.yml under rocketmqHome.
func PlainACLPath(rocketmqHome string) string {
	return filepath.Join(rocketmqHome, "conf", "plain_acl.yml")
}

// Service decides requests and serves the management codes.
type Service struct {
	settings auth.Settings
	store    *auth.Store
	logger   *slog.Logger
	inner    *auth.Credentials
	aclOn    bool
	v2On     bool

	v1Path  string
	v1      atomic.Pointer[aclv1.Config]
	v1Mu    sync.Mutex
	v1Stamp fileStamp

	refused     atomic.Uint64
	refusedAuth atomic.Uint64
	logLimit    *rate.Limiter
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// Open reads cfg, opens the store (when authentication or authorization
// is on, or migration asked for), creates the initial and inner users and
// loads plain_acl.yml (when aclEnable is on).
func Open(cfg Config) (*Service, error) {
	s := &Service{logger: cfg.Logger, aclOn: cfg.AclEnable, v1Path: cfg.PlainACLPath,
		v2On:     cfg.AuthenticationEnabled || cfg.AuthorizationEnabled,
		logLimit: rate.NewLimiter(rate.Every(time.Second), 10)}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	var err error
	s.settings = auth.Settings{AuthenticationEnabled: cfg.AuthenticationEnabled,
		AuthorizationEnabled: cfg.AuthorizationEnabled, ClusterName: cfg.ClusterName}
	if s.settings.AuthenticationWhitelist, err = auth.ParseCodeList(cfg.AuthenticationWhitelist); err != nil {
		return nil, fmt.Errorf("authenticationWhitelist: %w", err)
	}
	if s.settings.AuthorizationWhitelist, err = auth.ParseCodeList(cfg.AuthorizationWhitelist); err != nil {
		return nil, fmt.Errorf("authorizationWhitelist: %w", err)
	}
	if cfg.InnerCredentials != "" {
		c, err := auth.ParseCredentials(cfg.InnerCredentials)
		if err != nil {
			return nil, fmt.Errorf("innerClientAuthenticationCredentials: %w", err)
		}
		s.inner = &c
		s.settings.InnerUser = c.AccessKey
	}
	if s.v2On || cfg.MigrateFromV1 {
		if s.store, err = auth.OpenStore(vfs.Default, cfg.StoreDir); err != nil {
			return nil, fmt.Errorf("open the user and ACL store in %s: %w", cfg.StoreDir, err)
		}
		if cfg.InitAuthenticationUser != "" {
			u, err := auth.ParseInitUser(cfg.InitAuthenticationUser)
			if err != nil {
				return nil, err
			}
			if err := s.ensureUser(u); err != nil {
				return nil, err
			}
		}
		if s.inner != nil {
			if err := s.ensureUser(auth.User{Username: s.inner.AccessKey, Password: s.inner.SecretKey,
				Type: auth.Super, Status: auth.Enabled}); err != nil {
				return nil, err
			}
		}
	}
	if cfg.MigrateFromV1 && cfg.PlainACLPath != "" {
		b, err := os.ReadFile(cfg.PlainACLPath)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("migrateAuthFromV1Enabled: %w", err)
		default:
			c, err := aclv1.Parse(b)
			if err != nil {
				return nil, fmt.Errorf("migrateAuthFromV1Enabled: %s: %w", cfg.PlainACLPath, err)
			}
			names, err := aclv1.MigrateInto(s.store, c.File)
			if err != nil {
				return nil, fmt.Errorf("migrateAuthFromV1Enabled: %w", err)
			}
			if len(names) > 0 {
				s.logger.Info("auth: users migrated from plain_acl.yml", "users", names)
			}
		}
	}
	if s.aclOn {
		if _, err := s.ReloadV1(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Service) ensureUser(u auth.User) error {
	if _, ok := s.store.User(u.Username); ok {
		return nil
	}
	if err := s.store.CreateUser(u); err != nil && !errors.Is(err, auth.ErrExists) {
		return fmt.Errorf("create user %s: %w", u.Username, err)
	}
	s.logger.Info("auth: user created at start", "user", u.Username, "type", string(u.Type))
	return nil
}

// Active reports whether any check is on; the owner installs the hook
// only then, so a server without access control pays nothing.
func (s *Service) Active() bool { return s.aclOn || s.v2On }

// Store is the user and ACL store (nil when neither authentication nor
// authorization is on).
func (s *Service) Store() *auth.Store { return s.store }

// Refused returns the requests refused in total and, of them, by
// authentication.
func (s *Service) Refused() (total, authentication uint64) {
	return s.refused.Load(), s.refusedAuth.Load()
}

// ReloadV1 reads plain_acl.yml again when its size or modification time
// changed; a file that does not parse keeps the previous configuration
// (the error is returned). It reports whether it loaded a new one.
func (s *Service) ReloadV1() (bool, error) {
	s.v1Mu.Lock()
	defer s.v1Mu.Unlock()
	st, err := os.Stat(s.v1Path)
	if err != nil {
		return false, fmt.Errorf("aclEnable: %w", err)
	}
	stamp := fileStamp{st.ModTime(), st.Size()}
	if s.v1.Load() != nil && stamp == s.v1Stamp {
		return false, nil
	}
	b, err := os.ReadFile(s.v1Path)
	if err != nil {
		return false, fmt.Errorf("aclEnable: %w", err)
	}
	c, err := aclv1.Parse(b)
	if err != nil {
		return false, fmt.Errorf("aclEnable: %s: %w", s.v1Path, err)
	}
	s.v1.Store(c)
	s.v1Stamp = stamp
	return true, nil
}

// RunReload checks plain_acl.yml every interval until stop closes (only
// when aclEnable is on).
func (s *Service) RunReload(stop <-chan struct{}, every time.Duration) {
	if !s.aclOn {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if ok, err := s.ReloadV1(); err != nil {
				s.logger.Warn("auth: plain_acl.yml not reloaded", "path", s.v1Path, "err", err)
			} else if ok {
				s.logger.Info("auth: plain_acl.yml reloaded", "path", s.v1Path)
			}
		}
	}
}

// Authorize is the transport's hook: nil lets the request through, else
// the NO_PERMISSION answer.
// A request whose signature was verified marks its connection
// authenticated (transport's authentication deadline).
func (s *Service) Authorize(c *transport.Conn, req *remoting.Command) *remoting.Command {
	resp, authenticated := s.check(c.SourceIP(), req)
	if authenticated && !c.Authenticated() {
		c.MarkAuthenticated()
	}
	return resp
}

// decide is Authorize for a request from ip.
func (s *Service) decide(ip string, req *remoting.Command) *remoting.Command {
	resp, _ := s.check(ip, req)
	return resp
}

// check is decide; authenticated reports that
// the request was let through on its verified signature (ACL 1.0: on its
// account's signature or white address).
func (s *Service) check(ip string, req *remoting.Command) (resp *remoting.Command, authenticated bool) {
	if s.aclOn {
		if v := s.v1.Load().Check(aclv1.Request{Code: req.Code, Ext: req.ExtFields, Body: req.Body,
			Version: req.Version, RemoteIP: ip}); !v.Allowed {
			return s.refuse(req, ip, req.Ext(auth.AccessKeyField), auth.Authorization, v.Reason), false
		}
		authenticated = req.Ext(auth.AccessKeyField) != ""
	}
	if s.v2On {
		out := auth.Gate(s.settings, s.store, req.Code, req.ExtFields, req.Body, req.Version, ip)
		if !out.Allowed {
			if out.Stage == auth.Authentication {
				s.refusedAuth.Add(1)
			}
			return s.refuse(req, ip, out.Username, out.Stage, out.Remark), false
		}
		authenticated = out.Authenticated || (authenticated && !s.settings.AuthenticationEnabled)
	}
	return nil, authenticated
}

// Authenticates reports whether requests are authenticated (ACL 1.0 or
// authenticationEnabled), so an authentication deadline means something.
func (s *Service) Authenticates() bool { return s.aclOn || s.settings.AuthenticationEnabled }

func (s *Service) refuse(req *remoting.Command, ip, user string, stage auth.Stage, remark string) *remoting.Command {
	s.refused.Add(1)
	if s.logLimit.Allow() {
		s.logger.Warn("auth: request refused", "code", remoting.RequestName(req.Code), "user", user,
			"source", ip, "stage", string(stage), "remark", remark)
	}
	return remoting.NewResponse(req, remoting.NoPermission, remark)
}

// Sign adds the inner credentials' signature to an outgoing request (no
// change without inner credentials).
func (s *Service) Sign(req *remoting.Command) {
	if s == nil || s.inner == nil {
		return
	}
	if req.ExtFields == nil {
		req.ExtFields = map[string]string{}
	}
	auth.SignRequest(req.ExtFields, req.Body, req.Version, *s.inner)
}

// Hook is Authorize when a check is on, else nil (the transport then
// pays one nil check per request).
func (s *Service) Hook() func(c *transport.Conn, req *remoting.Command) *remoting.Command {
	if !s.Active() {
		return nil
	}
	return s.Authorize
}
