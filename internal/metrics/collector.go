package metrics

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Label names, as RocketMQ 5's BrokerMetricsConstant,
// RemotingMetricsConstant and DefaultStoreMetricsConstant spell them.
const (
	LabelCluster       = "cluster"
	LabelNodeType      = "node_type"
	LabelNodeID        = "node_id"
	LabelTopic         = "topic"
	LabelConsumerGroup = "consumer_group"
	LabelMessageType   = "message_type"
	LabelIsSystem      = "is_system"
	LabelIsRetry       = "is_retry"
	LabelLanguage      = "language"
	LabelVersion       = "version"
	LabelConsumeMode   = "consume_mode"
	LabelProtocolType  = "protocol_type"
	LabelProcessor     = "processor"
	LabelRequestCode   = "request_code"
	LabelResponseCode  = "response_code"
	LabelIsLongPolling = "is_long_polling"
	LabelResult        = "result"
	LabelStorageType   = "storage_type"
	LabelStorageMedium = "storage_medium"
	LabelTimingBound   = "timer_bound_s"
	LabelKind          = "kind"

	// NodeTypeBroker is node_type's value on a broker.
	NodeTypeBroker = "broker"
	// ProtocolRemoting is protocol_type's value for the remoting protocol.
	ProtocolRemoting = "remoting"
)

// family is one metric family: its name, help, type and variable labels.
type family struct {
	name   string
	help   string
	kind   string // "counter", "gauge", "histogram"
	labels []string
	desc   *prometheus.Desc
}

var (
	topicLabels    = []string{LabelTopic, LabelMessageType, LabelIsSystem}
	outLabels      = []string{LabelTopic, LabelConsumerGroup, LabelIsSystem}
	lagLabels      = []string{LabelConsumerGroup, LabelTopic, LabelIsRetry, LabelIsSystem}
	storageLabels  = []string{LabelStorageType, LabelStorageMedium}
	rpcLabels      = []string{LabelProtocolType, LabelRequestCode, LabelResponseCode, LabelIsLongPolling, LabelResult}
	producerLabels = []string{LabelLanguage, LabelVersion, LabelProtocolType}
	consumerLabels = []string{LabelConsumerGroup, LabelLanguage, LabelVersion, LabelConsumeMode, LabelProtocolType, LabelIsSystem}
)

// The families, in exposition order. Index constants below name them.
var families = []family{
	{name: "rocketmq_messages_in_total", kind: "counter", labels: topicLabels, help: "Messages put, by topic."},
	{name: "rocketmq_throughput_in_total", kind: "counter", labels: topicLabels, help: "Bytes put, by topic."},
	{name: "rocketmq_message_size", kind: "histogram", labels: topicLabels, help: "Sizes of the messages put, in bytes."},
	{name: "rocketmq_messages_out_total", kind: "counter", labels: outLabels, help: "Messages pulled, by topic and consumer group."},
	{name: "rocketmq_throughput_out_total", kind: "counter", labels: outLabels, help: "Bytes pulled, by topic and consumer group."},
	{name: "rocketmq_send_to_dlq_messages_total", kind: "counter", labels: []string{LabelConsumerGroup, LabelTopic, LabelIsSystem}, help: "Messages moved to the dead-letter queue."},
	{name: "rocketmq_consumer_lag_messages", kind: "gauge", labels: lagLabels, help: "Messages produced and not committed by the group."},
	{name: "rocketmq_consumer_lag_latency", kind: "gauge", labels: lagLabels, help: "Age of the oldest message not committed by the group, in milliseconds."},
	{name: "rocketmq_consumer_inflight_messages", kind: "gauge", labels: lagLabels, help: "Messages pulled and not committed by the group."},
	{name: "rocketmq_consumer_queueing_latency", kind: "gauge", labels: lagLabels, help: "Age of the oldest message not pulled by the group, in milliseconds."},
	{name: "rocketmq_consumer_ready_messages", kind: "gauge", labels: lagLabels, help: "Messages produced and not pulled by the group."},
	{name: "rocketmq_commit_messages_total", kind: "counter", labels: []string{LabelTopic}, help: "Transactional messages committed."},
	{name: "rocketmq_rollback_messages_total", kind: "counter", labels: []string{LabelTopic}, help: "Transactional messages rolled back."},
	{name: "rocketmq_half_messages", kind: "gauge", labels: []string{LabelTopic}, help: "Transactional half messages waiting for their end."},
	{name: "rocketmq_producer_connections", kind: "gauge", labels: producerLabels, help: "Producer connections."},
	{name: "rocketmq_consumer_connections", kind: "gauge", labels: consumerLabels, help: "Consumer connections."},
	{name: "rocketmq_topic_number", kind: "gauge", help: "Topics in the topic table."},
	{name: "rocketmq_consumer_group_number", kind: "gauge", help: "Subscription groups."},
	{name: "rocketmq_processor_watermark", kind: "gauge", labels: []string{LabelProcessor}, help: "Requests waiting per processor."},
	{name: "rocketmq_broker_permission", kind: "gauge", help: "The broker's permission bits."},
	{name: "rocketmq_rpc_latency", kind: "histogram", labels: rpcLabels, help: "Request latency, in milliseconds."},
	{name: "rocketmq_storage_size", kind: "gauge", labels: storageLabels, help: "Bytes of the store on disk."},
	{name: "rocketmq_storage_flush_behind_bytes", kind: "gauge", labels: storageLabels, help: "Bytes written and not yet flushed."},
	{name: "rocketmq_storage_dispatch_behind_bytes", kind: "gauge", labels: storageLabels, help: "Bytes written and not yet dispatched to the consume queues."},
	{name: "rocketmq_storage_message_reserve_time", kind: "gauge", labels: storageLabels, help: "Age of the oldest message kept, in milliseconds."},
	{name: "rocketmq_timer_enqueue_lag", kind: "gauge", help: "Timer messages waiting to enter the timing wheel."},
	{name: "rocketmq_timer_enqueue_latency", kind: "gauge", help: "Delay of the timing wheel's enqueue, in milliseconds."},
	{name: "rocketmq_timer_dequeue_lag", kind: "gauge", help: "Due timer messages not yet delivered."},
	{name: "rocketmq_timer_dequeue_latency", kind: "gauge", help: "Delay of the timing wheel's delivery, in milliseconds."},
	{name: "rocketmq_timing_messages", kind: "gauge", labels: []string{LabelTopic}, help: "Timer messages pending, by topic."},
	{name: "rocketmq_timer_enqueue_total", kind: "counter", labels: []string{LabelTopic}, help: "Timer messages entered into the timing wheel."},
	{name: "rocketmq_timer_dequeue_total", kind: "counter", labels: []string{LabelTopic}, help: "Timer messages delivered."},
	{name: "rocketmq_timer_message_snapshot", kind: "gauge", labels: []string{LabelTimingBound}, help: "Pending timer messages by delay bound."},
	{name: "spool_put_lock_hold_seconds", kind: "histogram", help: "Time the CommitLog put lock is held per put."},
	{name: "spool_fsync_latency_seconds", kind: "histogram", help: "Latency of the store's fsync calls."},
	{name: "spool_busy_answers_total", kind: "counter", labels: []string{LabelKind}, help: "Requests answered busy, by kind."},
	{name: "spool_cold_read_bytes_total", kind: "counter", help: "Bytes read from disk under the cold-read budget."},
	{name: "spool_cold_read_budget_bytes_per_second", kind: "gauge", help: "The cold-read budget's rate."},
	{name: "spool_cold_read_throttled_total", kind: "counter", help: "Pulls that found the cold-read budget spent."},
	{name: "spool_replication_lag_bytes", kind: "gauge", help: "Bytes a replica is behind its master."},
	{name: "spool_metrics_series_dropped", kind: "gauge", labels: []string{LabelKind}, help: "Topics or groups left out of this scrape by the cardinality cap."},
}

const (
	fMessagesIn = iota
	fThroughputIn
	fMessageSize
	fMessagesOut
	fThroughputOut
	fSendToDLQ
	fLagMessages
	fLagLatency
	fInflight
	fQueueingLatency
	fReady
	fCommits
	fRollbacks
	fHalf
	fProducerConns
	fConsumerConns
	fTopicNumber
	fGroupNumber
	fWatermark
	fPermission
	fRPCLatency
	fStorageSize
	fFlushBehind
	fDispatchBehind
	fReserveTime
	fTimerEnqueueLag
	fTimerEnqueueLatency
	fTimerDequeueLag
	fTimerDequeueLatency
	fTimingMessages
	fTimerEnqueueTotal
	fTimerDequeueTotal
	fTimerSnapshot
	fPutLockHold
	fFsync
	fBusy
	fColdReadBytes
	fColdReadLimit
	fColdReadThrottled
	fReplicationLag
	fDropped
	numFamilies
)

// Names lists every metric family the broker collector exposes.
func Names() []string {
	out := make([]string, len(families))
	for i, f := range families {
		out[i] = f.name
	}
	return out
}

// Defaults of the cardinality caps.
const (
	DefaultMaxTopics = 1000
	DefaultMaxGroups = 1000
)

// collector turns a Source's Snapshot into the families above.
type collector struct {
	src    Source
	descs  [numFamilies]*prometheus.Desc
	topics admitter
	groups admitter
}

func newCollector(src Source, constLabels prometheus.Labels, maxTopics, maxGroups int) *collector {
	if len(families) != numFamilies {
		panic("metrics: family table and index constants disagree")
	}
	c := &collector{src: src, topics: admitter{max: maxTopics}, groups: admitter{max: maxGroups}}
	for i, f := range families {
		c.descs[i] = prometheus.NewDesc(f.name, f.help, f.labels, constLabels)
	}
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func boolLabel(b bool) string { return strconv.FormatBool(b) }

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Snapshot()
	if s == nil {
		return
	}
	counter := func(f int, v uint64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[f], prometheus.CounterValue, float64(v), lv...)
	}
	gauge := func(f int, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[f], prometheus.GaugeValue, v, lv...)
	}
	histogram := func(f int, h *Histogram, lv ...string) {
		if h == nil {
			return
		}
		buckets := make(map[float64]uint64, len(h.Bounds))
		for i, b := range h.Bounds {
			if i < len(h.Counts) {
				buckets[b] = h.Counts[i]
			}
		}
		ch <- prometheus.MustNewConstHistogram(c.descs[f], h.Count, h.Sum, buckets, lv...)
	}

	topicNames := make([]string, 0, len(s.Topics))
	for _, t := range s.Topics {
		topicNames = append(topicNames, t.Topic)
	}
	topicOK, topicsDropped := c.topics.admit(topicNames)
	groupNames := make([]string, 0, len(s.Groups)+len(s.ConsumerConnections))
	for _, g := range s.Groups {
		groupNames = append(groupNames, g.Group)
	}
	for _, g := range s.ConsumerConnections {
		groupNames = append(groupNames, g.Group)
	}
	groupOK, groupsDropped := c.groups.admit(groupNames)

	for _, t := range s.Topics {
		if !topicOK[t.Topic] {
			continue
		}
		lv := []string{t.Topic, t.MessageType, boolLabel(t.IsSystem)}
		counter(fMessagesIn, t.MessagesIn, lv...)
		counter(fThroughputIn, t.BytesIn, lv...)
		histogram(fMessageSize, t.MessageSize, lv...)
		counter(fCommits, t.Commits, t.Topic)
		counter(fRollbacks, t.Rollbacks, t.Topic)
		gauge(fHalf, float64(t.HalfMessages), t.Topic)
		gauge(fTimingMessages, float64(t.TimingMessages), t.Topic)
		counter(fTimerEnqueueTotal, t.TimerEnqueued, t.Topic)
		counter(fTimerDequeueTotal, t.TimerDequeued, t.Topic)
	}
	for _, g := range s.Groups {
		if !groupOK[g.Group] {
			continue
		}
		out := []string{g.Topic, g.Group, boolLabel(g.IsSystem)}
		counter(fMessagesOut, g.MessagesOut, out...)
		counter(fThroughputOut, g.BytesOut, out...)
		counter(fSendToDLQ, g.SentToDLQ, g.Group, g.Topic, boolLabel(g.IsSystem))
		lag := []string{g.Group, g.Topic, boolLabel(g.IsRetry), boolLabel(g.IsSystem)}
		gauge(fLagMessages, float64(g.LagMessages), lag...)
		gauge(fLagLatency, float64(g.LagLatencyMs), lag...)
		gauge(fInflight, float64(g.InflightMessages), lag...)
		gauge(fQueueingLatency, float64(g.QueueingLatencyMs), lag...)
		gauge(fReady, float64(g.ReadyMessages), lag...)
	}
	for _, p := range s.ProducerConnections {
		gauge(fProducerConns, float64(p.Count), p.Language, p.Version, ProtocolRemoting)
	}
	for _, cc := range s.ConsumerConnections {
		if !groupOK[cc.Group] {
			continue
		}
		gauge(fConsumerConns, float64(cc.Count), cc.Group, cc.Language, cc.Version, cc.ConsumeMode, ProtocolRemoting, boolLabel(cc.IsSystem))
	}
	gauge(fTopicNumber, float64(s.TopicNumber))
	gauge(fGroupNumber, float64(s.ConsumerGroupNumber))
	for _, p := range s.Processors {
		gauge(fWatermark, float64(p.Waiting), p.Processor)
	}
	gauge(fPermission, float64(s.BrokerPermission))
	for i := range s.RPC {
		r := &s.RPC[i]
		histogram(fRPCLatency, &r.Latency, ProtocolRemoting, r.RequestCode, r.ResponseCode, boolLabel(r.IsLongPolling), r.Result)
	}
	st := []string{"local", "disk"}
	gauge(fStorageSize, float64(s.Storage.SizeBytes), st...)
	gauge(fFlushBehind, float64(s.Storage.FlushBehindBytes), st...)
	gauge(fDispatchBehind, float64(s.Storage.DispatchBehindBytes), st...)
	gauge(fReserveTime, float64(s.Storage.MessageReserveTimeMs), st...)
	gauge(fTimerEnqueueLag, float64(s.Timer.EnqueueLag))
	gauge(fTimerEnqueueLatency, float64(s.Timer.EnqueueLatencyMs))
	gauge(fTimerDequeueLag, float64(s.Timer.DequeueLag))
	gauge(fTimerDequeueLatency, float64(s.Timer.DequeueLatencyMs))
	for _, b := range s.Timer.Snapshot {
		gauge(fTimerSnapshot, float64(b.Messages), strconv.FormatInt(b.BoundSeconds, 10))
	}
	histogram(fPutLockHold, s.Spool.PutLockHold)
	histogram(fFsync, s.Spool.Fsync)
	for _, b := range s.Spool.Busy {
		counter(fBusy, b.Count, b.Kind)
	}
	counter(fColdReadBytes, s.Spool.ColdReadBytes)
	gauge(fColdReadLimit, s.Spool.ColdReadLimitBytesPerSecond)
	counter(fColdReadThrottled, s.Spool.ColdReadThrottled)
	if s.Spool.HasReplication {
		gauge(fReplicationLag, float64(s.Spool.ReplicationLagBytes))
	}
	gauge(fDropped, float64(topicsDropped), "topic")
	gauge(fDropped, float64(groupsDropped), "consumer_group")
}

// admitter keeps the names (topics or groups) that have series: names are
// admitted in the order they first appear, up to max, and keep their
// place while the Source reports them.
type admitter struct {
	mu       sync.Mutex
	max      int
	admitted map[string]bool
}

// admit returns the admitted names among seen and how many distinct names
// of seen were left out.
func (a *admitter) admit(seen []string) (map[string]bool, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	distinct := make(map[string]bool, len(seen))
	for _, n := range seen {
		distinct[n] = true
	}
	for n := range a.admitted {
		if !distinct[n] {
			delete(a.admitted, n)
		}
	}
	if a.admitted == nil {
		a.admitted = make(map[string]bool)
	}
	fresh := make([]string, 0)
	for n := range distinct {
		if !a.admitted[n] {
			fresh = append(fresh, n)
		}
	}
	sort.Strings(fresh)
	dropped := 0
	for _, n := range fresh {
		if len(a.admitted) < a.max {
			a.admitted[n] = true
		} else {
			dropped++
		}
	}
	return maps(a.admitted), dropped
}

func maps(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// ParseLabels reads RocketMQ's metricsLabel ("k1:v1,k2:v2"), the labels
// added to every series; an empty string gives none.
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), ":")
		if !ok || k == "" {
			return nil, fmt.Errorf("metrics: metricsLabel entry %q is not key:value", pair)
		}
		if slices.Contains([]string{LabelCluster, LabelNodeType, LabelNodeID}, k) {
			return nil, fmt.Errorf("metrics: metricsLabel may not set %q", k)
		}
		out[k] = v
	}
	return out, nil
}
