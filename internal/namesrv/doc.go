// Package namesrv is Spool's name server: the route table (topics, broker
// names, clusters, live broker addresses), broker registration and
// liveness, the route and admin queries clients send, and the KV-config
// table.
//
// It owns the routing state and the KV-config file. It must never invent a
// route (an unknown topic is TOPIC_NOT_EXIST, code 17, which clients and
// RocketMQ's "No route info" troubleshooting rely on), never write the
// KV-config file on a request goroutine, and never block a request on the
// disk. Decision logic lives in RouteTable and KVConfig, plain values with
// no locks, goroutines or clocks; Server is the driver that locks, reads the
// clock, and talks to the transport.
//
// # Route JSON (GET_ROUTEINFO_BY_TOPIC answer body)
//
// Compact (no whitespace), keys in this order, brokerAddrs keys quoted
// integers, queueDatas and brokerDatas always present, filterServerTable
// always {}. The Go client cuts brokerAddrs out as raw text and splits it on
// ',' and ':', so a space or ',' there would corrupt its table:
//
//	{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"},
//	                 "brokerName":"broker-a","cluster":"DefaultCluster",
//	                 "enableActingMaster":false}],
//	 "filterServerTable":{},
//	 "orderTopicConf":"broker-a:4",          <- only with orderMessageEnable and a KV entry
//	 "queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,
//	                "topicSysFlag":0,"writeQueueNums":8}]}
//	(shown wrapped; the wire form is one line)
//
// # REGISTER_BROKER body
//
// With ext compressed=false it is RegisterBrokerBody as JSON:
//
//	{"topicConfigSerializeWrapper":{
//	    "topicConfigTable":{"T":{"topicName":"T","readQueueNums":8,"writeQueueNums":8,
//	        "perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false}},
//	    "dataVersion":{"stateVersion":0,"timestamp":1700000000000,"counter":3}},
//	 "filterServerList":[]}
//
// With compressed=true it is one zlib stream of big-endian length-prefixed
// parts:
//
//	+--------+------------------+--------+-------------------------------+---
//	| len u32| DataVersion JSON | n u32  | n x ( len u32 | TopicConfig  | ...
//	+--------+------------------+--------+---------------------- text ---+---
//	    ---+--------+-------------------------+-----------------------------------+
//	   ... | len u32| filterServerList JSON   | m u32 | m x (len u32 | JSON)     |
//	    ---+--------+-------------------------+-----------------------------------+
//	                                           ^ only when the request version >= 413 (5.0.0)
//
//	TopicConfig text: "name read write perm filterType attributesJSON" (space separated)
//
// A non-zero ext bodyCrc32 must equal CRC32-IEEE(body) & 0x7FFFFFFF, else the
// answer is SYSTEM_ERROR "crc32 not match". Only a master (brokerId 0)
// updates topic queue data. The answer carries ext haServerAddr/masterAddr
// for a slave whose master is registered, and, with
// returnOrderTopicConfigToBroker, a KVTable body {"table":{...}} of the
// ORDER_TOPIC_CONFIG namespace when it has entries.
//
// # Liveness
//
// A broker address is dropped when it has not registered (or sent
// BROKER_HEARTBEAT / QUERY_DATA_VERSION) within its heartbeatTimeoutMillis
// (default brokerChannelExpiredTime, 120 s), checked every
// scanNotActiveBrokerInterval (5 s), and at once when the connection it
// registered over closes. A broker name with no address left disappears from
// every topic; a topic with no broker name left disappears.
//
// # Admin requests
//
// WIPE_WRITE_PERM_OF_BROKER (header brokerName) clears the write bit of
// that broker name's queue data in every topic, so routes stop offering
// it to producers (draining a broker); ADD_WRITE_PERM_OF_BROKER sets the
// perm back to 6 whatever it was, as RocketMQ does. They answer ext
// wipeTopicCount / addTopicCount. The change lasts until the broker
// registers a changed topic table (a new data version). GET_TOPICS_BY_CLUSTER
// (header cluster) and the unit topic lists answer a TopicList, or
// SYSTEM_ERROR "disable" without enableTopicList. GET_NAMESRV_CONFIG
// answers every key as .properties text; UPDATE_NAMESRV_CONFIG applies a
// .properties body to the keys tagged live, refusing a configBlackList key
// with NO_PERMISSION "Can not update config in black list." and any other
// key it cannot change with INVALID_PARAMETER, all or nothing, in memory
// only.
//
// # KV-config file (kvConfigPath), RocketMQ's layout
//
//	{"configTable":{"<namespace>":{"<key>":"<value>", ...}, ...}}
//
// Written by a background goroutine: temp file in the same directory, fsync,
// rename over the old file, fsync of the directory. A request is answered
// before its change reaches the disk; Shutdown and SyncKV wait for it.
package namesrv
