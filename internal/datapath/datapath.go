// Package datapath answers the broker's message requests: sends (single,
// batch), retries and dead letters (CONSUMER_SEND_MSG_BACK), request/reply
// (SEND_REPLY_MESSAGE), END_TRANSACTION and pulls, with the flow control
// they share (send admission, fast failure, the cold-read budget). These
// are the handlers whose answer is not known when they return: a message
// that reaches the store is answered from the store's completion, a pull
// that finds nothing is held by long polling (or, over the cold-read
// budget, by a timer) and re-run through the pull executor it came from.
// Each handler returns a transport.Reply; a deferred one is completed in
// exactly one place, replyLater (or the pull re-run, which answers found
// records as the store's buffers).
//
// It owns the put path (the half-message index update, the timing-wheel
// hand-off and its refusal, the delay-level rewrite into
// SCHEDULE_TOPIC_XXXX), the send header and the properties the broker
// stamps into stored messages. It is built from a Deps struct of parts
// (the store, the metadata tables, the client registries, the pending-half
// index, long polling, the live settings it reads, the clock, the stats
// counters); it must not import the wiring (internal/broker), write a
// metadata file, block a worker on a flush or a held pull, nor answer a
// request it created a topic for before the wiring says the topic is
// registered (RouteWait).
package datapath

import (
	"log/slog"
	"time"

	"github.com/spoolmq/spool/internal/clients"
	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/longpoll"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/processor"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/timer"
	"github.com/spoolmq/spool/internal/transaction"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// Config is the part of the live configuration (broker and store keys)
// the data path reads. The wiring replaces it as a whole on a live update
// and Deps.Config returns the current one; never modify it.
type Config struct {
	BrokerName                  string
	BrokerClusterName           string
	BrokerPermission            int
	AutoCreateTopicEnable       bool
	AutoCreateSubscriptionGroup bool
	RejectTransactionMessage    bool
	RegionID                    string
	TraceOn                     bool
	StoreReplyMessageEnable     bool
	TransactionTimeOut          int64
	EnablePropertyFilter        bool
	LongPollingEnable           bool
	ShortPollingTimeMills       int64
	ColdReadBytesPerSecond      int64
	BrokerFastFailureEnable     bool
	// BrokerRole (ASYNC_MASTER, SYNC_MASTER, SLAVE) and slaveReadEnable:
	// a slave refuses sends, and pulls unless SlaveReadEnable.
	BrokerRole      string
	SlaveReadEnable bool
	// BrokerID is brokerId (0 on a master).
	BrokerID int64

	// The store's keys.
	MaxMessageSize                  int
	OSPageCacheBusyTimeOutMills     int64
	TransientStorePoolSize          int
	MaxTransferBytesOnMessageInDisk int
}

// Transactions is what the data path uses of the transaction check
// service: the half put and END_TRANSACTION keep its index current and
// write their op records through it.
type Transactions interface {
	// Index is the pending-half index.
	Index() *transaction.Index
	// TakeChecked returns the half record a check has just read, if any.
	TakeChecked(commitLogOffset int64) ([]byte, bool)
	// PutOp records a half as resolved, then calls done with the code.
	PutOp(halfOffset int64, done func(code int32, remark string))
}

// Deps is what the data path is built from.
type Deps struct {
	Store     store.MessageStore
	Topics    *metadata.TopicConfigManager
	Groups    *metadata.SubscriptionGroupManager
	Offsets   *metadata.ConsumerOffsetManager
	Consumers *clients.ConsumerManager
	Producers *clients.ProducerManager
	Locks     *clients.RebalanceLockManager
	Tx        Transactions
	LongPoll  *longpoll.Service
	// Timers is the timing wheel, nil while it is off (it is started
	// after the handlers are built).
	Timers func() *timer.Service
	// DelayLevels is messageDelayLevel, parsed (internal/delaylevel).
	DelayLevels []time.Duration
	Config      func() *Config
	Clock       clock.Clock
	Logger      *slog.Logger
	// Addr and StoreHost are the broker's advertised address, known once
	// it listens; Stopping reports a shutdown under way.
	Addr      func() string
	StoreHost func() message.Addr
	Stopping  func() bool
	// HoldRoute makes the answer to req wait until the change of topic is
	// registered with the name servers; RouteWait returns what a deferred
	// answer waits for (nil: nothing).
	HoldRoute func(req *remoting.Command, topic string)
	RouteWait func(req *remoting.Command) <-chan struct{}
	// CountPut and CountGet count stored and pulled messages for the
	// runtime figures.
	CountPut func(topic string, r store.PutResult)
	CountGet func(topic string, msgs, bytes int)
	// ColdTake and ColdCharge are the cold-read budget: the bytes a cold
	// pull may read now at rate (or how long until it may), and the
	// charge of bytes read.
	ColdTake   func(rate int64) (allow int64, wait time.Duration)
	ColdCharge func(n int64)
	// WaitReplicated is a SYNC_MASTER's replication wait (nil on other
	// roles): done is called once the records ending at end are held by
	// enough copies (PutOK), or with FlushSlaveTimeout or
	// SlaveNotAvailable. It must not block.
	WaitReplicated func(end int64, done func(store.PutStatus))
	// MasterUp reports, on a slave, whether its master is registered and
	// its HA stream connected (nil: never); pull answers suggest the
	// master only then.
	MasterUp func() bool
	// AdmitPut (controller mode; nil otherwise) is asked before a send is
	// stored: PutOK, or the status and remark it is refused with at once
	// (a fenced master: ServiceNotAvailable; a sync-state set below
	// minInSyncReplicas: InSyncReplicasNotEnough). It must not block.
	AdmitPut func() (store.PutStatus, string)
	// Stats counts traffic per topic and group (nil counts nothing).
	Stats Stats
}

// Path holds the data-path handlers; each Handle method answers one or
// more request codes (the wiring registers them).
type Path struct {
	store       store.MessageStore
	topics      *metadata.TopicConfigManager
	groups      *metadata.SubscriptionGroupManager
	offsets     *metadata.ConsumerOffsetManager
	consumers   *clients.ConsumerManager
	producers   *clients.ProducerManager
	locks       *clients.RebalanceLockManager
	tx          Transactions
	longPoll    *longpoll.Service
	timers      func() *timer.Service
	delayLevels []time.Duration
	config      func() *Config
	clock       clock.Clock
	logger      *slog.Logger
	addr        func() string
	storeHost   func() message.Addr
	stopping    func() bool
	holdRoute   func(req *remoting.Command, topic string)
	routeWait   func(req *remoting.Command) <-chan struct{}
	countPut    func(topic string, r store.PutResult)
	countGet    func(topic string, msgs, bytes int)
	stats       Stats
	flow        *Flow
	// waitReplicated is Deps.WaitReplicated.
	waitReplicated func(end int64, done func(store.PutStatus))
	masterUp       func() bool
	admitPut       func() (store.PutStatus, string)

	// Set once by UseExecutors, before the first request.
	sendEx, pullEx, litePullEx *transport.Executor
}

// New builds the data path from d.
func New(d Deps) *Path {
	logger := d.Logger
	if logger == nil {
		logger = slog.Default()
	}
	p := &Path{
		store: d.Store, topics: d.Topics, groups: d.Groups, offsets: d.Offsets,
		consumers: d.Consumers, producers: d.Producers, locks: d.Locks,
		tx: d.Tx, longPoll: d.LongPoll, timers: d.Timers, delayLevels: d.DelayLevels,
		config: d.Config, clock: clock.Or(d.Clock), logger: logger,
		addr: d.Addr, storeHost: d.StoreHost, stopping: d.Stopping,
		holdRoute: d.HoldRoute, routeWait: d.RouteWait,
		countPut: d.CountPut, countGet: d.CountGet, stats: statsOr(d.Stats),
		waitReplicated: d.WaitReplicated, masterUp: d.MasterUp, admitPut: d.AdmitPut,
	}
	p.flow = newFlow(p, d.ColdTake, d.ColdCharge)
	return p
}

// UseExecutors gives the data path the executors its codes are registered
// on: the send queue fast failure drains, and the pull executors held
// pulls re-run through. Call it once, before the first request.
func (d *Path) UseExecutors(send, pull, litePull *transport.Executor) {
	d.sendEx, d.pullEx, d.litePullEx = send, pull, litePull
}

// Flow is the data path's flow control (its counters and the send
// executor's admission check).
func (d *Path) Flow() *Flow { return d.flow }

// replyLater completes a deferred request with resp, once the topic it
// created is registered when it waits for that.
func (d *Path) replyLater(r *transport.Responder, resp *remoting.Command) {
	d.replyLaterOf(r, resp, nil)
}

// replyLaterOf is replyLater with the owner of the memory the answer and
// the responder live in (nil: none), released once the answer is written
// or dropped.
func (d *Path) replyLaterOf(r *transport.Responder, resp *remoting.Command, owner transport.Releaser) {
	if wait := d.routeWait(r.Request()); wait != nil {
		go func() {
			<-wait
			r.ReplyPiecesOf(resp, nil, owner)
		}()
		return
	}
	r.ReplyPiecesOf(resp, nil, owner)
}

// nowMillis is the injected clock in milliseconds.
func (d *Path) nowMillis() int64 { return d.clock.Now().UnixMilli() }

// badHeader answers a request whose ext fields do not parse.
func badHeader(req *remoting.Command, err error) *remoting.Command {
	return processor.BadHeader(req, err)
}

func millis(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
