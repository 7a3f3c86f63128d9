package processor

import (
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/internal/clients"
	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
)

// AdminStore is the part of the message store the operations requests
// read.
type AdminStore interface {
	MaxOffsetInQueue(topic string, queueID int32) int64
	MinOffsetInQueue(topic string, queueID int32) int64
	EarliestMessageTime(topic string, queueID int32) int64
	// MessageStoreTimeStamp is the store time of the message at a logical
	// offset, or -1.
	MessageStoreTimeStamp(topic string, queueID int32, offset int64) int64
	OffsetInQueueByTime(topic string, queueID int32, timestamp int64) int64
	LookMessageByOffset(commitLogOffset int64) ([]byte, error)
	GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums int32, maxBytes int32, filter store.MessageFilter) *store.GetResult
	QueueIDs(topic string) []int32
}

// AdminConfig is the part of the live configuration the operations
// requests read.
type AdminConfig struct {
	BrokerName        string
	BrokerClusterName string
	// BrokerAddr is the broker's address as it registers it (ip:port).
	BrokerAddr string
}

// AdminDeps is what the operations requests (the ones mqadmin, the
// dashboard and the exporter send) are built from.
type AdminDeps struct {
	Store     AdminStore
	Topics    *metadata.TopicConfigManager
	Groups    *metadata.SubscriptionGroupManager
	Offsets   *metadata.ConsumerOffsetManager
	Consumers *clients.ConsumerManager
	Producers *clients.ProducerManager
	Config    func() AdminConfig
	Clock     clock.Clock
	Logger    *slog.Logger
	// HoldRoute makes the answer to req wait until the change of topic is
	// registered with the name servers.
	HoldRoute func(req *remoting.Command, topic string)
	// The topic and group rules (see Deps).
	ValidateTopic func(name string) string
	ValidateGroup func(name string) string
	IsSystemTopic func(topic string) bool
	// SystemTopics lists the topics the broker creates for itself.
	SystemTopics func() []string
	// DelayOffsets is the schedule service's table: delay level -> the
	// next offset of that level's queue.
	DelayOffsets func() map[int32]int64
	// PutTps and GetTps are a topic's put rate and a group's get rate of
	// a topic, messages per second; nil reads 0.
	PutTps func(topic string) float64
	GetTps func(group, topic string) float64
	// RelayTimeout bounds a request relayed to a client
	// (GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY,
	// GET_CONSUMER_STATUS_FROM_CLIENT); 0 is RocketMQ's 10 s.
	RelayTimeout time.Duration
	// Epochs is controller mode's epoch table (the store's epoch file,
	// epochFileCheckpoint); nil, or returning nil, outside controller
	// mode, where GET_BROKER_EPOCH_CACHE is refused as RocketMQ does.
	Epochs func() EpochTable
	// BrokerID is the broker id the broker registers with (controller
	// mode: 0 as master, its controller-assigned id as slave).
	BrokerID func() int64
	// MaxPhyOffset is the end of the CommitLog.
	MaxPhyOffset func() int64
}

// Admin holds the handlers of the operations requests; each Handle method
// answers one request code (the wiring registers them).
type Admin struct {
	d AdminDeps
}

// NewAdmin builds the operations handlers from d.
func NewAdmin(d AdminDeps) *Admin {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	d.Clock = clock.Or(d.Clock)
	if d.RelayTimeout <= 0 {
		d.RelayTimeout = defaultRelayTimeout
	}
	return &Admin{d: d}
}

func (a *Admin) nowMillis() int64 { return a.d.Clock.Now().UnixMilli() }

func (a *Admin) mq(topic string, queueID int) adminbody.MessageQueue {
	return adminbody.MessageQueue{Topic: topic, BrokerName: a.d.Config().BrokerName, QueueID: queueID}
}

// encoded answers req with v in fastjson's form.
func encoded(req *remoting.Command, v any) *remoting.Command {
	body, err := adminbody.Marshal(v)
	if err != nil {
		return response(req, remoting.SystemError, err.Error())
	}
	resp := response(req, remoting.Success, "")
	resp.Body = body
	return resp
}

// topicsOfGroup lists the topics the group committed offsets of, sorted
// (RocketMQ's whichTopicByConsumer).
func (a *Admin) topicsOfGroup(group string) []string {
	table, _ := a.d.Offsets.Snapshot()
	var out []string
	for key := range table {
		if i := strings.LastIndexByte(key, '@'); i >= 0 && key[i+1:] == group {
			out = append(out, key[:i])
		}
	}
	sort.Strings(out)
	return out
}

// groupsOfTopic lists the groups that committed offsets of topic, sorted
// (RocketMQ's whichGroupByTopic).
func (a *Admin) groupsOfTopic(topic string) []string {
	table, _ := a.d.Offsets.Snapshot()
	var out []string
	for key := range table {
		if i := strings.LastIndexByte(key, '@'); i >= 0 && key[:i] == topic {
			out = append(out, key[i+1:])
		}
	}
	sort.Strings(out)
	return out
}

func (a *Admin) putTps(topic string) float64 {
	if a.d.PutTps == nil {
		return 0
	}
	return a.d.PutTps(topic)
}

func (a *Admin) getTps(group, topic string) float64 {
	if a.d.GetTps == nil {
		return 0
	}
	return a.d.GetTps(group, topic)
}

func sortStrings(s []string) { sort.Strings(s) }
