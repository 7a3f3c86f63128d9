package namesrv

import (
	"os"
	"path/filepath"
)

// Config is the name server's configuration. Keys are RocketMQ's
// NamesrvConfig names so an operator's namesrv.properties binds unchanged
// (see internal/config.Bind); durations are plain milliseconds as in
// RocketMQ.
type Config struct {
	// ListenPort is the port the name-server process listens on; the
	// caller builds the address it passes to Server.Listen from it.
	ListenPort int `prop:"listenPort"`
	// KVConfigPath is the JSON file the KV-config table is persisted to.
	// Empty keeps the table in memory only (the server logs that it does).
	KVConfigPath string `prop:"kvConfigPath"`
	// ScanNotActiveBrokerInterval is how often (ms) brokers silent for longer
	// than their heartbeat timeout are dropped; <= 0 means 5000.
	ScanNotActiveBrokerInterval int64 `prop:"scanNotActiveBrokerInterval"`
	// BrokerChannelExpiredTime is the heartbeat timeout (ms) applied to a
	// registration that does not carry heartbeatTimeoutMillis; <= 0 means
	// 120000. It is a constant in RocketMQ; Spool makes it configurable.
	BrokerChannelExpiredTime int64 `prop:"brokerChannelExpiredTime" live:"true"`
	// OrderMessageEnable adds orderTopicConf to routes from the
	// ORDER_TOPIC_CONFIG KV namespace.
	OrderMessageEnable bool `prop:"orderMessageEnable" live:"true"`
	// EnableAllTopicList allows GET_ALL_TOPIC_LIST_FROM_NAMESERVER.
	EnableAllTopicList bool `prop:"enableAllTopicList" live:"true"`
	// ReturnOrderTopicConfigToBroker puts the ORDER_TOPIC_CONFIG namespace
	// into REGISTER_BROKER answers.
	ReturnOrderTopicConfigToBroker bool `prop:"returnOrderTopicConfigToBroker" live:"true"`
	// DeleteTopicWithBrokerRegistration removes a broker's queue data for
	// topics missing from its (master) registration.
	DeleteTopicWithBrokerRegistration bool `prop:"deleteTopicWithBrokerRegistration" live:"true"`
	// EnableTopicList allows GET_TOPICS_BY_CLUSTER and the unit topic
	// lists; when false they answer SYSTEM_ERROR "disable".
	EnableTopicList bool `prop:"enableTopicList" live:"true"`
	// ConfigBlackList names, ';'-separated, the keys UPDATE_NAMESRV_CONFIG
	// refuses with NO_PERMISSION.
	ConfigBlackList string `prop:"configBlackList"`
	// EnableControllerInNamesrv runs the controller (RocketMQ's controller
	// mode) inside the name-server process, on its port; the controller
	// keys (controllerDLegerGroup, controllerDLegerPeers, ...) come from
	// the same file. The process that builds the server acts on it.
	EnableControllerInNamesrv bool `prop:"enableControllerInNamesrv"`
}

// DefaultConfigBlackList is RocketMQ 5.3's configBlackList.
const DefaultConfigBlackList = "configBlackList;configStorePath;kvConfigPath"

// KV namespace whose entries become routes' orderTopicConf and are returned
// to brokers on registration.
const NamespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// DefaultConfig returns RocketMQ 5.3.3's defaults: port 9876,
// ~/namesrv/kvConfig.json, a 5 s scan, a 120 s broker timeout.
func DefaultConfig() Config {
	home, err := os.UserHomeDir()
	kv := ""
	if err == nil {
		kv = filepath.Join(home, "namesrv", "kvConfig.json")
	}
	return Config{
		ListenPort:                     9876,
		KVConfigPath:                   kv,
		ScanNotActiveBrokerInterval:    5000,
		BrokerChannelExpiredTime:       120000,
		OrderMessageEnable:             false,
		EnableAllTopicList:             true,
		ReturnOrderTopicConfigToBroker: true,
		EnableTopicList:                true,
		ConfigBlackList:                DefaultConfigBlackList,
	}
}
