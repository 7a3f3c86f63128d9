package remoting

import (
	"slices"
	"strconv"
)

// Request codes (RocketMQ RequestCode).
const (
	SendMessage                      int32 = 10
	PullMessage                      int32 = 11
	QueryMessage                     int32 = 12
	QueryConsumerOffset              int32 = 14
	UpdateConsumerOffset             int32 = 15
	UpdateAndCreateTopic             int32 = 17
	GetAllTopicConfig                int32 = 21
	UpdateBrokerConfig               int32 = 25
	GetBrokerConfig                  int32 = 26
	GetBrokerRuntimeInfo             int32 = 28
	SearchOffsetByTimestamp          int32 = 29
	GetMaxOffset                     int32 = 30
	GetMinOffset                     int32 = 31
	GetEarliestMsgStoretime          int32 = 32
	ViewMessageByID                  int32 = 33
	HeartBeat                        int32 = 34
	UnregisterClient                 int32 = 35
	ConsumerSendMsgBack              int32 = 36
	EndTransaction                   int32 = 37
	GetConsumerListByGroup           int32 = 38
	CheckTransactionState            int32 = 39
	NotifyConsumerIdsChanged         int32 = 40
	LockBatchMQ                      int32 = 41
	UnlockBatchMQ                    int32 = 42
	CheckClientConfig                int32 = 46
	PutKVConfig                      int32 = 100
	GetKVConfig                      int32 = 101
	DeleteKVConfig                   int32 = 102
	RegisterBroker                   int32 = 103
	UnregisterBroker                 int32 = 104
	GetRouteinfoByTopic              int32 = 105
	GetBrokerClusterInfo             int32 = 106
	UpdateAndCreateSubscriptionGroup int32 = 200
	GetAllSubscriptionGroupConfig    int32 = 201
	DeleteSubscriptionGroup          int32 = 207
	GetAllTopicListFromNameserver    int32 = 206
	DeleteTopicInBroker              int32 = 215
	DeleteTopicInNamesrv             int32 = 216
	GetKVListByNamespace             int32 = 219
	ResetConsumerClientOffset        int32 = 220
	GetConsumerStatusFromClient      int32 = 221
	GetConsumerRunningInfo           int32 = 307
	ConsumeMessageDirectly           int32 = 309
	SendMessageV2                    int32 = 310
	SendBatchMessage                 int32 = 320
	QueryDataVersion                 int32 = 322
	SendReplyMessage                 int32 = 324
	SendReplyMessageV2               int32 = 325
	PushReplyMessageToClient         int32 = 326
	LitePullMessage                  int32 = 361
	BrokerHeartbeat                  int32 = 904
	// EvictPageCache is a Spool extension (code outside RocketMQ's table):
	// drop a topic's or the whole CommitLog's pages from memory.
	EvictPageCache int32 = 9001
)

// Request codes of the broker's admin requests (RocketMQ RequestCode) that
// mqadmin, the dashboard and the exporter send.
const (
	UpdateAndCreateTopicList             int32 = 18
	GetAllConsumerOffset                 int32 = 43
	GetAllDelayOffset                    int32 = 45
	GetTopicStatsInfo                    int32 = 202
	GetConsumerConnectionList            int32 = 203
	GetProducerConnectionList            int32 = 204
	GetConsumeStats                      int32 = 208
	InvokeBrokerToResetOffset            int32 = 222
	InvokeBrokerToGetConsumerStatus      int32 = 223
	UpdateAndCreateSubscriptionGroupList int32 = 225
	QueryTopicConsumeByWho               int32 = 300
	QueryConsumeTimeSpan                 int32 = 303
	GetSystemTopicListFromBroker         int32 = 305
	CleanExpiredConsumeQueue             int32 = 306
	CleanUnusedTopic                     int32 = 316
	GetBrokerConsumeStats                int32 = 317
	QueryConsumeQueue                    int32 = 321
	GetAllProducerInfo                   int32 = 328
	QueryTopicsByConsumer                int32 = 343
	GetTopicConfig                       int32 = 351
	CloneGroupOffset                     int32 = 314
	RecallMessage                        int32 = 370
)

var adminRequestNames = map[int32]string{
	UpdateAndCreateTopicList: "UPDATE_AND_CREATE_TOPIC_LIST", GetAllConsumerOffset: "GET_ALL_CONSUMER_OFFSET",
	GetAllDelayOffset: "GET_ALL_DELAY_OFFSET", GetTopicStatsInfo: "GET_TOPIC_STATS_INFO",
	GetConsumerConnectionList: "GET_CONSUMER_CONNECTION_LIST", GetProducerConnectionList: "GET_PRODUCER_CONNECTION_LIST",
	GetConsumeStats: "GET_CONSUME_STATS", InvokeBrokerToResetOffset: "INVOKE_BROKER_TO_RESET_OFFSET",
	InvokeBrokerToGetConsumerStatus:      "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
	UpdateAndCreateSubscriptionGroupList: "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST",
	QueryTopicConsumeByWho:               "QUERY_TOPIC_CONSUME_BY_WHO", QueryConsumeTimeSpan: "QUERY_CONSUME_TIME_SPAN",
	GetSystemTopicListFromBroker: "GET_SYSTEM_TOPIC_LIST_FROM_BROKER", CleanExpiredConsumeQueue: "CLEAN_EXPIRED_CONSUMEQUEUE",
	CleanUnusedTopic: "CLEAN_UNUSED_TOPIC", GetBrokerConsumeStats: "GET_BROKER_CONSUME_STATS",
	QueryConsumeQueue: "QUERY_CONSUME_QUEUE", GetAllProducerInfo: "GET_ALL_PRODUCER_INFO",
	QueryTopicsByConsumer: "QUERY_TOPICS_BY_CONSUMER", GetTopicConfig: "GET_TOPIC_CONFIG",
	CloneGroupOffset: "CLONE_GROUP_OFFSET", RecallMessage: "RECALL_MESSAGE",
}

// ConsumerNotOnline (RocketMQ ResponseCode CONSUMER_NOT_ONLINE) answers an
// admin request about a consumer group none of whose clients is
// connected.
const ConsumerNotOnline int32 = 206

// ConsumeMsgTimeout (RocketMQ ResponseCode CONSUME_MSG_TIMEOUT) answers a
// request relayed to a client that did not answer in time.
const ConsumeMsgTimeout int32 = 207

// Response codes (RocketMQ ResponseCode).
const (
	Success                   int32 = 0
	SystemError               int32 = 1
	SystemBusy                int32 = 2
	RequestCodeNotSupported   int32 = 3
	TransactionFailed         int32 = 4
	FlushDiskTimeout          int32 = 10
	SlaveNotAvailable         int32 = 11
	FlushSlaveTimeout         int32 = 12
	MessageIllegal            int32 = 13
	ServiceNotAvailable       int32 = 14
	VersionNotSupported       int32 = 15
	NoPermission              int32 = 16
	TopicNotExist             int32 = 17
	TopicExistAlready         int32 = 18
	PullNotFound              int32 = 19
	PullRetryImmediately      int32 = 20
	PullOffsetMoved           int32 = 21
	QueryNotFound             int32 = 22
	SubscriptionParseFailed   int32 = 23
	SubscriptionNotExist      int32 = 24
	SubscriptionNotLatest     int32 = 25
	SubscriptionGroupNotExist int32 = 26
	FilterDataNotExist        int32 = 27
	FilterDataNotLatest       int32 = 28
	InvalidParameter          int32 = 29
	IllegalOperation          int32 = 604
)

var requestNames = map[int32]string{
	SendMessage: "SEND_MESSAGE", PullMessage: "PULL_MESSAGE", QueryMessage: "QUERY_MESSAGE",
	QueryConsumerOffset: "QUERY_CONSUMER_OFFSET", UpdateConsumerOffset: "UPDATE_CONSUMER_OFFSET",
	UpdateAndCreateTopic: "UPDATE_AND_CREATE_TOPIC", GetAllTopicConfig: "GET_ALL_TOPIC_CONFIG",
	UpdateBrokerConfig: "UPDATE_BROKER_CONFIG", GetBrokerConfig: "GET_BROKER_CONFIG",
	GetBrokerRuntimeInfo: "GET_BROKER_RUNTIME_INFO", SearchOffsetByTimestamp: "SEARCH_OFFSET_BY_TIMESTAMP",
	GetMaxOffset: "GET_MAX_OFFSET", GetMinOffset: "GET_MIN_OFFSET", GetEarliestMsgStoretime: "GET_EARLIEST_MSG_STORETIME",
	ViewMessageByID: "VIEW_MESSAGE_BY_ID", HeartBeat: "HEART_BEAT", UnregisterClient: "UNREGISTER_CLIENT",
	ConsumerSendMsgBack: "CONSUMER_SEND_MSG_BACK", EndTransaction: "END_TRANSACTION",
	GetConsumerListByGroup: "GET_CONSUMER_LIST_BY_GROUP", CheckTransactionState: "CHECK_TRANSACTION_STATE",
	NotifyConsumerIdsChanged: "NOTIFY_CONSUMER_IDS_CHANGED", LockBatchMQ: "LOCK_BATCH_MQ", UnlockBatchMQ: "UNLOCK_BATCH_MQ",
	CheckClientConfig: "CHECK_CLIENT_CONFIG", PutKVConfig: "PUT_KV_CONFIG", GetKVConfig: "GET_KV_CONFIG",
	DeleteKVConfig: "DELETE_KV_CONFIG", RegisterBroker: "REGISTER_BROKER", UnregisterBroker: "UNREGISTER_BROKER",
	GetRouteinfoByTopic: "GET_ROUTEINFO_BY_TOPIC", GetBrokerClusterInfo: "GET_BROKER_CLUSTER_INFO",
	UpdateAndCreateSubscriptionGroup: "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
	GetAllSubscriptionGroupConfig:    "GET_ALL_SUBSCRIPTIONGROUP_CONFIG", DeleteSubscriptionGroup: "DELETE_SUBSCRIPTIONGROUP",
	GetAllTopicListFromNameserver: "GET_ALL_TOPIC_LIST_FROM_NAMESERVER", DeleteTopicInBroker: "DELETE_TOPIC_IN_BROKER",
	DeleteTopicInNamesrv: "DELETE_TOPIC_IN_NAMESRV", GetKVListByNamespace: "GET_KVLIST_BY_NAMESPACE",
	ResetConsumerClientOffset: "RESET_CONSUMER_CLIENT_OFFSET", GetConsumerStatusFromClient: "GET_CONSUMER_STATUS_FROM_CLIENT",
	GetConsumerRunningInfo: "GET_CONSUMER_RUNNING_INFO", ConsumeMessageDirectly: "CONSUME_MESSAGE_DIRECTLY",
	SendMessageV2: "SEND_MESSAGE_V2", SendBatchMessage: "SEND_BATCH_MESSAGE", QueryDataVersion: "QUERY_DATA_VERSION",
	SendReplyMessage: "SEND_REPLY_MESSAGE", SendReplyMessageV2: "SEND_REPLY_MESSAGE_V2",
	PushReplyMessageToClient: "PUSH_REPLY_MESSAGE_TO_CLIENT", LitePullMessage: "LITE_PULL_MESSAGE",
	BrokerHeartbeat: "BROKER_HEARTBEAT", EvictPageCache: "SPOOL_EVICT_PAGE_CACHE",
	AuthCreateUser: "AUTH_CREATE_USER", AuthUpdateUser: "AUTH_UPDATE_USER", AuthDeleteUser: "AUTH_DELETE_USER",
	AuthGetUser: "AUTH_GET_USER", AuthListUser: "AUTH_LIST_USER", AuthCreateACL: "AUTH_CREATE_ACL",
	AuthUpdateACL: "AUTH_UPDATE_ACL", AuthDeleteACL: "AUTH_DELETE_ACL", AuthGetACL: "AUTH_GET_ACL",
	AuthListACL: "AUTH_LIST_ACL",
}

// User and ACL management request codes (RocketMQ 5.3 RequestCode).
const (
	AuthCreateUser int32 = 3001
	AuthUpdateUser int32 = 3002
	AuthDeleteUser int32 = 3003
	AuthGetUser    int32 = 3004
	AuthListUser   int32 = 3005
	AuthCreateACL  int32 = 3006
	AuthUpdateACL  int32 = 3007
	AuthDeleteACL  int32 = 3008
	AuthGetACL     int32 = 3009
	AuthListACL    int32 = 3010
)

// RequestName returns RocketMQ's name for a request code, or the number.
func RequestName(code int32) string {
	if n, ok := requestNames[code]; ok {
		return n
	}
	if n, ok := adminRequestNames[code]; ok {
		return n
	}
	return strconv.Itoa(int(code))
}

// RequestCodes returns every request code RequestName knows, in
// ascending order.
func RequestCodes() []int32 {
	codes := make([]int32, 0, len(requestNames)+len(adminRequestNames))
	for code := range requestNames {
		codes = append(codes, code)
	}
	for code := range adminRequestNames {
		if _, dup := requestNames[code]; !dup {
			codes = append(codes, code)
		}
	}
	slices.Sort(codes)
	return codes
}

// Name-server admin request codes (RocketMQ RequestCode): the queries and
// changes mqadmin sends a name server.
const (
	WipeWritePermOfBroker        int32 = 205
	GetTopicsByCluster           int32 = 224
	GetSystemTopicListFromNs     int32 = 304
	GetUnitTopicList             int32 = 311
	GetHasUnitSubTopicList       int32 = 312
	GetHasUnitSubUnunitTopicList int32 = 313
	UpdateNamesrvConfig          int32 = 318
	GetNamesrvConfig             int32 = 319
	AddWritePermOfBroker         int32 = 327
)

func init() {
	for code, name := range map[int32]string{
		WipeWritePermOfBroker: "WIPE_WRITE_PERM_OF_BROKER", GetTopicsByCluster: "GET_TOPICS_BY_CLUSTER",
		GetSystemTopicListFromNs: "GET_SYSTEM_TOPIC_LIST_FROM_NS", GetUnitTopicList: "GET_UNIT_TOPIC_LIST",
		GetHasUnitSubTopicList:       "GET_HAS_UNIT_SUB_TOPIC_LIST",
		GetHasUnitSubUnunitTopicList: "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST",
		UpdateNamesrvConfig:          "UPDATE_NAMESRV_CONFIG", GetNamesrvConfig: "GET_NAMESRV_CONFIG",
		AddWritePermOfBroker: "ADD_WRITE_PERM_OF_BROKER",
	} {
		requestNames[code] = name
	}
}

// Controller request codes (RocketMQ RequestCode, controller mode). The
// Java names of 1001–1006 and 1012–1013 start with CONTROLLER_.
const (
	ControllerAlterSyncStateSet int32 = 1001
	ControllerElectMaster       int32 = 1002
	ControllerRegisterBroker    int32 = 1003
	ControllerGetReplicaInfo    int32 = 1004
	ControllerGetMetadataInfo   int32 = 1005
	ControllerGetSyncStateData  int32 = 1006
	GetBrokerEpochCache         int32 = 1007
	NotifyBrokerRoleChanged     int32 = 1008
	UpdateControllerConfig      int32 = 1009
	GetControllerConfig         int32 = 1010
	CleanBrokerData             int32 = 1011
	ControllerGetNextBrokerID   int32 = 1012
	ControllerApplyBrokerID     int32 = 1013
)

// ExchangeBrokerHAInfo is RocketMQ's EXCHANGE_BROKER_HA_INFO, between the
// brokers of one broker name: without masterHaAddress a master answers its
// HA address (masterHaAddress), the CommitLog's end when it started
// (masterFlushOffset) and its address (masterAddress); with it, a slave
// takes masterHaAddress as its master's HA address.
const ExchangeBrokerHAInfo int32 = 906

// Controller response codes (RocketMQ ResponseCode 2000–2016).
const (
	ControllerFencedMasterEpoch          int32 = 2000
	ControllerFencedSyncStateSetEpoch    int32 = 2001
	ControllerInvalidMaster              int32 = 2002
	ControllerInvalidReplicas            int32 = 2003
	ControllerMasterNotAvailable         int32 = 2004
	ControllerInvalidRequest             int32 = 2005
	ControllerBrokerNotAlive             int32 = 2006
	ControllerNotLeader                  int32 = 2007
	ControllerBrokerMetadataNotExist     int32 = 2008
	ControllerInvalidCleanBrokerMetadata int32 = 2009
	ControllerBrokerNeedToBeRegistered   int32 = 2010
	ControllerMasterStillExist           int32 = 2011
	ControllerElectMasterFailed          int32 = 2012
	ControllerAlterSyncStateSetFailed    int32 = 2013
	ControllerBrokerIDInvalid            int32 = 2014
	ControllerJRaftInternalError         int32 = 2015
	ControllerBrokerLiveInfoNotExists    int32 = 2016
)

func init() {
	for code, name := range map[int32]string{
		ControllerAlterSyncStateSet: "CONTROLLER_ALTER_SYNC_STATE_SET", ControllerElectMaster: "CONTROLLER_ELECT_MASTER",
		ControllerRegisterBroker: "CONTROLLER_REGISTER_BROKER", ControllerGetReplicaInfo: "CONTROLLER_GET_REPLICA_INFO",
		ControllerGetMetadataInfo: "CONTROLLER_GET_METADATA_INFO", ControllerGetSyncStateData: "CONTROLLER_GET_SYNC_STATE_DATA",
		GetBrokerEpochCache: "GET_BROKER_EPOCH_CACHE", NotifyBrokerRoleChanged: "NOTIFY_BROKER_ROLE_CHANGED",
		UpdateControllerConfig: "UPDATE_CONTROLLER_CONFIG", GetControllerConfig: "GET_CONTROLLER_CONFIG",
		CleanBrokerData: "CLEAN_BROKER_DATA", ControllerGetNextBrokerID: "CONTROLLER_GET_NEXT_BROKER_ID",
		ControllerApplyBrokerID: "CONTROLLER_APPLY_BROKER_ID", ExchangeBrokerHAInfo: "EXCHANGE_BROKER_HA_INFO",
	} {
		requestNames[code] = name
	}
}

// ViewBrokerStatsData is RocketMQ's VIEW_BROKER_STATS_DATA: the minute,
// hour and day windows of one of the broker's stats items.
const ViewBrokerStatsData int32 = 315

func init() {
	for code, name := range map[int32]string{ViewBrokerStatsData: "VIEW_BROKER_STATS_DATA"} {
		requestNames[code] = name
	}
}

// GetTimerCheckPoint is RocketMQ's GET_TIMER_CHECK_POINT: a master's
// timer-wheel checkpoint, which its slaves copy.
const GetTimerCheckPoint int32 = 60

func init() {
	for code, name := range map[int32]string{GetTimerCheckPoint: "GET_TIMER_CHECK_POINT"} {
		requestNames[code] = name
	}
}
