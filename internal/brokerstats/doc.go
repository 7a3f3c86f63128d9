// Package brokerstats owns the broker's per-topic and per-group traffic
// counters as RocketMQ's BrokerStatsManager keeps them: one set of stats
// items per stats name (TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, GROUP_GET_NUMS,
// GROUP_GET_SIZE, SNDBCK_PUT_NUMS, BROKER_PUT_NUMS, BROKER_GET_NUMS,
// GROUP_GET_LATENCY, ...), each item keyed as RocketMQ keys it ("topic",
// "topic@group", "queueId@topic@group", the cluster name, ...), holding a
// running value and a running count of increments, and snapshots of both
// taken every 10 seconds (the minute window: 7 snapshots), every 10
// minutes (the hour window: 7) and every hour (the day window: 25). A
// window's figures are RocketMQ's StatsSnapshot: the sum between its first
// and last snapshot, that sum per second, and that sum per increment
// (avgpt), which VIEW_BROKER_STATS_DATA answers and mqadmin's statsAll
// prints.
//
// # Cost and bounds
//
// An increment is a read-locked map lookup on a struct key (no string is
// built) and two atomic adds on the item; only the first increment of a
// key allocates its item and its RocketMQ key string. No clock is read on
// the increment path: an item's last-update time, which idle cleaning
// reads, is set by the 10-second sampler when the item's figures moved.
// Each stats name holds at most Options.MaxKeys items (DefaultMaxKeys);
// increments of a new key beyond the cap are dropped and counted
// (Dropped), never stored. Topics and groups that are deleted are removed
// with RemoveTopic and RemoveGroup, idle items with CleanIdle.
//
// Beside the items the Manager keeps the figures the metrics read and
// RocketMQ keeps elsewhere (ops.go): per topic a message-size histogram
// (RocketMQ 5's rocketmq_message_size buckets) and the transaction
// commits and rollbacks, per group and topic the messages moved to the
// dead-letter queue, and per group, topic and queue the next offset
// pulled. They are capped and removed like the items.
//
// Time comes from the Options' clock.Clock; tests drive the samplers
// directly (SampleMinute, SampleHour, SampleDay) under a clock.Manual.
//
// The package imports only internal/clock: never the broker, the store,
// the transport or the metadata tables. The broker calls it from its send,
// pull and send-back paths and reads it for VIEW_BROKER_STATS_DATA,
// GET_CONSUME_STATS (consumeTps) and the metrics.
package brokerstats
