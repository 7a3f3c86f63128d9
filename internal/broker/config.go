package broker

import (
	"os"
	"runtime"
	"time"

	"github.com/spoolmq/spool/internal/failover"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/metrics"
	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/internal/timer"
)

// Config is the broker's part of RocketMQ's BrokerConfig (plus the
// NettyServerConfig keys the broker reads), with RocketMQ 5.3.3 defaults.
// Keys tagged live:"true" may be changed at run time by
// UPDATE_BROKER_CONFIG; every other key needs a restart.
type Config struct {
	BrokerClusterName string `prop:"brokerClusterName"`
	BrokerName        string `prop:"brokerName"`
	BrokerID          int64  `prop:"brokerId"`
	// BrokerIP1 is the advertised address; empty = the first non-loopback
	// IPv4 address, or 127.0.0.1 when bindAddress is a loopback address.
	BrokerIP1 string `prop:"brokerIP1"`
	// BrokerIP2 is the host advertised for replication (haServerAddr in
	// the registration); empty = BrokerIP1's.
	BrokerIP2 string `prop:"brokerIP2"`
	// ListenPort is the client port; the VIP port is ListenPort-2.
	ListenPort int `prop:"listenPort"`
	// BindAddress is the local address both ports listen on.
	BindAddress string `prop:"bindAddress"`
	// NamesrvAddr lists name servers separated by ';'.
	NamesrvAddr string `prop:"namesrvAddr"`
	// VipChannelEnable (a Spool key) turns the listenPort-2 listener on or
	// off.
	VipChannelEnable bool `prop:"vipChannelEnable"`
	// AuthConfig holds the access-control keys (auth.go).
	AuthConfig

	BrokerPermission            int    `prop:"brokerPermission" live:"true"`
	AutoCreateTopicEnable       bool   `prop:"autoCreateTopicEnable" live:"true"`
	DefaultTopicQueueNums       int    `prop:"defaultTopicQueueNums" live:"true"`
	ClusterTopicEnable          bool   `prop:"clusterTopicEnable"`
	BrokerTopicEnable           bool   `prop:"brokerTopicEnable"`
	TraceTopicEnable            bool   `prop:"traceTopicEnable"`
	MsgTraceTopicName           string `prop:"msgTraceTopicName"`
	AutoCreateSubscriptionGroup bool   `prop:"autoCreateSubscriptionGroup" live:"true"`

	SendMessageThreadPoolNums     int `prop:"sendMessageThreadPoolNums"`
	PullMessageThreadPoolNums     int `prop:"pullMessageThreadPoolNums"`
	LitePullMessageThreadPoolNums int `prop:"litePullMessageThreadPoolNums"`
	QueryMessageThreadPoolNums    int `prop:"queryMessageThreadPoolNums"`
	AdminBrokerThreadPoolNums     int `prop:"adminBrokerThreadPoolNums"`
	ClientManageThreadPoolNums    int `prop:"clientManageThreadPoolNums"`
	ConsumerManageThreadPoolNums  int `prop:"consumerManageThreadPoolNums"`
	HeartbeatThreadPoolNums       int `prop:"heartbeatThreadPoolNums"`
	EndTransactionThreadPoolNums  int `prop:"endTransactionThreadPoolNums"`

	SendThreadPoolQueueCapacity            int `prop:"sendThreadPoolQueueCapacity"`
	PullThreadPoolQueueCapacity            int `prop:"pullThreadPoolQueueCapacity"`
	LitePullThreadPoolQueueCapacity        int `prop:"litePullThreadPoolQueueCapacity"`
	QueryThreadPoolQueueCapacity           int `prop:"queryThreadPoolQueueCapacity"`
	ClientManagerThreadPoolQueueCapacity   int `prop:"clientManagerThreadPoolQueueCapacity"`
	ConsumerManagerThreadPoolQueueCapacity int `prop:"consumerManagerThreadPoolQueueCapacity"`
	HeartbeatThreadPoolQueueCapacity       int `prop:"heartbeatThreadPoolQueueCapacity"`
	AdminBrokerThreadPoolQueueCapacity     int `prop:"adminBrokerThreadPoolQueueCapacity"`
	EndTransactionPoolQueueCapacity        int `prop:"endTransactionPoolQueueCapacity"`

	WaitTimeMillsInSendQueue        int64 `prop:"waitTimeMillsInSendQueue"`
	WaitTimeMillsInPullQueue        int64 `prop:"waitTimeMillsInPullQueue"`
	WaitTimeMillsInLitePullQueue    int64 `prop:"waitTimeMillsInLitePullQueue"`
	WaitTimeMillsInHeartbeatQueue   int64 `prop:"waitTimeMillsInHeartbeatQueue"`
	WaitTimeMillsInTransactionQueue int64 `prop:"waitTimeMillsInTransactionQueue"`

	// BrokerFastFailureEnable answers queued requests that waited longer
	// than their waitTimeMills*Queue ([TIMEOUT_CLEAN_QUEUE]) and drains the
	// send queue while the page cache is busy ([PCBUSY_CLEAN_QUEUE]).
	BrokerFastFailureEnable bool `prop:"brokerFastFailureEnable"`
	// MaxInflightRequestsPerConnection (a Spool key) bounds the requests
	// of one connection running, queued or awaiting their answer; more are
	// answered SYSTEM_BUSY at once. One client process shares one
	// connection per broker among all its producers and consumers, so keep
	// it well above their combined in-flight sends and held pulls (0 =
	// 1024, negative = no bound).
	MaxInflightRequestsPerConnection int `prop:"maxInflightRequestsPerConnection"`
	// ServerEventLoops (a Spool key) is how many event loops serve the
	// connections of the broker's plain TCP ports (the listen port and
	// the VIP channel): each waits for all of its connections at once and
	// serves every ready one per wake-up. 0 = one loop per two CPUs the Go
	// runtime uses (at least one); negative = a reader and a writer
	// goroutine per connection, as TLS connections always have.
	ServerEventLoops int `prop:"serverEventLoops"`
	// MaxQueuedRequestBytes (a Spool key) bounds the body bytes of requests
	// waiting in executor queues; while reached, sockets are not read (the
	// pause counts as queue wait). 0 = no bound.
	MaxQueuedRequestBytes int64 `prop:"maxQueuedRequestBytes"`
	// ColdReadBytesPerSecond (a Spool key) is the byte rate all pulls of
	// data outside the store's in-memory window share; a pull over it is
	// served with what fits or held briefly (no worker waits). 0 = no
	// budget.
	ColdReadBytesPerSecond int64 `prop:"coldReadBytesPerSecond" live:"true"`

	// ServerChannelMaxIdleTimeSeconds closes connections idle this long.
	ServerChannelMaxIdleTimeSeconds int `prop:"serverChannelMaxIdleTimeSeconds"`

	RegisterNameServerPeriod   int64 `prop:"registerNameServerPeriod" live:"true"`
	RegisterBrokerTimeoutMills int64 `prop:"registerBrokerTimeoutMills" live:"true"`
	// CompressedRegister sends the whole-table registrations in the
	// compressed form. RocketMQ's default is false; Spool's is true, so a
	// table of 100,000 topics stays far below the 16 MiB frame limit.
	// Incremental registrations (one topic) are always plain JSON.
	CompressedRegister bool `prop:"compressedRegister" live:"true"`

	LongPollingEnable              bool  `prop:"longPollingEnable" live:"true"`
	ShortPollingTimeMills          int64 `prop:"shortPollingTimeMills" live:"true"`
	NotifyConsumerIdsChangedEnable bool  `prop:"notifyConsumerIdsChangedEnable" live:"true"`
	ChannelExpiredTimeout          int64 `prop:"channelExpiredTimeout"`
	FlushConsumerOffsetInterval    int64 `prop:"flushConsumerOffsetInterval" live:"true"`

	RejectTransactionMessage bool   `prop:"rejectTransactionMessage" live:"true"`
	StoreReplyMessageEnable  bool   `prop:"storeReplyMessageEnable" live:"true"`
	TraceOn                  bool   `prop:"traceOn" live:"true"`
	RegionID                 string `prop:"regionId" live:"true"`
	EnablePropertyFilter     bool   `prop:"enablePropertyFilter"`

	TransactionTimeOut       int64 `prop:"transactionTimeOut" live:"true"`
	TransactionCheckMax      int   `prop:"transactionCheckMax" live:"true"`
	TransactionCheckInterval int64 `prop:"transactionCheckInterval" live:"true"`
	// TransactionCheckReadMsgsPerSecond and TransactionCheckReadBytesPerSecond
	// (Spool keys) budget the half-message reads of the transaction check
	// service, and of the rebuild of its index after a start; <= 0 means no
	// limit.
	TransactionCheckReadMsgsPerSecond  int64 `prop:"transactionCheckReadMsgsPerSecond" live:"true"`
	TransactionCheckReadBytesPerSecond int64 `prop:"transactionCheckReadBytesPerSecond" live:"true"`

	// EnableDetailStat keeps the per-queue traffic stats (QUEUE_PUT_NUMS,
	// QUEUE_GET_NUMS, ...).
	EnableDetailStat bool `prop:"enableDetailStat"`
	// MetricsExporterType is PROM to serve /metrics (and the console) on
	// MetricsPromExporterHost:MetricsPromExporterPort; DISABLE and the
	// exporters Spool does not build serve nothing. MetricsLabel adds
	// labels to every series ("k1:v1,k2:v2").
	MetricsExporterType     string `prop:"metricsExporterType"`
	MetricsPromExporterHost string `prop:"metricsPromExporterHost"`
	MetricsPromExporterPort int    `prop:"metricsPromExporterPort"`
	MetricsLabel            string `prop:"metricsLabel"`
	// MetricsTopicCardinalityLimit and MetricsGroupCardinalityLimit (Spool
	// keys, named after RocketMQ's metricsOtelCardinalityLimit) cap the
	// topics and the consumer groups that get series on /metrics; the
	// others are counted in spool_metrics_series_dropped.
	MetricsTopicCardinalityLimit int `prop:"metricsTopicCardinalityLimit"`
	MetricsGroupCardinalityLimit int `prop:"metricsGroupCardinalityLimit"`

	// TimerWheelEnable (a RocketMQ store key) sends messages with
	// TIMER_DELIVER_MS, TIMER_DELAY_SEC or TIMER_DELAY_MS to the timing
	// wheel; off, they are refused with SYSTEM_ERROR.
	TimerWheelEnable bool `prop:"timerWheelEnable"`
	// RecallMessageEnable answers RECALL_MESSAGE (off: NO_PERMISSION, as
	// RocketMQ's default); AllowRecallWhenBrokerNotWriteable lets a recall
	// through while the broker's permission has no write bit.
	RecallMessageEnable               bool `prop:"recallMessageEnable" live:"true"`
	AllowRecallWhenBrokerNotWriteable bool `prop:"allowRecallWhenBrokerNotWriteable" live:"true"`
	// HA holds the master/slave replication keys (haListenPort,
	// haMasterAddress, slaveReadEnable, inSyncReplicas, slaveTimeout, ...).
	HA HAConfig
	// Timer holds the timing wheel's own keys (timerMaxDelaySec,
	// timerCongestNumEachSlot, mappedFileSizeTimerLog, ...); its
	// storePathRootDir is the store's.
	Timer timer.Config
	// EnableControllerMode hands the broker's role to the controllers of
	// controllerAddr (controller_mode.go).
	EnableControllerMode bool `prop:"enableControllerMode"`
	// Controller holds the controller-mode keys (controllerAddr,
	// controllerHeartBeatTimeoutMills, brokerElectionPriority, ...).
	Controller failover.Config
}

// DefaultConfig returns RocketMQ 5.3.3's BrokerConfig defaults (with
// NAMESRV_ADDR from the environment, as RocketMQ reads it).
func DefaultConfig() Config {
	cpus := runtime.NumCPU()
	send := min(cpus, 4)
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "DEFAULT_BROKER"
	}
	return Config{
		BrokerClusterName: "DefaultCluster",
		BrokerName:        name,
		ListenPort:        10911,
		BindAddress:       "0.0.0.0",
		NamesrvAddr:       os.Getenv("NAMESRV_ADDR"),
		VipChannelEnable:  true,

		BrokerPermission:            metadata.PermRead | metadata.PermWrite,
		AutoCreateTopicEnable:       true,
		DefaultTopicQueueNums:       8,
		ClusterTopicEnable:          true,
		BrokerTopicEnable:           true,
		MsgTraceTopicName:           systopic.TraceDefault,
		AutoCreateSubscriptionGroup: true,

		SendMessageThreadPoolNums:     send,
		PullMessageThreadPoolNums:     16 + cpus*2,
		LitePullMessageThreadPoolNums: 16 + cpus*2,
		QueryMessageThreadPoolNums:    8 + cpus,
		AdminBrokerThreadPoolNums:     16,
		ClientManageThreadPoolNums:    32,
		ConsumerManageThreadPoolNums:  32,
		HeartbeatThreadPoolNums:       min(32, cpus),
		EndTransactionThreadPoolNums:  max(8+cpus*2, send*4),

		SendThreadPoolQueueCapacity:            10000,
		PullThreadPoolQueueCapacity:            100000,
		LitePullThreadPoolQueueCapacity:        100000,
		QueryThreadPoolQueueCapacity:           20000,
		ClientManagerThreadPoolQueueCapacity:   1000000,
		ConsumerManagerThreadPoolQueueCapacity: 1000000,
		HeartbeatThreadPoolQueueCapacity:       50000,
		AdminBrokerThreadPoolQueueCapacity:     10000,
		EndTransactionPoolQueueCapacity:        100000,

		WaitTimeMillsInSendQueue:        200,
		WaitTimeMillsInPullQueue:        5000,
		WaitTimeMillsInLitePullQueue:    5000,
		WaitTimeMillsInHeartbeatQueue:   31000,
		WaitTimeMillsInTransactionQueue: 3000,

		BrokerFastFailureEnable:          true,
		MaxInflightRequestsPerConnection: 4096,
		MaxQueuedRequestBytes:            256 << 20,
		ColdReadBytesPerSecond:           128 << 20,

		ServerChannelMaxIdleTimeSeconds: 120,

		RegisterNameServerPeriod:   30000,
		RegisterBrokerTimeoutMills: 24000,
		CompressedRegister:         true,

		LongPollingEnable:              true,
		ShortPollingTimeMills:          1000,
		NotifyConsumerIdsChangedEnable: true,
		ChannelExpiredTimeout:          120000,
		FlushConsumerOffsetInterval:    5000,

		StoreReplyMessageEnable: true,
		TraceOn:                 true,
		RegionID:                "DefaultRegion",

		TransactionTimeOut:       6000,
		TransactionCheckMax:      15,
		TransactionCheckInterval: 30000,

		TransactionCheckReadMsgsPerSecond:  1000,
		TransactionCheckReadBytesPerSecond: 8 << 20,

		EnableDetailStat:        true,
		MetricsExporterType:     "DISABLE",
		MetricsPromExporterPort: 5557,

		TimerWheelEnable:                  true,
		MetricsTopicCardinalityLimit:      metrics.DefaultMaxTopics,
		MetricsGroupCardinalityLimit:      metrics.DefaultMaxGroups,
		AllowRecallWhenBrokerNotWriteable: true,
		HA:                                DefaultHAConfig(),
		Timer:                             timer.DefaultConfig(),
		Controller:                        failover.DefaultConfig(),
	}
}

func millis(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
