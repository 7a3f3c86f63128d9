package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/authserve"
	"github.com/spoolmq/spool/internal/brokerstats"
	"github.com/spoolmq/spool/internal/clients"
	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/datapath"
	"github.com/spoolmq/spool/internal/failover"
	"github.com/spoolmq/spool/internal/longpoll"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/processor"
	"github.com/spoolmq/spool/internal/schedule"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/timer"
	"github.com/spoolmq/spool/internal/tlsconf"
	"github.com/spoolmq/spool/internal/transaction"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// LocalNamesrv is an in-process name server the broker registers with
// directly (standalone mode).
type LocalNamesrv interface {
	Handle(req *remoting.Command) *remoting.Command
}

// Options are the broker's collaborators.
type Options struct {
	// Store is the message store; nil opens one from StoreConfig. Either
	// way the broker starts and shuts it down.
	Store store.MessageStore
	// StoreConfig is the store's configuration; its storePathRootDir also
	// holds the broker's config/ directory.
	StoreConfig store.Config
	// ConfigFile is the .properties file UPDATE_BROKER_CONFIG persists
	// changed keys to: the file the broker was started with (-c), as in
	// RocketMQ; empty = DefaultConfigFile(storePathRootDir).
	ConfigFile string
	// LocalNamesrv, when set, is registered with in-process in addition to
	// the name servers of namesrvAddr.
	LocalNamesrv LocalNamesrv
	Logger       *slog.Logger
	// Clock is the time the broker's own services decide by (transaction
	// check rounds, the read and cold-read budgets); nil = the wall clock.
	// The timing wheel reads Config.Timer.Clock.
	Clock clock.Clock
	// TLS is the TLS configuration of the broker's ports and of its
	// connections to name servers; nil = plain (tls.go).
	TLS *tlsconf.Config

	// StoreFailpoint, when set, is called at the named points of the
	// store it opens (store.DefaultMessageStore.Failpoint: e.g.
	// "truncate-checkpoint", "truncate-commitlog"). nil in production;
	// `spool broker` sets it from SPOOL_CRASH_AT.
	StoreFailpoint func(name string)

	// replica is the replication engine enableControllerMode=true drives
	// (controller_mode.go); set by the package's tests only.
	replica failover.Replica
}

const (
	stateNew int32 = iota
	stateRunning
	stateStopping
	stateStopped
)

// Broker is a RocketMQ-compatible broker: the remoting processors on top of
// a MessageStore, the metadata managers, long polling and name-server
// registration.
type Broker struct {
	cfg      atomic.Pointer[Config]
	storeCfg atomic.Pointer[store.Config] // replaced as a whole by live updates
	// dataCfg is the data path's view of cfg and storeCfg, replaced with them.
	dataCfg atomic.Pointer[datapath.Config]
	// cfgFile is where live updates are persisted (Options.ConfigFile).
	cfgFile string
	logger  *slog.Logger
	clock   clock.Clock
	store   store.MessageStore
	server  *transport.Server
	authsrv *authserve.Service // access control (auth.go)
	tls     *brokerTLS         // nil: plain ports (tls.go)

	topics    *metadata.TopicConfigManager
	groups    *metadata.SubscriptionGroupManager
	offsets   *metadata.ConsumerOffsetManager
	consumers *clients.ConsumerManager
	producers *clients.ProducerManager
	locks     *clients.RebalanceLockManager
	longPoll  *longpoll.Service
	proc      *processor.Processor
	admin     *processor.Admin
	registrar *registrar
	schedule  *schedule.Service
	txCheck   transactionService
	timers    atomic.Pointer[timer.Service] // the timing wheel (timers.go); nil when none ran
	stats     *brokerStats
	traffic   *brokerstats.Manager
	statsProc *processor.BrokerStats
	http      *httpListener // nil unless metricsExporterType=PROM
	data      *datapath.Path
	flow      *datapath.Flow
	cold      *coldReadBudget
	repl      *replication    // set by Start before the listeners open; nil for test stores
	failover  *failover.Agent // the controller client; nil unless enableControllerMode
	sw        *switchReplica  // controller mode's replication engine (nil otherwise)
	hainfo    haInfo          // EXCHANGE_BROKER_HA_INFO's state (ha_info.go)
	// roleMu serializes the start and stop of the master-only services
	// (delayed delivery, transaction check-back, the timing wheel) and the
	// timing wheel's cut; wheelOn is whether the wheel runs, rolesClosed
	// whether the broker is shutting down (no service starts any more).
	roleMu      sync.Mutex
	wheelOn     bool
	rolesClosed bool
	// syncCounts are a slave's metadata copy figures; timerCopy is the
	// master's timer checkpoint it copied last.
	syncCounts slaveSyncCounts
	timerCopy  atomic.Pointer[timer.WireCheckpoint]
	rpc        rpcStats // rocketmq_rpc_latency (rpc_metrics.go)
	// fs is the store's file system, also for the slave's commit note
	// (commit_note.go).
	fs vfs.FS

	executors  map[string]*transport.Executor
	sendEx     *transport.Executor
	pullEx     *transport.Executor
	litePullEx *transport.Executor

	// Set at Start, read-only afterwards.
	addr      string
	vipAddr   string
	storeHost message.Addr
	listenIP  net.IP

	delayLevels []time.Duration

	cfgMu     sync.Mutex    // serializes live configuration updates
	ready     chan struct{} // closed once addr and storeHost are set (or Start failed)
	readyOnce sync.Once
	state     atomic.Int32
	stop      chan struct{}
	bg        sync.WaitGroup
}

// New builds a broker: it loads the metadata files (topics, subscription
// groups, consumer offsets) from storePathRootDir/config and opens the store
// when opts.Store is nil. Nothing listens until Start.
func New(cfg Config, opts Options) (*Broker, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("component", "broker")
	if err := checkConfig(&cfg); err != nil {
		return nil, err
	}
	if opts.StoreConfig.StorePathRootDir == "" {
		def := store.DefaultConfig()
		if opts.StoreConfig.MaxMessageSize == 0 {
			opts.StoreConfig = def
		} else {
			opts.StoreConfig.StorePathRootDir = def.StorePathRootDir
		}
	}
	if err := checkRole(opts.StoreConfig.BrokerRole, cfg.BrokerID); err != nil {
		return nil, err
	}
	if err := checkControllerMode(&cfg); err != nil {
		return nil, err
	}
	// The timing wheel lives in the store's directory.
	cfg.Timer.StorePathRootDir = opts.StoreConfig.StorePathRootDir
	levels, err := parseDelayLevels(opts.StoreConfig.MessageDelayLevel)
	if err != nil {
		return nil, err
	}
	b := &Broker{
		cfgFile:     opts.ConfigFile,
		logger:      logger,
		clock:       clock.Or(opts.Clock),
		fs:          vfs.Default,
		consumers:   clients.NewConsumerManager(clients.Deps{Logger: logger}),
		producers:   clients.NewProducerManager(),
		locks:       clients.NewRebalanceLockManager(clock.Or(opts.Clock)),
		stats:       newBrokerStats(clock.Or(opts.Clock).Now()),
		executors:   make(map[string]*transport.Executor),
		delayLevels: levels,
		stop:        make(chan struct{}),
		ready:       make(chan struct{}),
	}
	b.setConfig(&cfg, &opts.StoreConfig)
	if b.cfgFile == "" {
		b.cfgFile = DefaultConfigFile(opts.StoreConfig.StorePathRootDir)
	}
	configDir := filepath.Join(opts.StoreConfig.StorePathRootDir, "config")
	md := metadataDeps(&cfg, configDir, logger, b.clock)
	b.topics = metadata.NewTopicConfigManager(md)
	b.groups = metadata.NewSubscriptionGroupManager(md)
	b.offsets = metadata.NewConsumerOffsetManager(md)
	for _, load := range []func() error{b.topics.Load, b.groups.Load, b.offsets.Load} {
		if err := load(); err != nil {
			return nil, err
		}
	}
	if !cfg.AutoCreateTopicEnable {
		// A TBW102 left in topics.json by a run with auto-create on would
		// give producers a route for every unknown topic.
		b.topics.Delete(topicAutoCreate)
	}
	if err := b.setupTLS(opts.TLS, &cfg); err != nil {
		return nil, err
	}
	b.registrar = newRegistrar(b, opts.LocalNamesrv)
	b.topics.OnChange = b.topicChanged
	b.groups.OnDelete = b.groupDeleted
	b.schedule = schedule.NewService(scheduleDeps(b, filepath.Join(configDir, "delayOffset.json")))
	if err := b.schedule.Load(); err != nil {
		return nil, err
	}
	b.store = opts.Store
	if b.store == nil {
		st, err := store.Open(opts.StoreConfig, b.fs, logger)
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		st.Failpoint = opts.StoreFailpoint
		b.store = st
	}
	if cfg.EnableControllerMode && opts.replica == nil {
		st, ok := b.store.(*store.DefaultMessageStore)
		if !ok {
			return nil, fmt.Errorf("%w: enableControllerMode=true needs the broker's own message store", ErrConfig)
		}
		// Consumers never see a record past the confirm offset: a role
		// change may still cut it.
		if err := st.GateDispatchAtConfirm(); err != nil {
			return nil, err
		}
		b.sw = newSwitchReplica(b, st, &cfg)
	}
	b.longPoll = longpoll.New(longPollDeps(b))
	// While a pull is held, new records are dispatched at once.
	b.store.SetDispatchWaiters(b.longPoll.Holding)
	b.txCheck = transaction.NewCheckService(transactionDeps(b, filepath.Join(configDir, "transactionIndex.json")))
	b.cold = &coldReadBudget{clock: b.clock}
	b.traffic = newTrafficStats(&cfg)
	b.data = datapath.New(dataDeps(b))
	b.flow = b.data.Flow()
	b.proc = processor.New(processorDeps(b))
	b.admin = processor.NewAdmin(adminDeps(b))
	b.statsProc = processor.NewBrokerStats(b.traffic)
	if b.authsrv, err = openAuth(&cfg, opts.StoreConfig.StorePathRootDir, logger); err != nil {
		return nil, err
	}
	var passBegin func() bool
	var passEnd func()
	if g, ok := b.store.(writeGatherer); ok {
		// An event loop's pass writes the CommitLog records of all the
		// sends it served once, after the last of them.
		passBegin, passEnd = g.GatherWrites, g.ReleaseWrites
	}
	var passStart func() bool
	var passDone func()
	if s, ok := b.store.(passSyncer); ok {
		// Under SYNC_FLUSH a pass syncs what it wrote, after its other
		// answers and before it reads again, while syncs are fast.
		passStart, passDone = s.BeginPassSync, s.EndPassSync
	}
	b.server = transport.NewServer(transport.ServerConfig{
		Authorize:          b.authsrv.Hook(),
		IdleTimeout:        time.Duration(cfg.ServerChannelMaxIdleTimeSeconds) * time.Second,
		MaxInflightPerConn: cfg.MaxInflightRequestsPerConnection,
		MaxQueuedBodyBytes: cfg.MaxQueuedRequestBytes,
		Logger:             logger,
		MaxConns:           cfg.ServerMaxConnections,
		MaxConnsPerIP:      cfg.ServerMaxConnectionsPerIp,
		AuthTimeout:        b.authTimeout(&cfg),
		EventLoops:         EventLoops(cfg.ServerEventLoops),
		LoopPassBegin:      passBegin,
		LoopPassEnd:        passEnd,
		LoopPassStart:      passStart,
		LoopPassDone:       passDone,
	})
	b.server.OnReply(b.rpc.observe)
	if cfg.EnableControllerMode {
		r := opts.replica
		if r == nil {
			r = b.sw
		}
		if err := b.setupControllerMode(r); err != nil {
			return nil, err
		}
	}
	b.registerProcessors()
	return b, nil
}

// writeGatherer is a store that can gather the CommitLog writes of
// several puts into one (store.DefaultMessageStore).
type writeGatherer interface {
	GatherWrites() bool
	ReleaseWrites()
}

// passSyncer is a store whose SYNC_FLUSH group commit an event loop's pass
// can make itself (store.DefaultMessageStore).
type passSyncer interface {
	BeginPassSync() bool
	EndPassSync()
}

// EventLoops is the transport's EventLoops for the serverEventLoops key:
// negative for goroutines per connection, 0 for one loop per two CPUs.
func EventLoops(key int) int {
	switch {
	case key < 0:
		return 0
	case key == 0:
		return max(1, runtime.GOMAXPROCS(0)/2)
	}
	return key
}

func checkConfig(c *Config) error {
	switch {
	case c.BrokerName == "":
		return fmt.Errorf("%w: brokerName is empty", ErrConfig)
	case c.BrokerClusterName == "":
		return fmt.Errorf("%w: brokerClusterName is empty", ErrConfig)
	case c.ListenPort < 0 || c.ListenPort > 65535:
		return fmt.Errorf("%w: listenPort %d out of range", ErrConfig, c.ListenPort)
	case c.BrokerID < 0:
		return fmt.Errorf("%w: brokerId %d is negative", ErrConfig, c.BrokerID)
	}
	if c.DefaultTopicQueueNums <= 0 {
		c.DefaultTopicQueueNums = 8
	}
	return nil
}

// setConfig replaces the configuration and the store configuration as a
// whole, and the data path's view of them.
func (b *Broker) setConfig(cfg *Config, scfg *store.Config) {
	b.cfg.Store(cfg)
	b.storeCfg.Store(scfg)
	b.dataCfg.Store(dataConfig(cfg, scfg))
}

// config returns the current configuration (replaced as a whole by live
// updates; never modify it).
func (b *Broker) config() *Config { return b.cfg.Load() }

// Config returns a copy of the current configuration.
func (b *Broker) Config() Config { return *b.cfg.Load() }

// storeConfig returns the store configuration as the broker reads it
// (replaced as a whole by live updates; never modify it).
func (b *Broker) storeConfig() *store.Config { return b.storeCfg.Load() }

// DefaultConfigFile is where a broker started without a configuration file
// persists the keys changed by UPDATE_BROKER_CONFIG; the spool command
// reads it at start-up when no -c file is given.
func DefaultConfigFile(storePathRootDir string) string {
	return filepath.Join(storePathRootDir, "config", "broker.properties")
}

// Addr is the advertised client address, ip:port (valid after Start).
func (b *Broker) Addr() string { return b.addr }

// VIPAddr is the address of the VIP listener, or "" when it is off.
func (b *Broker) VIPAddr() string { return b.vipAddr }

// Store returns the message store.
func (b *Broker) Store() store.MessageStore { return b.store }

// Start starts the store, listens on listenPort and its VIP port, starts the
// background services and registers with the name servers.
func (b *Broker) Start() error {
	if !b.state.CompareAndSwap(stateNew, stateRunning) {
		return ErrAlreadyStarted
	}
	cfg := b.config()
	if err := b.store.Start(); err != nil {
		b.state.Store(stateStopped)
		return fmt.Errorf("start store: %w", err)
	}
	b.hainfo.initMaxOffset.Store(b.store.MaxPhyOffset())
	fail := func(err error) error {
		b.markReady()
		b.server.Close()
		b.closeTimers()
		b.closeReplication()
		b.store.Shutdown()
		b.state.Store(stateStopped)
		return err
	}
	bind := cfg.BindAddress
	if bind == "" {
		bind = "0.0.0.0"
	}
	if !cfg.EnableControllerMode {
		b.startReplication()
	}
	// Registered after startReplication has set b.repl, which the
	// dispatcher's callback reads (notifyPut).
	b.store.OnDispatch(b.onDispatch)
	if cut, ok := b.store.(interface{ OnTruncate(func(int64)) }); ok {
		cut.OnTruncate(b.onTruncate)
	}
	if err := b.startTimers(); err != nil {
		return fail(err)
	}
	la, err := b.listen("broker", net.JoinHostPort(bind, strconv.Itoa(cfg.ListenPort)))
	if err != nil {
		return fail(fmt.Errorf("listen on %s:%d: %w", bind, cfg.ListenPort, err))
	}
	port := la.(*net.TCPAddr).Port
	ip := advertisedIP(cfg.BrokerIP1, bind)
	if cfg.VipChannelEnable {
		vipPort := 0
		if cfg.ListenPort > 2 {
			vipPort = cfg.ListenPort - 2
		}
		va, err := b.listen("vip", net.JoinHostPort(bind, strconv.Itoa(vipPort)))
		if err != nil {
			return fail(fmt.Errorf("listen on VIP port %s:%d (vipChannelEnable=false turns it off): %w", bind, vipPort, err))
		}
		b.vipAddr = net.JoinHostPort(ip, strconv.Itoa(va.(*net.TCPAddr).Port))
	}
	if err := b.listenReplication(bind, ip, port); err != nil {
		return fail(err)
	}
	b.addr = net.JoinHostPort(ip, strconv.Itoa(port))
	host, err := message.ParseAddr(b.addr)
	if err != nil {
		return fail(fmt.Errorf("%w: advertised address %s (brokerIP1 must be an IP address): %w", ErrConfig, b.addr, err))
	}
	b.storeHost = host
	b.markReady()

	for _, f := range []*metadata.File{b.topics.File, b.groups.File, b.offsets.File, b.schedule.File} {
		f.Start()
	}
	b.background(func() { b.offsets.RunFlusher(millis(cfg.FlushConsumerOffsetInterval), b.stop) })
	b.background(b.housekeeping)
	b.background(func() { b.stats.run(b.stop, b.timerTotals, b.clock) })
	b.background(func() { b.flow.Run(b.stop) })
	b.background(func() { b.traffic.Run(b.stop) })
	if err := b.startHTTP(); err != nil {
		return fail(err)
	}
	b.background(func() { b.longPoll.Run(b.stop) })
	b.background(func() { b.authsrv.RunReload(b.stop, 5*time.Second) })
	b.registrar.round()
	b.background(b.registrar.run)
	b.background(b.registrar.runTopicChanges)
	if !b.isSlave() && !cfg.EnableControllerMode { // a slave's log holds only its master's bytes; controller mode starts them with the role
		b.schedule.Start()
		b.txCheck.Start()
	}
	b.startControllerMode()
	b.logger.Info("broker started", "addr", b.addr, "vip", b.vipAddr, "name", cfg.BrokerName,
		"cluster", cfg.BrokerClusterName, "namesrv", cfg.NamesrvAddr)
	return nil
}

func (b *Broker) markReady() { b.readyOnce.Do(func() { close(b.ready) }) }

func (b *Broker) background(fn func()) {
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		fn()
	}()
}

// onDispatch is the store's dispatch callback: it wakes held pulls and the
// schedule service. It never blocks.
func (b *Broker) onDispatch(topic string, queueID int32, maxOffset int64) {
	if topic == topicSchedule {
		b.schedule.OnDispatch(queueID)
	}
	b.longPoll.OnDispatch(topic, queueID, maxOffset)
	b.notifyPut()
}

// onTruncate runs after the store cut its log for a role change
// (controller mode): consumer offsets and delay offsets past the queues'
// new ends are lowered to them (apache/rocketmq#7689, #4771).
func (b *Broker) onTruncate(offset int64) {
	n := b.offsets.ClampTo(b.store.MaxOffsetInQueue)
	delay := b.schedule.ClampTo(func(q int32) int64 { return b.store.MaxOffsetInQueue(topicSchedule, q) })
	b.schedule.Truncated(offset)
	b.truncateDerived(offset)
	b.logger.Warn("broker: offsets lowered to the queues' ends after a CommitLog truncation",
		"offset", offset, "consumerOffsets", n, "delayOffsets", delay)
}

// every runs fn every d until the broker stops.
func (b *Broker) every(d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			fn()
		}
	}
}

// housekeeping expires silent clients.
func (b *Broker) housekeeping() {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			now := b.clock.Now()
			cfg := b.config()
			expiry := millis(cfg.ChannelExpiredTimeout)
			b.consumers.ScanExpired(now, expiry, cfg.NotifyConsumerIdsChangedEnable)
			b.producers.ScanExpired(now, expiry)
		}
	}
}

// Shutdown stops the broker: sends are refused, held pulls are answered at
// once, in-flight requests finish (until ctx ends), the listeners close, the
// broker unregisters from its name servers, the metadata files are written
// and the store is shut down.
func (b *Broker) Shutdown(ctx context.Context) error {
	if b.state.CompareAndSwap(stateNew, stateStopped) {
		return b.store.Shutdown()
	}
	if !b.state.CompareAndSwap(stateRunning, stateStopping) {
		return ErrShutdown
	}
	var errs []error
	b.endMasterServices()
	b.longPoll.Shutdown()
	if err := b.server.Drain(ctx); err != nil {
		errs = append(errs, fmt.Errorf("waiting for in-flight requests: %w", err))
	}
	if err := b.server.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close listeners: %w", err))
	}
	b.stopHTTP(ctx)
	b.closeControllerMode()
	close(b.stop)
	b.registrar.stopRounds()
	b.bg.Wait()
	// An unreachable name server must not fail the shutdown: it drops the
	// broker after its 120 s expiry anyway.
	if err := b.registrar.unregisterAll(ctx); err != nil {
		b.logger.Warn("unregister broker", "err", err)
	}
	b.registrar.close()
	if err := b.closeTimers(); err != nil {
		errs = append(errs, err)
	}
	for _, f := range []*metadata.File{b.topics.File, b.groups.File, b.offsets.File, b.schedule.File} {
		if err := f.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := b.topics.Journal.Close(); err != nil {
		errs = append(errs, err)
	}
	b.closeReplication()
	if err := b.store.Shutdown(); err != nil {
		errs = append(errs, fmt.Errorf("store shutdown: %w", err))
	}
	b.state.Store(stateStopped)
	return errors.Join(errs...)
}

func (b *Broker) stopping() bool { return b.state.Load() != stateRunning }

// advertisedIP picks the address clients are told: brokerIP1, else
// 127.0.0.1 when bound to loopback, else the first non-loopback IPv4.
func advertisedIP(brokerIP1, bind string) string {
	if brokerIP1 != "" {
		return brokerIP1
	}
	if ip := net.ParseIP(bind); ip != nil && ip.IsLoopback() {
		return "127.0.0.1"
	}
	if ip := net.ParseIP(bind); ip != nil && !ip.IsUnspecified() {
		return ip.String()
	}
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
				return n.IP.To4().String()
			}
		}
	}
	return "127.0.0.1"
}
