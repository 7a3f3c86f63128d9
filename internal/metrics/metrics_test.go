package metrics

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func fullSnapshot() *Snapshot {
	h := &Histogram{Bounds: []float64{1024, 4096}, Counts: []uint64{3, 5}, Count: 6, Sum: 9000}
	lat := &Histogram{Bounds: []float64{0.001, 0.01}, Counts: []uint64{7, 9}, Count: 10, Sum: 0.05}
	return &Snapshot{
		BrokerPermission: 6, TopicNumber: 3, ConsumerGroupNumber: 2,
		Topics: []TopicFigures{{Topic: "t", MessageType: MessageNormal, MessagesIn: 10, BytesIn: 2000, MessageSize: h,
			Commits: 2, Rollbacks: 1, HalfMessages: 4, TimingMessages: 5, TimerEnqueued: 6, TimerDequeued: 7}},
		Groups: []GroupFigures{{Group: "g", Topic: "t", MessagesOut: 4, BytesOut: 800, SentToDLQ: 1,
			LagMessages: 6, LagLatencyMs: 1500, InflightMessages: 2, QueueingLatencyMs: 900, ReadyMessages: 4}},
		ProducerConnections: []ProducerConnections{{Language: "java", Version: "v5_3_3", Count: 2}},
		ConsumerConnections: []ConsumerConnections{{Group: "g", Language: "go", Version: "v2_1_2", ConsumeMode: "push", Count: 1}},
		Processors:          []ProcessorWatermark{{Processor: "send", Waiting: 3}},
		RPC: []RPCLatency{{RequestCode: "send_message", ResponseCode: "success", Result: "success",
			Latency: Histogram{Bounds: []float64{1, 10}, Counts: []uint64{4, 5}, Count: 5, Sum: 12}}},
		Storage: StorageFigures{SizeBytes: 1 << 30, FlushBehindBytes: 10, DispatchBehindBytes: 20, MessageReserveTimeMs: 3600000},
		Timer:   TimerFigures{EnqueueLag: 1, EnqueueLatencyMs: 2, DequeueLag: 3, DequeueLatencyMs: 4, Snapshot: []TimerBound{{BoundSeconds: 60, Messages: 8}}},
		Spool: SpoolFigures{PutLockHold: lat, Fsync: lat, Busy: []KindCount{{Kind: "send_lock", Count: 3}},
			ColdReadBytes: 4096, ColdReadLimitBytesPerSecond: 1 << 20, ColdReadThrottled: 2,
			HasReplication: true, ReplicationLagBytes: 77},
	}
}

// scrape serves reg through Handler and parses the exposition.
func scrape(t *testing.T, o Options) map[string]*dto.MetricFamily {
	t.Helper()
	reg, err := NewRegistry(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(reg))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func labelNames(m *dto.Metric) []string {
	var out []string
	for _, l := range m.GetLabel() {
		out = append(out, l.GetName())
	}
	sort.Strings(out)
	return out
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func TestScrapeHasRocketMQNamesAndLabels(t *testing.T) {
	fams := scrape(t, Options{Cluster: "DefaultCluster", NodeID: "broker-a", Labels: map[string]string{"env": "test"},
		Source: SourceFunc(fullSnapshot)})
	constant := []string{LabelCluster, "env", LabelNodeID, LabelNodeType}
	for _, f := range families {
		mf, ok := fams[f.name]
		if !ok {
			t.Errorf("%s missing", f.name)
			continue
		}
		if got := strings.ToLower(mf.GetType().String()); got != f.kind {
			t.Errorf("%s is a %s, want %s", f.name, got, f.kind)
		}
		want := append(slices.Clone(constant), f.labels...)
		sort.Strings(want)
		for _, m := range mf.GetMetric() {
			if got := labelNames(m); !slices.Equal(got, want) {
				t.Errorf("%s labels %v, want %v", f.name, got, want)
			}
			if labelValue(m, LabelCluster) != "DefaultCluster" || labelValue(m, LabelNodeType) != "broker" ||
				labelValue(m, LabelNodeID) != "broker-a" || labelValue(m, "env") != "test" {
				t.Errorf("%s constant labels %v", f.name, m.GetLabel())
			}
		}
	}
	// The names, spelled out, so a rename of the table fails here.
	for _, n := range []string{"rocketmq_messages_in_total", "rocketmq_messages_out_total", "rocketmq_throughput_in_total",
		"rocketmq_throughput_out_total", "rocketmq_message_size", "rocketmq_producer_connections", "rocketmq_consumer_connections",
		"rocketmq_consumer_lag_messages", "rocketmq_consumer_lag_latency", "rocketmq_consumer_inflight_messages",
		"rocketmq_consumer_queueing_latency", "rocketmq_consumer_ready_messages", "rocketmq_send_to_dlq_messages_total",
		"rocketmq_commit_messages_total", "rocketmq_rollback_messages_total", "rocketmq_half_messages", "rocketmq_topic_number",
		"rocketmq_consumer_group_number", "rocketmq_processor_watermark", "rocketmq_broker_permission", "rocketmq_rpc_latency",
		"rocketmq_storage_size", "rocketmq_storage_flush_behind_bytes", "rocketmq_storage_dispatch_behind_bytes",
		"rocketmq_storage_message_reserve_time", "rocketmq_timer_enqueue_lag", "rocketmq_timer_dequeue_lag",
		"rocketmq_timer_enqueue_latency", "rocketmq_timer_dequeue_latency", "rocketmq_timing_messages",
		"spool_put_lock_hold_seconds", "spool_fsync_latency_seconds", "spool_busy_answers_total", "spool_cold_read_bytes_total",
		"spool_replication_lag_bytes"} {
		if _, ok := fams[n]; !ok {
			t.Errorf("%s missing", n)
		}
	}
	one := func(name string) *dto.Metric {
		t.Helper()
		mf := fams[name]
		if mf == nil || len(mf.GetMetric()) != 1 {
			t.Fatalf("%s: %v", name, mf)
		}
		return mf.GetMetric()[0]
	}
	if m := one("rocketmq_messages_in_total"); m.GetCounter().GetValue() != 10 || labelValue(m, LabelTopic) != "t" ||
		labelValue(m, LabelMessageType) != "normal" || labelValue(m, LabelIsSystem) != "false" {
		t.Errorf("messages in %v", m)
	}
	if m := one("rocketmq_consumer_lag_messages"); m.GetGauge().GetValue() != 6 || labelValue(m, LabelConsumerGroup) != "g" ||
		labelValue(m, LabelIsRetry) != "false" {
		t.Errorf("lag %v", m)
	}
	if m := one("rocketmq_message_size"); m.GetHistogram().GetSampleCount() != 6 || len(m.GetHistogram().GetBucket()) != 3 ||
		m.GetHistogram().GetBucket()[1].GetCumulativeCount() != 5 {
		t.Errorf("message size %v", m)
	}
	if m := one("rocketmq_rpc_latency"); labelValue(m, LabelRequestCode) != "send_message" || labelValue(m, LabelProtocolType) != "remoting" {
		t.Errorf("rpc %v", m)
	}
	if m := one("rocketmq_storage_size"); labelValue(m, LabelStorageType) != "local" || labelValue(m, LabelStorageMedium) != "disk" {
		t.Errorf("storage %v", m)
	}
	if m := one("spool_replication_lag_bytes"); m.GetGauge().GetValue() != 77 {
		t.Errorf("replication %v", m)
	}
	// The Go runtime collectors ride along.
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("go_goroutines missing")
	}
}

func TestNoReplicationNoSeries(t *testing.T) {
	s := fullSnapshot()
	s.Spool.HasReplication = false
	s.Spool.PutLockHold = nil
	fams := scrape(t, Options{Source: SourceFunc(func() *Snapshot { return s }), NoRuntime: true})
	for _, n := range []string{"spool_replication_lag_bytes", "spool_put_lock_hold_seconds", "go_goroutines"} {
		if _, ok := fams[n]; ok {
			t.Errorf("%s present", n)
		}
	}
}

func TestTopicAndGroupCapsKeepSeriesStable(t *testing.T) {
	var mu sync.Mutex
	topics := []string{"t1", "t2", "t3", "t4"}
	groups := []string{"g1", "g2", "g3"}
	src := SourceFunc(func() *Snapshot {
		mu.Lock()
		defer mu.Unlock()
		s := &Snapshot{}
		for _, tp := range topics {
			s.Topics = append(s.Topics, TopicFigures{Topic: tp, MessageType: MessageNormal})
		}
		for _, g := range groups {
			s.Groups = append(s.Groups, GroupFigures{Group: g, Topic: "t1"})
			s.ConsumerConnections = append(s.ConsumerConnections, ConsumerConnections{Group: g, Count: 1})
		}
		return s
	})
	reg, err := NewRegistry(Options{Source: src, MaxTopics: 2, MaxGroups: 1, NoRuntime: true})
	if err != nil {
		t.Fatal(err)
	}
	gather := func() (topicsSeen, groupsSeen []string, dropped map[string]float64) {
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		dropped = map[string]float64{}
		for _, mf := range fams {
			for _, m := range mf.GetMetric() {
				switch mf.GetName() {
				case "rocketmq_messages_in_total":
					topicsSeen = append(topicsSeen, labelValue(m, LabelTopic))
				case "rocketmq_consumer_lag_messages", "rocketmq_consumer_connections":
					groupsSeen = append(groupsSeen, mf.GetName()+"/"+labelValue(m, LabelConsumerGroup))
				case "spool_metrics_series_dropped":
					dropped[labelValue(m, LabelKind)] = m.GetGauge().GetValue()
				}
			}
		}
		sort.Strings(topicsSeen)
		sort.Strings(groupsSeen)
		return
	}
	tp, gp, d := gather()
	if !slices.Equal(tp, []string{"t1", "t2"}) || d["topic"] != 2 {
		t.Fatalf("topics %v dropped %v", tp, d)
	}
	if !slices.Equal(gp, []string{"rocketmq_consumer_connections/g1", "rocketmq_consumer_lag_messages/g1"}) || d["consumer_group"] != 2 {
		t.Fatalf("groups %v dropped %v", gp, d)
	}
	// t0 sorts first but t1 and t2 keep their series; when t1 goes, the
	// freed place goes to the first newcomer.
	mu.Lock()
	topics = []string{"t0", "t2", "t3", "t4"}
	mu.Unlock()
	if tp, _, d = gather(); !slices.Equal(tp, []string{"t0", "t2"}) || d["topic"] != 2 {
		t.Fatalf("after t1 left: %v dropped %v", tp, d)
	}
	mu.Lock()
	topics = []string{"t2", "t9", "t0"}
	mu.Unlock()
	if tp, _, _ = gather(); !slices.Equal(tp, []string{"t0", "t2"}) {
		t.Fatalf("sticky: %v", tp)
	}
}

func TestParseLabels(t *testing.T) {
	got, err := ParseLabels("env:prod, region:eu-1")
	if err != nil || len(got) != 2 || got["env"] != "prod" || got["region"] != "eu-1" {
		t.Fatalf("%v %v", got, err)
	}
	if got, err := ParseLabels(""); err != nil || len(got) != 0 {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"env", ":x", "cluster:c"} {
		if _, err := ParseLabels(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := NewRegistry(Options{Source: SourceFunc(fullSnapshot), Labels: map[string]string{"bad-name": "x"}}); err == nil {
		t.Error("invalid label name accepted")
	}
	if _, err := NewRegistry(Options{}); err == nil {
		t.Error("no source accepted")
	}
}

func TestListenServesMetrics(t *testing.T) {
	if Addr("", 0) != ":5557" || Addr("10.0.0.1", 9000) != "10.0.0.1:9000" {
		t.Fatalf("Addr %q %q", Addr("", 0), Addr("10.0.0.1", 9000))
	}
	reg, err := NewRegistry(Options{Source: SourceFunc(fullSnapshot), NoRuntime: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Listen("127.0.0.1:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	resp, err := http.Get("http://" + s.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `rocketmq_consumer_lag_messages{cluster="",consumer_group="g"`) {
		t.Fatalf("body lacks the lag series:\n%s", body)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
