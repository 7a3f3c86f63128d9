// Package processor answers the broker's table and client requests: the
// admin requests on topics and subscription groups, consumer offsets and
// queue offsets, heartbeats and client registration, orderly queue locks,
// message queries by key and by offset, and EVICT_PAGE_CACHE. Each handler
// reads its request, consults the parts it is given and writes its one
// answer as a value; none holds a request, waits on a flush or reads old
// messages outside a query.
//
// It owns the reading of request headers (Header, used by every processor
// of the broker) and the bodies of the requests it answers (HEART_BEAT,
// CHECK_CLIENT_CONFIG, LOCK_BATCH_MQ / UNLOCK_BATCH_MQ, subscription group
// configs, the EVICT_PAGE_CACHE answer). It is built from a Deps struct of
// parts (the metadata tables, the client registries, a narrow view of the
// store, the live settings it reads, the clock and the topic rules); it
// must not import the wiring (internal/broker), the transaction, schedule
// or timer services, nor write a metadata file on a request path (the
// metadata managers' background writer does).
//
// Admin, built from AdminDeps, answers the operations requests RocketMQ's
// tools send (topic and consume stats, client connections, consume time
// spans and consume-queue entries, topic and group lists, the offset
// tables, offset resets, and the requests relayed to a consumer client),
// with the bodies of internal/adminbody.
package processor

import (
	"errors"
	"log/slog"

	"github.com/spoolmq/spool/internal/clients"
	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
)

var (
	// ErrBadHeader marks a request whose ext fields are missing or malformed.
	ErrBadHeader = errors.New("bad request header")
	// ErrBadBody marks a request whose body does not decode.
	ErrBadBody = errors.New("bad request body")
)

// Store is the part of the message store these handlers read.
type Store interface {
	MaxOffsetInQueue(topic string, queueID int32) int64
	MinOffsetInQueue(topic string, queueID int32) int64
	OffsetInQueueByTime(topic string, queueID int32, timestamp int64) int64
	EarliestMessageTime(topic string, queueID int32) int64
	CheckInMemByConsumeOffset(topic string, queueID int32, consumeOffset int64) bool
	QueryMessage(topic, key string, maxNum int, begin, end int64) (*store.QueryResult, error)
	LookMessageByOffset(commitLogOffset int64) ([]byte, error)
	DeleteTopics(topics []string)
	EvictPageCache(topic string) (store.EvictReport, error)
}

// Config is the part of the live configuration these handlers read; Deps
// returns it afresh for every request, so live updates apply at once.
type Config struct {
	BrokerName                     string
	BrokerClusterName              string
	AutoCreateSubscriptionGroup    bool
	NotifyConsumerIdsChangedEnable bool
	EnablePropertyFilter           bool
	// DefaultQueryMaxNum is the store's defaultQueryMaxNum.
	DefaultQueryMaxNum int
}

// Deps is what the handlers are built from.
type Deps struct {
	Store     Store
	Topics    *metadata.TopicConfigManager
	Groups    *metadata.SubscriptionGroupManager
	Offsets   *metadata.ConsumerOffsetManager
	Consumers *clients.ConsumerManager
	Producers *clients.ProducerManager
	Locks     *clients.RebalanceLockManager
	Config    func() Config
	Clock     clock.Clock
	Logger    *slog.Logger
	// HoldRoute makes the answer to req wait until the change of topic is
	// registered with the name servers (the wiring sends it then).
	HoldRoute func(req *remoting.Command, topic string)
	// The topic and group rules: a remark when name is not valid ("" if
	// it is), whether a topic is a system topic, the retry topic of a
	// group.
	ValidateTopic func(name string) string
	ValidateGroup func(name string) string
	IsSystemTopic func(topic string) bool
	RetryTopic    func(group string) string
}

// Processor holds the handlers; each Handle method answers one request
// code (the wiring registers them).
type Processor struct {
	store     Store
	topics    *metadata.TopicConfigManager
	groups    *metadata.SubscriptionGroupManager
	offsets   *metadata.ConsumerOffsetManager
	consumers *clients.ConsumerManager
	producers *clients.ProducerManager
	locks     *clients.RebalanceLockManager
	cfg       func() Config
	clock     clock.Clock
	logger    *slog.Logger
	holdRoute func(req *remoting.Command, topic string)

	validateTopic func(string) string
	validateGroup func(string) string
	isSystemTopic func(string) bool
	retryTopic    func(string) string
}

// New builds the handlers from d.
func New(d Deps) *Processor {
	logger := d.Logger
	if logger == nil {
		logger = slog.Default()
	}
	return &Processor{
		store: d.Store, topics: d.Topics, groups: d.Groups, offsets: d.Offsets,
		consumers: d.Consumers, producers: d.Producers, locks: d.Locks,
		cfg: d.Config, clock: clock.Or(d.Clock), logger: logger, holdRoute: d.HoldRoute,
		validateTopic: d.ValidateTopic, validateGroup: d.ValidateGroup,
		isSystemTopic: d.IsSystemTopic, retryTopic: d.RetryTopic,
	}
}

func (p *Processor) config() Config { return p.cfg() }

// response builds an answer to req.
func response(req *remoting.Command, code int32, remark string) *remoting.Command {
	return remoting.NewResponse(req, code, remark)
}

// BadHeader answers a request whose ext fields do not parse.
func BadHeader(req *remoting.Command, err error) *remoting.Command {
	return response(req, remoting.InvalidParameter, err.Error())
}

func badHeader(req *remoting.Command, err error) *remoting.Command { return BadHeader(req, err) }
