// Package adminbody owns the JSON bodies of RocketMQ's admin requests and
// answers as RocketMQ 5.3's tools (mqadmin, DefaultMQAdminExt, the
// dashboard, the exporter) parse them: ConsumeStats, TopicStatsTable,
// ConsumerConnection, ProducerConnection, ConsumerRunningInfo,
// BrokerStatsData, GroupList, TopicList, QueryConsumeTimeSpanBody,
// QueryConsumeQueueResponseBody, ConsumeStatsList, ProducerTableInfo,
// ResetOffsetBody, GetConsumerStatusBody, KVTable, ConsumeByWho and the
// metadata wrappers (TopicConfigSerializeWrapper, SubscriptionGroupWrapper,
// ConsumerOffsetSerializeWrapper), with the field names, nesting and number
// forms RocketMQ's Java classes have when fastjson 1.2 writes them.
//
// # The non-standard JSON
//
// RocketMQ writes its bodies with fastjson, which writes a map whose key is
// a Java object (MessageQueue) with the key's own JSON object where a
// string key belongs, and an Integer key as a bare number:
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"brokerOffset":5,...}}}
//	{"offsetTable":{"t@g":{0:5,1:3}}}
//
// Bean fields are written in the order of their names (fastjson's
// SortField), null fields are left out, a double is written as Java's
// Double.toString writes it ("0.0", "1.0E7", NaN and infinities as null)
// and there is no whitespace. Marshal writes exactly that (but for the
// metadata types it reuses, TopicConfig, SubscriptionGroupConfig and
// DataVersion, whose fields keep internal/metadata's order); Unmarshal reads
// it (and standard JSON, and fastjson's pretty form) by first turning every
// non-string object key into a string key holding the key's text
// (Normalize), then decoding with encoding/json, where MessageQueue and
// IntKey read that text back. Maps are written in the order of their keys'
// text; RocketMQ's own maps are hash maps, so no reader depends on an order.
// The Go client (rocketmq-client-go) reads the ResetOffsetBody of
// RESET_CONSUMER_CLIENT_OFFSET by cutting the text at `,{` and `}:`, which
// only the compact form without whitespace satisfies.
//
// # Where it sits
//
// The bodies are a wire format like the request headers, but unlike the
// codecs in remoting they carry the broker's metadata types (TopicConfig,
// SubscriptionGroupConfig, DataVersion), which internal/metadata owns and
// this package reuses rather than copies, and they print doubles with the
// Java formats of internal/store/stats. So the package lives in internal,
// one layer above both, and may import only internal/metadata and
// internal/store/stats: never the broker, the store, the transport or the
// client tables. internal/clients keeps its own MessageQueue of the same layout.
package adminbody
