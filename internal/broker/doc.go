// Package broker is Spool's RocketMQ-compatible broker: the remoting
// processors (send, pull with long polling, offsets, heartbeats, admin,
// retries and dead letters, orderly locks, END_TRANSACTION, request/reply),
// the metadata managers (topics, subscription groups, consumer offsets,
// consumer and producer registries), the background services (delayed
// message delivery, transaction check-back, client expiry) and
// registration with name servers.
//
// It owns the broker's config/ directory and talks to storage only through
// store.MessageStore. It must never: block a worker on a flush (sends are
// answered from the store's completion) or on a held pull (held pulls are
// re-run on their own goroutine); write metadata files on a request path
// (a background writer replaces them atomically); or touch mapped files.
//
// Metadata files, under storePathRootDir/config (RocketMQ's names and JSON
// forms; each replaced by temp file + fsync + rename + fsync of the dir):
//
//	topics.json             {"topicConfigTable":{"T":{"topicName":"T","readQueueNums":8,
//	                          "writeQueueNums":8,"perm":6,"topicFilterType":"SINGLE_TAG",
//	                          "topicSysFlag":0,"order":false,"attributes":{}}, ...},
//	                         "dataVersion":{"timestamp":ms,"counter":n,"stateVersion":0}}
//	subscriptionGroup.json  {"subscriptionGroupTable":{"G":{"groupName":"G","consumeEnable":true,
//	                          ..., "retryQueueNums":1,"retryMaxTimes":16, ...}},"dataVersion":{...}}
//	consumerOffset.json     {"offsetTable":{"T@G":{"0":5,"1":3}},"dataVersion":{...}}
//	delayOffset.json        {"offsetTable":{"<level>":<next offset of SCHEDULE_TOPIC_XXXX queue level-1>}}
//
// Wire forms the broker produces or reads (beyond the remoting frame):
//
//	send answer ext    msgId=<offsetMsgId[,offsetMsgId...]> queueId=<n> queueOffset=<n>
//	                   transactionId=<UNIQ_KEY> MSG_REGION=<regionId> TRACE_ON=<bool>
//	pull answer ext    suggestWhichBrokerId=0 nextBeginOffset=<n> minOffset=<n> maxOffset=<n>
//	                   (on every pull answer); body = stored records back to back:
//	                   +-----------+-----------+-----+
//	                   | record 1  | record 2  | ... |   each record as stored (V1 layout)
//	                   +-----------+-----------+-----+
//	registration       REGISTER_BROKER ext brokerName brokerAddr clusterName haServerAddr
//	                   brokerId compressed=false bodyCrc32; body
//	                   {"topicConfigSerializeWrapper":{"topicConfigTable":{...},"dataVersion":{...}},
//	                    "filterServerList":[]}
//	delayed message    SCHEDULE_TOPIC_XXXX queue level-1; properties + REAL_TOPIC, REAL_QID;
//	                   consume-queue tag field = delivery time (ms)
//	half message       RMQ_SYS_TRANS_HALF_TOPIC queue 0; properties + REAL_TOPIC, REAL_QID,
//	                   __transactionId__; transaction bits cleared
//	resolved half      RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0; tag "d"; body = half queue offset
//	                   (decimal text); check-back progress of both queues in consumerOffset.json
//	                   under group CID_RMQ_SYS_TRANS
package broker
