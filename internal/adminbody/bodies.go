package adminbody

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/spoolmq/spool/internal/metadata"
)

// Every struct below declares its fields in the order of their JSON names,
// so that the standard encoder writes them in fastjson's order. A string
// field that Java leaves null unless set carries omitempty (fastjson leaves
// null fields out); a collection that Java starts empty is a Map or a List,
// written {} or [] when nil.

// The names of RocketMQ's ConsumeType, MessageModel and ConsumeFromWhere
// enums, as fastjson writes them.
const (
	ConsumeActively  = "CONSUME_ACTIVELY"
	ConsumePassively = "CONSUME_PASSIVELY"
	ConsumePop       = "CONSUME_POP"

	Broadcasting = "BROADCASTING"
	Clustering   = "CLUSTERING"

	ConsumeFromLastOffset  = "CONSUME_FROM_LAST_OFFSET"
	ConsumeFromFirstOffset = "CONSUME_FROM_FIRST_OFFSET"
	ConsumeFromTimestamp   = "CONSUME_FROM_TIMESTAMP"
)

// Connection is one client connection (body.Connection): the client id,
// its remote address, its LanguageCode name and its version number.
type Connection struct {
	ClientAddr string `json:"clientAddr"`
	ClientID   string `json:"clientId"`
	Language   string `json:"language"`
	Version    int    `json:"version"`
}

// SubscriptionData is a consumer's subscription to one topic
// (heartbeat.SubscriptionData); filterClassSource is never written.
type SubscriptionData struct {
	ClassFilterMode bool         `json:"classFilterMode"`
	CodeSet         List[int32]  `json:"codeSet"`
	ExpressionType  string       `json:"expressionType,omitempty"`
	SubString       string       `json:"subString,omitempty"`
	SubVersion      int64        `json:"subVersion"`
	TagsSet         List[string] `json:"tagsSet"`
	Topic           string       `json:"topic,omitempty"`
}

// ConsumerConnection answers GET_CONSUMER_CONNECTION_LIST (203).
type ConsumerConnection struct {
	ConnectionSet     List[Connection]              `json:"connectionSet"`
	ConsumeFromWhere  string                        `json:"consumeFromWhere,omitempty"`
	ConsumeType       string                        `json:"consumeType,omitempty"`
	MessageModel      string                        `json:"messageModel,omitempty"`
	SubscriptionTable Map[string, SubscriptionData] `json:"subscriptionTable"`
}

// ProducerConnection answers GET_PRODUCER_CONNECTION_LIST (204).
type ProducerConnection struct {
	ConnectionSet List[Connection] `json:"connectionSet"`
}

// OffsetWrapper is one queue's line of ConsumeStats (admin.OffsetWrapper):
// the broker's max offset, the group's committed offset, the offset of
// its last pull and the store time of the message before the committed
// offset.
type OffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
	PullOffset     int64 `json:"pullOffset"`
}

// ConsumeStats answers GET_CONSUME_STATS (208): per queue, the broker's and
// the group's offsets; and the group's consume TPS.
type ConsumeStats struct {
	ConsumeTps  Double                           `json:"consumeTps"`
	OffsetTable Map[MessageQueue, OffsetWrapper] `json:"offsetTable"`
}

// TotalDiff is the sum over queues of brokerOffset - consumerOffset, as
// ConsumeStats.computeTotalDiff.
func (c *ConsumeStats) TotalDiff() int64 {
	var n int64
	for _, w := range c.OffsetTable {
		n += w.BrokerOffset - w.ConsumerOffset
	}
	return n
}

// InflightTotalDiff is the sum over queues of pullOffset - consumerOffset,
// as ConsumeStats.computeInflightTotalDiff.
func (c *ConsumeStats) InflightTotalDiff() int64 {
	var n int64
	for _, w := range c.OffsetTable {
		n += w.PullOffset - w.ConsumerOffset
	}
	return n
}

// TopicOffset is one queue's line of TopicStatsTable (admin.TopicOffset).
type TopicOffset struct {
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
	MaxOffset           int64 `json:"maxOffset"`
	MinOffset           int64 `json:"minOffset"`
}

// TopicStatsTable answers GET_TOPIC_STATS_INFO (202).
type TopicStatsTable struct {
	OffsetTable Map[MessageQueue, TopicOffset] `json:"offsetTable"`
	TopicPutTps Double                         `json:"topicPutTps"`
}

// ProcessQueueInfo is a push consumer's view of one queue in
// ConsumerRunningInfo.mqTable (the client writes it; "droped" is
// RocketMQ's spelling).
type ProcessQueueInfo struct {
	CachedMsgCount          int   `json:"cachedMsgCount"`
	CachedMsgMaxOffset      int64 `json:"cachedMsgMaxOffset"`
	CachedMsgMinOffset      int64 `json:"cachedMsgMinOffset"`
	CachedMsgSizeInMiB      int   `json:"cachedMsgSizeInMiB"`
	CommitOffset            int64 `json:"commitOffset"`
	Droped                  bool  `json:"droped"`
	LastConsumeTimestamp    int64 `json:"lastConsumeTimestamp"`
	LastLockTimestamp       int64 `json:"lastLockTimestamp"`
	LastPullTimestamp       int64 `json:"lastPullTimestamp"`
	Locked                  bool  `json:"locked"`
	TransactionMsgCount     int   `json:"transactionMsgCount"`
	TransactionMsgMaxOffset int64 `json:"transactionMsgMaxOffset"`
	TransactionMsgMinOffset int64 `json:"transactionMsgMinOffset"`
	TryUnlockTimes          int64 `json:"tryUnlockTimes"`
}

// PopProcessQueueInfo is a pop consumer's view of one queue in
// ConsumerRunningInfo.mqPopTable.
type PopProcessQueueInfo struct {
	Droped           bool  `json:"droped"`
	LastPopTimestamp int64 `json:"lastPopTimestamp"`
	WaitAckCount     int   `json:"waitAckCount"`
}

// ConsumeStatus is a consumer's figures for one topic in
// ConsumerRunningInfo.statusTable.
type ConsumeStatus struct {
	ConsumeFailedMsgs int64  `json:"consumeFailedMsgs"`
	ConsumeFailedTPS  Double `json:"consumeFailedTPS"`
	ConsumeOKTPS      Double `json:"consumeOKTPS"`
	ConsumeRT         Double `json:"consumeRT"`
	PullRT            Double `json:"pullRT"`
	PullTPS           Double `json:"pullTPS"`
}

// ConsumerRunningInfo is the client's answer to GET_CONSUMER_RUNNING_INFO
// (307), which the broker relays.
type ConsumerRunningInfo struct {
	Jstack           string                                 `json:"jstack,omitempty"`
	MqPopTable       Map[MessageQueue, PopProcessQueueInfo] `json:"mqPopTable"`
	MqTable          Map[MessageQueue, ProcessQueueInfo]    `json:"mqTable"`
	Properties       Map[string, string]                    `json:"properties"`
	StatusTable      Map[string, ConsumeStatus]             `json:"statusTable"`
	SubscriptionSet  List[SubscriptionData]                 `json:"subscriptionSet"`
	UserConsumerInfo Map[string, string]                    `json:"userConsumerInfo"`
}

// The ConsumerRunningInfo property keys RocketMQ's tools read.
const (
	PropNameserverAddr         = "PROP_NAMESERVER_ADDR"
	PropThreadpoolCoreSize     = "PROP_THREADPOOL_CORE_SIZE"
	PropConsumeOrderly         = "PROP_CONSUMEORDERLY"
	PropConsumeType            = "PROP_CONSUME_TYPE"
	PropClientVersion          = "PROP_CLIENT_VERSION"
	PropConsumerStartTimestamp = "PROP_CONSUMER_START_TIMESTAMP"
)

// BrokerStatsItem is one window of BrokerStatsData: the sum over the
// window, the rate per second and the average of the values per
// increment.
type BrokerStatsItem struct {
	Avgpt Double `json:"avgpt"`
	Sum   int64  `json:"sum"`
	Tps   Double `json:"tps"`
}

// BrokerStatsData answers VIEW_BROKER_STATS_DATA (315).
type BrokerStatsData struct {
	StatsDay    BrokerStatsItem `json:"statsDay"`
	StatsHour   BrokerStatsItem `json:"statsHour"`
	StatsMinute BrokerStatsItem `json:"statsMinute"`
}

// GroupList answers QUERY_TOPIC_CONSUME_BY_WHO (300).
type GroupList struct {
	GroupList List[string] `json:"groupList"`
}

// TopicList answers GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305) and the name
// server's topic lists; brokerAddr is set only by some of them.
type TopicList struct {
	BrokerAddr string       `json:"brokerAddr,omitempty"`
	TopicList  List[string] `json:"topicList"`
}

// QueueTimeSpan is one queue's line of QueryConsumeTimeSpanBody: the store
// times of its first and last messages and of the message at the group's
// committed offset, and how far consumption is behind (ms). Its Java class
// also writes the three times formatted in the broker's time zone; Marshal
// writes them (in time.Local), Unmarshal ignores them.
type QueueTimeSpan struct {
	ConsumeTimeStamp int64        `json:"consumeTimeStamp"`
	DelayTime        int64        `json:"delayTime"`
	MaxTimeStamp     int64        `json:"maxTimeStamp"`
	MessageQueue     MessageQueue `json:"messageQueue"`
	MinTimeStamp     int64        `json:"minTimeStamp"`
}

// javaStamp formats ms as RocketMQ's UtilAll.YYYY_MM_DD_HH_MM_SS_SSS
// ("yyyy-MM-dd#HH:mm:ss:SSS") in time.Local.
func javaStamp(ms int64) string {
	t := time.UnixMilli(ms).In(time.Local)
	return t.Format("2006-01-02#15:04:05") + fmt.Sprintf(":%03d", t.Nanosecond()/int(time.Millisecond))
}

// MarshalJSON writes the span with its formatted times, in name order.
func (s QueueTimeSpan) MarshalJSON() ([]byte, error) {
	f := javaStamp
	return marshalStd(struct {
		ConsumeTimeStamp    int64        `json:"consumeTimeStamp"`
		ConsumeTimeStampStr string       `json:"consumeTimeStampStr"`
		DelayTime           int64        `json:"delayTime"`
		MaxTimeStamp        int64        `json:"maxTimeStamp"`
		MaxTimeStampStr     string       `json:"maxTimeStampStr"`
		MessageQueue        MessageQueue `json:"messageQueue"`
		MinTimeStamp        int64        `json:"minTimeStamp"`
		MinTimeStampStr     string       `json:"minTimeStampStr"`
	}{s.ConsumeTimeStamp, f(s.ConsumeTimeStamp), s.DelayTime, s.MaxTimeStamp, f(s.MaxTimeStamp),
		s.MessageQueue, s.MinTimeStamp, f(s.MinTimeStamp)})
}

// QueryConsumeTimeSpanBody answers QUERY_CONSUME_TIME_SPAN (303).
type QueryConsumeTimeSpanBody struct {
	ConsumeTimeSpanSet List[QueueTimeSpan] `json:"consumeTimeSpanSet"`
}

// ConsumeQueueData is one consume-queue entry of
// QueryConsumeQueueResponseBody.
type ConsumeQueueData struct {
	BitMap         string `json:"bitMap,omitempty"`
	Eval           bool   `json:"eval"`
	ExtendDataJSON string `json:"extendDataJson,omitempty"`
	Msg            string `json:"msg,omitempty"`
	PhysicOffset   int64  `json:"physicOffset"`
	PhysicSize     int    `json:"physicSize"`
	TagsCode       int64  `json:"tagsCode"`
}

// QueryConsumeQueueResponseBody answers QUERY_CONSUME_QUEUE (321).
type QueryConsumeQueueResponseBody struct {
	FilterData       string                 `json:"filterData,omitempty"`
	MaxQueueIndex    int64                  `json:"maxQueueIndex"`
	MinQueueIndex    int64                  `json:"minQueueIndex"`
	QueueData        List[ConsumeQueueData] `json:"queueData"`
	SubscriptionData *SubscriptionData      `json:"subscriptionData,omitempty"`
}

// ConsumeStatsList answers GET_BROKER_CONSUME_STATS (317): one map per
// group, group name -> that group's ConsumeStats per subscribed topic.
type ConsumeStatsList struct {
	BrokerAddr        string                              `json:"brokerAddr,omitempty"`
	ConsumeStatsList  List[map[string]List[ConsumeStats]] `json:"consumeStatsList"`
	TotalDiff         int64                               `json:"totalDiff"`
	TotalInflightDiff int64                               `json:"totalInflightDiff"`
}

// ProducerInfo is one producer of ProducerTableInfo.
type ProducerInfo struct {
	ClientID            string `json:"clientId"`
	Language            string `json:"language"`
	LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
	RemoteIP            string `json:"remoteIP"`
	Version             int    `json:"version"`
}

// ProducerTableInfo answers GET_ALL_PRODUCER_INFO (328): producer group ->
// its producers.
type ProducerTableInfo struct {
	Data Map[string, List[ProducerInfo]] `json:"data"`
}

// ResetOffsetBody is the body of INVOKE_BROKER_TO_RESET_OFFSET's answer and
// of RESET_CONSUMER_CLIENT_OFFSET (220): queue -> the offset to consume
// from.
type ResetOffsetBody struct {
	OffsetTable Map[MessageQueue, int64] `json:"offsetTable"`
}

// GetConsumerStatusBody answers INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223)
// and GET_CONSUMER_STATUS_FROM_CLIENT (221): one client's offsets
// (messageQueueTable), or every client's (consumerTable, client id ->
// queue -> offset).
type GetConsumerStatusBody struct {
	ConsumerTable     Map[string, Map[MessageQueue, int64]] `json:"consumerTable"`
	MessageQueueTable Map[MessageQueue, int64]              `json:"messageQueueTable"`
}

// KVTable is a string table (GET_BROKER_RUNTIME_INFO, GET_KVLIST_BY_NAMESPACE).
type KVTable struct {
	Table Map[string, string] `json:"table"`
}

// ConsumeByWho tells which groups have consumed past an offset of a queue.
type ConsumeByWho struct {
	ConsumedGroup    List[string] `json:"consumedGroup"`
	NotConsumedGroup List[string] `json:"notConsumedGroup"`
	Offset           int64        `json:"offset"`
	QueueID          int          `json:"queueId"`
	Topic            string       `json:"topic,omitempty"`
}

// CMResult is a CONSUME_MESSAGE_DIRECTLY result, by its Java enum name.
type CMResult string

// RocketMQ's CMResult names, in ordinal order.
const (
	CRSuccess        CMResult = "CR_SUCCESS"
	CRLater          CMResult = "CR_LATER"
	CRRollback       CMResult = "CR_ROLLBACK"
	CRCommit         CMResult = "CR_COMMIT"
	CRThrowException CMResult = "CR_THROW_EXCEPTION"
	CRReturnNull     CMResult = "CR_RETURN_NULL"
)

var cmResults = [...]CMResult{CRSuccess, CRLater, CRRollback, CRCommit, CRThrowException, CRReturnNull}

// UnmarshalJSON reads the enum's name, or its ordinal (the Go client
// writes the ordinal).
func (r *CMResult) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*r = CMResult(s)
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 0 || n >= len(cmResults) {
		return fmt.Errorf("%w: consume result %s", ErrSyntax, b)
	}
	*r = cmResults[n]
	return nil
}

// ConsumeMessageDirectlyResult is the client's answer to
// CONSUME_MESSAGE_DIRECTLY (309), which the broker relays.
type ConsumeMessageDirectlyResult struct {
	AutoCommit     bool     `json:"autoCommit"`
	ConsumeResult  CMResult `json:"consumeResult,omitempty"`
	Order          bool     `json:"order"`
	Remark         string   `json:"remark,omitempty"`
	SpentTimeMills int64    `json:"spentTimeMills"`
}

// TopicConfigSerializeWrapper answers GET_ALL_TOPIC_CONFIG (21) for
// RocketMQ 4 tools.
type TopicConfigSerializeWrapper struct {
	DataVersion      metadata.DataVersion               `json:"dataVersion"`
	TopicConfigTable Map[string, *metadata.TopicConfig] `json:"topicConfigTable"`
}

// TopicConfigAndMappingSerializeWrapper is RocketMQ 5's answer to
// GET_ALL_TOPIC_CONFIG: the topic table and the (for Spool always empty)
// static-topic queue mappings.
type TopicConfigAndMappingSerializeWrapper struct {
	DataVersion                metadata.DataVersion               `json:"dataVersion"`
	MappingDataVersion         metadata.DataVersion               `json:"mappingDataVersion"`
	TopicConfigTable           Map[string, *metadata.TopicConfig] `json:"topicConfigTable"`
	TopicQueueMappingDetailMap Map[string, json.RawMessage]       `json:"topicQueueMappingDetailMap"`
	TopicQueueMappingInfoMap   Map[string, json.RawMessage]       `json:"topicQueueMappingInfoMap"`
}

// SubscriptionGroupWrapper answers GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201).
type SubscriptionGroupWrapper struct {
	DataVersion            metadata.DataVersion                           `json:"dataVersion"`
	ForbiddenTable         Map[string, map[string]int]                    `json:"forbiddenTable"`
	SubscriptionGroupTable Map[string, *metadata.SubscriptionGroupConfig] `json:"subscriptionGroupTable"`
}

// ConsumerOffsetSerializeWrapper answers GET_ALL_CONSUMER_OFFSET (43):
// "topic@group" -> queue id -> committed offset, the queue ids written as
// bare numbers as fastjson writes Integer keys.
type ConsumerOffsetSerializeWrapper struct {
	DataVersion metadata.DataVersion          `json:"dataVersion"`
	OffsetTable Map[string, map[IntKey]int64] `json:"offsetTable"`
}

// DelayOffsetSerializeWrapper answers GET_ALL_DELAY_OFFSET (45): delay
// level -> the next offset of that level's queue of SCHEDULE_TOPIC_XXXX.
type DelayOffsetSerializeWrapper struct {
	DataVersion metadata.DataVersion `json:"dataVersion"`
	OffsetTable Map[IntKey, int64]   `json:"offsetTable"`
}

// CreateTopicListRequestBody is the body of UPDATE_AND_CREATE_TOPIC_LIST
// (18): the topics to create or update.
type CreateTopicListRequestBody struct {
	TopicConfigList List[*metadata.TopicConfig] `json:"topicConfigList"`
}

// SubscriptionGroupList is the body of
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (225): the groups to create or
// update.
type SubscriptionGroupList struct {
	GroupConfigList List[*metadata.SubscriptionGroupConfig] `json:"groupConfigList"`
}

// QueryCorrectionOffsetBody answers QUERY_CORRECTION_OFFSET: queue id ->
// the smallest offset the compared groups committed.
type QueryCorrectionOffsetBody struct {
	CorrectionOffsets Map[IntKey, int64] `json:"correctionOffsets"`
}
