// Package metrics owns Spool's Prometheus exposition: a registry built
// with prometheus/client_golang whose broker families carry RocketMQ 5's
// metric names and label names (rocketmq_messages_in_total,
// rocketmq_consumer_lag_messages, rocketmq_rpc_latency, ...; cluster,
// node_type, node_id, topic, consumer_group, ...), Spool's own isolation
// figures under spool_ (put-lock hold and fsync latency histograms, busy
// answers by kind, cold-read budget use, replication lag), and the HTTP
// listener RocketMQ's metricsExporterType=PROM starts on
// metricsPromExporterHost:metricsPromExporterPort (default port 5557).
//
// Every figure is read at scrape time from a Source, which the broker
// implements: one call returns a Snapshot of running totals, gauges and
// histogram snapshots it already keeps (internal/brokerstats, the store's
// figures, the client tables). Nothing is pushed per message, so the send
// and pull paths pay nothing for the exposition.
//
// Label cardinality is bounded: at most Options.MaxTopics topics
// (DefaultMaxTopics) and Options.MaxGroups consumer groups
// (DefaultMaxGroups) get series. Topics and groups are admitted in the
// order they first appear and keep their series while the Source reports
// them, so series stay stable across scrapes; the ones left out are
// counted by spool_metrics_series_dropped{kind="topic"|"consumer_group"}.
//
// The package imports nothing of Spool's; the broker adapts its figures
// to a Snapshot.
package metrics
