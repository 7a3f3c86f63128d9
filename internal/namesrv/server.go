package namesrv

import (
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// Server is the name server: a thin driver around RouteTable and KVConfig.
// It decodes requests, takes the lock, calls the table, and encodes the
// answer; a goroutine scans for silent brokers, the transport reports
// closed connections, and a persister writes the KV table.
type Server struct {
	cfgMu sync.RWMutex // guards cfg: UPDATE_NAMESRV_CONFIG changes its live keys
	cfg   Config
	log   *slog.Logger
	clock clock.Clock

	mu     sync.RWMutex // guards routes
	routes *RouteTable

	kvMu      sync.RWMutex // guards kv
	kv        *KVConfig
	persister *kvPersister // nil when cfg.KVConfigPath is empty

	handlers map[int32]func(conn *transport.Conn, req *remoting.Command) *remoting.Command

	tsMu   sync.Mutex
	ts     *transport.Server
	conns  map[uint64]*transport.Conn // connections that registered brokers
	closed bool

	stopScan chan struct{}
	scanDone chan struct{}
	once     sync.Once
	shutErr  error

	// testHookConnClosed, when set, runs after a closed connection's
	// brokers were dropped.
	testHookConnClosed func(id uint64, dropped []Dropped)
	// testHookScanned, when set by an Option (before the scan starts), runs
	// after each background scan.
	testHookScanned func(dropped []Dropped)
	// noScanLoop: tests call scanNotActiveBrokers themselves.
	noScanLoop bool

	// tcfg is the base of the transport server's configuration
	// (WithServerConfig): access control, connection limits.
	tcfg transport.ServerConfig
	// extra are handlers served beside the name server's own
	// (WithHandlers), e.g. user and ACL management.
	extra map[int32]transport.Handler
	// beside registers another component's handlers on the transport
	// server once it is built (WithBeside).
	beside func(ts *transport.Server, own transport.Handler)
}

// Option adjusts a Server at construction.
type Option func(*Server)

// WithClock replaces the wall clock used for broker liveness (tests drive
// expiry with a clock.Manual instead of sleeping); nil keeps the wall clock.
func WithClock(c clock.Clock) Option {
	return func(s *Server) { s.clock = clock.Or(c) }
}

// WithServerConfig sets the configuration of the transport server the
// name server listens with: its Authorize hook (access control, which the
// owner builds from the authentication keys) and connection limits. The
// logger is the name server's when cfg has none. Requests handled in
// process (Handle) do not pass through it.
func WithServerConfig(cfg transport.ServerConfig) Option {
	return func(s *Server) { s.tcfg = cfg }
}

// WithHandlers serves more request codes beside the name server's own
// (AUTH_CREATE_USER ... AUTH_LIST_ACL when access control is on); a code
// the name server serves itself keeps its own handler.
func WithHandlers(hs map[int32]transport.Handler) Option {
	return func(s *Server) { s.extra = hs }
}

// WithBeside serves another component on the name server's port: reg is
// called once the transport server is built, after the name server's own
// routes, with the server and the name server's own handler (which
// answers every code the name server serves). A code reg registers
// replaces the name server's route; reg may call own for the codes both
// serve. The controller of enableControllerInNamesrv=true is served so
// (BROKER_HEARTBEAT is both the name server's and the controller's).
func WithBeside(reg func(ts *transport.Server, own transport.Handler)) Option {
	return func(s *Server) { s.beside = reg }
}

// New builds a name server: it loads the KV-config file (a missing file is
// an empty table; a malformed one is an error, so it is never overwritten)
// and starts the liveness scan (every ScanNotActiveBrokerInterval ms; a
// value <= 0 means the default, 5000). It does not listen; see Listen.
func New(cfg Config, logger *slog.Logger, opts ...Option) (*Server, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.BrokerChannelExpiredTime <= 0 {
		cfg.BrokerChannelExpiredTime = DefaultConfig().BrokerChannelExpiredTime
	}
	if cfg.ScanNotActiveBrokerInterval <= 0 {
		cfg.ScanNotActiveBrokerInterval = DefaultConfig().ScanNotActiveBrokerInterval
	}
	s := &Server{
		cfg:      cfg,
		log:      logger,
		clock:    clock.Real(),
		routes:   NewRouteTable(),
		kv:       NewKVConfig(),
		conns:    make(map[uint64]*transport.Conn),
		stopScan: make(chan struct{}),
		scanDone: make(chan struct{}),
	}
	s.routes.DeleteTopicWithBrokerRegistration = cfg.DeleteTopicWithBrokerRegistration
	for _, o := range opts {
		o(s)
	}
	if cfg.KVConfigPath != "" {
		data, err := os.ReadFile(cfg.KVConfigPath)
		switch {
		case err == nil:
			kv, err := DecodeKVConfig(data)
			if err != nil {
				return nil, fmt.Errorf("load %s: %w", cfg.KVConfigPath, err)
			}
			s.kv = kv
		case errors.Is(err, os.ErrNotExist):
		default:
			return nil, fmt.Errorf("load %s: %w", cfg.KVConfigPath, err)
		}
		s.persister = newKVPersister(cfg.KVConfigPath, s.kvSnapshot, logger)
	} else {
		logger.Warn("kvConfigPath is empty: KV config is kept in memory only")
	}
	s.handlers = map[int32]func(*transport.Conn, *remoting.Command) *remoting.Command{
		remoting.RegisterBroker:                s.registerBroker,
		remoting.UnregisterBroker:              s.unregisterBroker,
		remoting.BrokerHeartbeat:               s.brokerHeartbeat,
		remoting.QueryDataVersion:              s.queryDataVersion,
		remoting.GetRouteinfoByTopic:           s.routeInfoByTopic,
		remoting.GetBrokerClusterInfo:          s.brokerClusterInfo,
		remoting.GetAllTopicListFromNameserver: s.allTopicList,
		remoting.DeleteTopicInNamesrv:          s.deleteTopic,
		remoting.PutKVConfig:                   s.putKVConfig,
		remoting.GetKVConfig:                   s.getKVConfig,
		remoting.DeleteKVConfig:                s.deleteKVConfig,
		remoting.GetKVListByNamespace:          s.kvListByNamespace,
		remoting.GetTopicsByCluster:            s.topicsByCluster,
		remoting.WipeWritePermOfBroker:         s.wipeWritePermOfBroker,
		remoting.AddWritePermOfBroker:          s.addWritePermOfBroker,
		remoting.GetNamesrvConfig:              s.getNamesrvConfig,
		remoting.UpdateNamesrvConfig:           s.updateNamesrvConfig,
		remoting.GetSystemTopicListFromNs:      s.systemTopicList,
		remoting.GetUnitTopicList:              s.unitTopicList,
		remoting.GetHasUnitSubTopicList:        s.hasUnitSubTopicList,
		remoting.GetHasUnitSubUnunitTopicList:  s.hasUnitSubUnunitTopicList,
	}
	for code, h := range s.extra {
		if _, own := s.handlers[code]; !own {
			s.handlers[code] = h
		}
	}
	if !s.noScanLoop {
		go s.scanLoop(time.Duration(cfg.ScanNotActiveBrokerInterval) * time.Millisecond)
	} else {
		close(s.scanDone)
	}
	return s, nil
}

// Handle answers one request in-process (the standalone broker registers
// this way). Registrations made here have no connection, so only expiry or
// UNREGISTER_BROKER removes them.
func (s *Server) Handle(req *remoting.Command) *remoting.Command {
	return s.dispatch(nil, req)
}

func (s *Server) dispatch(c *transport.Conn, req *remoting.Command) *remoting.Command {
	h, ok := s.handlers[req.Code]
	if !ok {
		return remoting.NewResponse(req, remoting.RequestCodeNotSupported,
			" request type "+strconv.Itoa(int(req.Code))+" not supported")
	}
	return h(c, req)
}

// Listen serves the name server on addr ("host:port"; port 0 picks one) and
// returns the bound address. It may be called more than once.
func (s *Server) Listen(addr string) (net.Addr, error) {
	ts, err := s.transportServer()
	if err != nil {
		return nil, err
	}
	a, err := ts.Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("namesrv listen %s: %w", addr, err)
	}
	return a, nil
}

// Serve serves the name server on a listener the caller built (TLS,
// connection limits); the server closes it on Shutdown.
func (s *Server) Serve(ln net.Listener) (net.Addr, error) {
	ts, err := s.transportServer()
	if err != nil {
		ln.Close()
		return nil, err
	}
	return ts.Serve(ln)
}

// transportServer returns the transport server, created on first use.
func (s *Server) transportServer() (*transport.Server, error) {
	s.tsMu.Lock()
	if s.closed {
		s.tsMu.Unlock()
		return nil, ErrClosed
	}
	if s.ts == nil {
		tc := s.tcfg
		if tc.Logger == nil {
			tc.Logger = s.log
		}
		ts := transport.NewServer(tc)
		for code := range s.handlers {
			ts.Register(code, s.dispatch, nil)
		}
		ts.RegisterDefault(s.dispatch)
		ts.OnConnClose(s.onConnClose)
		if s.beside != nil {
			s.beside(ts, s.dispatch)
		}
		s.ts = ts
	}
	ts := s.ts
	s.tsMu.Unlock()
	return ts, nil
}

// Shutdown stops the scan, closes the listeners and connections, and writes
// any pending KV change. It returns the KV write's error, if any.
func (s *Server) Shutdown() error {
	s.once.Do(func() {
		close(s.stopScan)
		<-s.scanDone
		s.tsMu.Lock()
		s.closed = true
		ts := s.ts
		s.tsMu.Unlock()
		var errs []error
		if ts != nil {
			if err := ts.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if s.persister != nil {
			if err := s.persister.close(); err != nil {
				errs = append(errs, err)
			}
		}
		s.shutErr = errors.Join(errs...)
	})
	return s.shutErr
}

// SyncKV waits until every KV change made before the call is written to
// kvConfigPath, and returns the write's error. With no path it returns nil.
func (s *Server) SyncKV() error {
	if s.persister == nil {
		return nil
	}
	return s.persister.sync()
}

func (s *Server) kvSnapshot() []byte {
	s.kvMu.RLock()
	defer s.kvMu.RUnlock()
	return s.kv.Encode()
}

func (s *Server) kvChanged() {
	if s.persister != nil {
		s.persister.markDirty()
	}
}

// ---- liveness

func (s *Server) scanLoop(every time.Duration) {
	defer close(s.scanDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stopScan:
			return
		case <-t.C:
			d := s.scanNotActiveBrokers()
			if s.testHookScanned != nil {
				s.testHookScanned(d)
			}
		}
	}
}

// scanNotActiveBrokers drops brokers silent past their timeout and closes
// their connections, as RocketMQ does.
func (s *Server) scanNotActiveBrokers() []Dropped {
	now := s.clock.Now()
	s.mu.Lock()
	dropped := s.routes.Expire(now)
	s.mu.Unlock()
	for _, d := range dropped {
		s.log.Warn("broker expired: no registration within its heartbeat timeout",
			"cluster", d.Cluster, "brokerName", d.BrokerName, "addr", d.Addr)
		if d.ConnID != 0 {
			s.tsMu.Lock()
			c := s.conns[d.ConnID]
			s.tsMu.Unlock()
			if c != nil {
				c.Close()
			}
		}
	}
	return dropped
}

func (s *Server) onConnClose(c *transport.Conn) {
	s.tsMu.Lock()
	delete(s.conns, c.ID())
	s.tsMu.Unlock()
	dropped := s.dropConn(c.ID())
	if s.testHookConnClosed != nil {
		s.testHookConnClosed(c.ID(), dropped)
	}
}

func (s *Server) dropConn(id uint64) []Dropped {
	s.mu.Lock()
	dropped := s.routes.DropConn(id)
	s.mu.Unlock()
	for _, d := range dropped {
		s.log.Info("broker connection closed: broker dropped",
			"cluster", d.Cluster, "brokerName", d.BrokerName, "addr", d.Addr)
	}
	return dropped
}

// ---- request decoding helpers

// requiredExt returns ext field k or an ErrMissingField error.
func requiredExt(req *remoting.Command, k string) (string, error) {
	v, ok := req.ExtFields[k]
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrMissingField, k)
	}
	return v, nil
}

func intExt(req *remoting.Command, k string, required bool, def int64) (int64, error) {
	v, ok := req.ExtFields[k]
	if !ok || v == "" {
		if required {
			return 0, fmt.Errorf("%w: %s", ErrMissingField, k)
		}
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s=%q is not an integer", ErrBadField, k, v)
	}
	return n, nil
}

func errorResponse(req *remoting.Command, err error) *remoting.Command {
	return remoting.NewResponse(req, remoting.SystemError, err.Error())
}

func success(req *remoting.Command) *remoting.Command {
	return remoting.NewResponse(req, remoting.Success, "")
}

// ---- broker requests

func (s *Server) registerBroker(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r, err := s.decodeRegistration(req)
	if err != nil {
		if errors.Is(err, ErrCRCMismatch) {
			s.log.Warn("register broker: crc32 not match", "brokerAddr", req.Ext("brokerAddr"))
			return remoting.NewResponse(req, remoting.SystemError, "crc32 not match")
		}
		return errorResponse(req, err)
	}
	if c != nil {
		r.ConnID = c.ID()
		s.tsMu.Lock()
		s.conns[c.ID()] = c
		s.tsMu.Unlock()
	}
	s.mu.Lock()
	_, known := s.routes.Live(r.Cluster, r.BrokerAddr)
	res := s.routes.Register(r, s.clock.Now())
	s.mu.Unlock()
	if res.ConflictWith != "" {
		s.log.Warn("registering broker conflicts with the registered one at a higher state version; ignored",
			"cluster", r.Cluster, "brokerName", r.BrokerName, "brokerId", r.BrokerID, "addr", r.BrokerAddr,
			"stateVersion", r.DataVersion.StateVersion, "holder", res.ConflictWith)
	}
	if res.DisplacedMaster != "" {
		s.log.Warn("two masters (brokerId 0) registered for one broker name; the newer holds the id",
			"cluster", r.Cluster, "brokerName", r.BrokerName, "previous", res.DisplacedMaster, "newer", r.BrokerAddr)
	}
	if !known && res.ConflictWith == "" {
		s.log.Info("new broker registered", "cluster", r.Cluster, "brokerName", r.BrokerName,
			"brokerId", r.BrokerID, "addr", r.BrokerAddr, "topics", len(r.Topics))
	}
	if c != nil {
		// The connection may have closed while this request ran; its close
		// callback then found nothing to drop.
		select {
		case <-c.Closed():
			s.dropConn(c.ID())
		default:
		}
	}
	resp := success(req)
	if res.HAServerAddr != "" {
		resp.SetExt("haServerAddr", res.HAServerAddr)
	}
	if res.MasterAddr != "" {
		resp.SetExt("masterAddr", res.MasterAddr)
	}
	if s.config().ReturnOrderTopicConfigToBroker {
		s.kvMu.RLock()
		m, ok := s.kv.Namespace(NamespaceOrderTopicConfig)
		s.kvMu.RUnlock()
		if ok {
			resp.Body = mustMarshal(KVTable{Table: m})
		}
	}
	return resp
}

func (s *Server) decodeRegistration(req *remoting.Command) (Registration, error) {
	var r Registration
	var err error
	if r.BrokerName, err = requiredExt(req, "brokerName"); err != nil {
		return r, err
	}
	if r.BrokerAddr, err = requiredExt(req, "brokerAddr"); err != nil {
		return r, err
	}
	if err := checkAddr(r.BrokerAddr); err != nil {
		return r, err
	}
	if r.Cluster, err = requiredExt(req, "clusterName"); err != nil {
		return r, err
	}
	r.HAServerAddr = req.Ext("haServerAddr")
	if r.BrokerID, err = intExt(req, "brokerId", true, 0); err != nil {
		return r, err
	}
	expired := s.config().BrokerChannelExpiredTime
	timeout, err := intExt(req, "heartbeatTimeoutMillis", false, expired)
	if err != nil {
		return r, err
	}
	if timeout <= 0 {
		timeout = expired
	}
	r.Timeout = time.Duration(timeout) * time.Millisecond
	r.EnableActingMaster = req.Ext("enableActingMaster") == "true"
	r.ZoneName = req.Ext("zoneName")
	crc, err := intExt(req, "bodyCrc32", false, 0)
	if err != nil {
		return r, err
	}
	if crc != 0 && int64(crc32.ChecksumIEEE(req.Body)&0x7FFFFFFF) != crc {
		return r, ErrCRCMismatch
	}
	if len(req.Body) == 0 {
		return r, nil
	}
	body, err := DecodeRegisterBrokerBody(req.Body, req.Ext("compressed") == "true", req.Version)
	if err != nil {
		return r, err
	}
	r.Topics = body.TopicConfigSerializeWrapper.TopicConfigTable
	r.DataVersion = body.TopicConfigSerializeWrapper.DataVersion
	return r, nil
}

// checkAddr refuses broker addresses the Go client cannot parse back out of
// a route's brokerAddrs (it splits the raw text on ',' and strips '"').
func checkAddr(a string) error {
	for i := 0; i < len(a); i++ {
		switch a[i] {
		case ',', '"', '{', '}', ' ', '\\':
			return fmt.Errorf("%w: brokerAddr %q contains %q", ErrBadField, a, a[i])
		}
	}
	if a == "" {
		return fmt.Errorf("%w: brokerAddr is empty", ErrBadField)
	}
	return nil
}

func (s *Server) unregisterBroker(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	name, err := requiredExt(req, "brokerName")
	if err != nil {
		return errorResponse(req, err)
	}
	addr, err := requiredExt(req, "brokerAddr")
	if err != nil {
		return errorResponse(req, err)
	}
	cluster, err := requiredExt(req, "clusterName")
	if err != nil {
		return errorResponse(req, err)
	}
	s.mu.Lock()
	ok := s.routes.Unregister(cluster, addr, name)
	s.mu.Unlock()
	s.log.Info("unregister broker", "cluster", cluster, "brokerName", name, "addr", addr, "found", ok)
	return success(req)
}

func (s *Server) brokerHeartbeat(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	s.mu.Lock()
	s.routes.Touch(req.Ext("clusterName"), req.Ext("brokerAddr"), s.clock.Now())
	s.mu.Unlock()
	return success(req)
}

func (s *Server) queryDataVersion(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	var dv DataVersion
	if len(req.Body) > 0 {
		if err := unmarshalJavaJSON(req.Body, &dv); err != nil {
			return errorResponse(req, fmt.Errorf("%w: data version body: %v", ErrBadField, err))
		}
	}
	cluster, addr := req.Ext("clusterName"), req.Ext("brokerAddr")
	s.mu.Lock()
	prev, ok := s.routes.DataVersion(cluster, addr)
	s.routes.Touch(cluster, addr, s.clock.Now())
	s.mu.Unlock()
	resp := success(req)
	resp.SetExt("changed", strconv.FormatBool(!ok || prev != dv))
	if ok {
		resp.Body = prev.Encode()
	}
	return resp
}

// ---- client requests

func (s *Server) routeInfoByTopic(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	topic, err := requiredExt(req, "topic")
	if err != nil {
		return errorResponse(req, err)
	}
	s.mu.RLock()
	route, ok := s.routes.TopicRoute(topic)
	s.mu.RUnlock()
	if !ok {
		return remoting.NewResponse(req, remoting.TopicNotExist,
			"No topic route info in name server for the topic: "+topic)
	}
	if s.config().OrderMessageEnable {
		s.kvMu.RLock()
		route.OrderTopicConf, _ = s.kv.Get(NamespaceOrderTopicConfig, topic)
		s.kvMu.RUnlock()
	}
	resp := success(req)
	resp.Body = route.Encode()
	return resp
}

func (s *Server) brokerClusterInfo(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	s.mu.RLock()
	ci := s.routes.ClusterInfo()
	s.mu.RUnlock()
	resp := success(req)
	resp.Body = mustMarshal(&ci)
	return resp
}

func (s *Server) allTopicList(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	if !s.config().EnableAllTopicList {
		return remoting.NewResponse(req, remoting.SystemError, "disable")
	}
	s.mu.RLock()
	topics := s.routes.Topics()
	s.mu.RUnlock()
	resp := success(req)
	resp.Body = mustMarshal(TopicList{TopicList: topics})
	return resp
}

func (s *Server) deleteTopic(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	topic, err := requiredExt(req, "topic")
	if err != nil {
		return errorResponse(req, err)
	}
	cluster := req.Ext("clusterName")
	s.mu.Lock()
	s.routes.DeleteTopic(topic, cluster)
	s.mu.Unlock()
	return success(req)
}

// ---- KV config

func (s *Server) putKVConfig(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	ns, okNS := req.ExtFields["namespace"]
	key, okKey := req.ExtFields["key"]
	if !okNS || !okKey {
		return remoting.NewResponse(req, remoting.SystemError, "namespace or key is null")
	}
	value, err := requiredExt(req, "value")
	if err != nil {
		return errorResponse(req, err)
	}
	s.kvMu.Lock()
	changed := s.kv.Put(ns, key, value)
	s.kvMu.Unlock()
	if changed {
		s.kvChanged()
	}
	return success(req)
}

func (s *Server) getKVConfig(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	ns, key := req.Ext("namespace"), req.Ext("key")
	s.kvMu.RLock()
	v, ok := s.kv.Get(ns, key)
	s.kvMu.RUnlock()
	if !ok {
		return remoting.NewResponse(req, remoting.QueryNotFound,
			"No config item, Namespace: "+ns+" Key: "+key)
	}
	resp := success(req)
	resp.SetExt("value", v)
	return resp
}

func (s *Server) deleteKVConfig(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	s.kvMu.Lock()
	changed := s.kv.Delete(req.Ext("namespace"), req.Ext("key"))
	s.kvMu.Unlock()
	if changed {
		s.kvChanged()
	}
	return success(req)
}

func (s *Server) kvListByNamespace(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	ns := req.Ext("namespace")
	s.kvMu.RLock()
	m, ok := s.kv.Namespace(ns)
	s.kvMu.RUnlock()
	if !ok {
		return remoting.NewResponse(req, remoting.QueryNotFound, "No config item, Namespace: "+ns)
	}
	resp := success(req)
	resp.Body = mustMarshal(KVTable{Table: m})
	return resp
}
