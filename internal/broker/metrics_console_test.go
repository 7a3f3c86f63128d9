package broker

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/internal/brokerstats"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

// freePort is a TCP port free a moment ago on 127.0.0.1.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// sample finds the value of the series of family name whose labels
// include want.
func sample(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	t.Helper()
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// After 5 messages are produced to a topic, 3 pulled and committed by a
// group, /metrics shows them under RocketMQ 5's names and labels, the
// console shows the group's lag, and VIEW_BROKER_STATS_DATA answers the
// stats items.
func TestMetricsAndConsoleAfterProduceAndConsume(t *testing.T) {
	e := startBroker(t, func(c *Config, _ *store.Config) {
		c.MetricsExporterType = "PROM"
		c.MetricsPromExporterHost = "127.0.0.1"
		c.MetricsPromExporterPort = freePort(t)
		c.MetricsLabel = "env:test"
	})
	addr := e.b.HTTPAddr()
	if addr == "" {
		t.Fatal("no HTTP listener with metricsExporterType=PROM")
	}
	const topic, group = "MT1", "mgroup"
	e.createTopic(topic, 1)
	if r := e.invoke(goRequest(remoting.HeartBeat, nil, goHeartbeat("10.0.0.9@1", group, topic, "*"))); r.Code != remoting.Success {
		t.Fatalf("heartbeat: %d %q", r.Code, r.Remark)
	}
	var first *remoting.Command
	for i := 0; i < 5; i++ {
		r := e.mustSend(topic, 0, "", "message body")
		if first == nil {
			first = r
		}
	}
	e.waitDispatched(topic, 0, 5)
	pr := e.invoke(pullReq(group, topic, 0, 0, 0, 0, "*"))
	if pr.Code != remoting.Success {
		t.Fatalf("pull: %d %q", pr.Code, pr.Remark)
	}
	if n := len(decodeRecords(t, pr.Body)); n != 5 {
		t.Fatalf("pulled %d messages, want 5", n)
	}
	if r := e.invoke(goRequest(remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": "0", "commitOffset": "3"}, nil)); r.Code != remoting.Success {
		t.Fatalf("commit: %d %q", r.Code, r.Remark)
	}

	// One message sent back for retry: SNDBCK_PUT_NUMS counts it under the
	// original topic.
	msgID := first.ExtFields["msgId"]
	_, off, err := message.ParseOffsetMsgID(msgID)
	if err != nil {
		t.Fatal(err)
	}
	if r := e.invoke(goRequest(remoting.ConsumerSendMsgBack, map[string]string{
		"offset": itoa64(off), "group": group, "delayLevel": "0", "originMsgId": msgID, "originTopic": topic}, nil)); r.Code != remoting.Success {
		t.Fatalf("send back: %d %q", r.Code, r.Remark)
	}
	if v, n := e.b.traffic.Totals(brokerstats.SndbckPutNums, brokerstats.Key{Topic: topic, Group: group}); v != 1 || n != 1 {
		t.Errorf("SNDBCK_PUT_NUMS %s@%s = %d (%d increments), want 1", topic, group, v, n)
	}

	code, body := httpGet(t, "http://"+addr+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	common := map[string]string{"cluster": "DefaultCluster", "node_type": "broker", "node_id": "broker-a", "env": "test"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range common {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"rocketmq_messages_in_total", with(map[string]string{"topic": topic}), 5},
		{"rocketmq_throughput_in_total", with(map[string]string{"topic": topic}), -1},
		{"rocketmq_messages_out_total", with(map[string]string{"topic": topic, "consumer_group": group}), 5},
		{"rocketmq_consumer_lag_messages", with(map[string]string{"topic": topic, "consumer_group": group}), 2},
		{"rocketmq_producer_connections", with(map[string]string{"language": "GO"}), 1},
		{"rocketmq_consumer_connections", with(map[string]string{"consumer_group": group, "language": "GO"}), 1},
		{"rocketmq_topic_number", with(nil), -1},
		{"rocketmq_consumer_group_number", with(nil), -1},
		{"rocketmq_storage_size", with(nil), -1},
	} {
		got, ok := sample(t, fams, c.name, c.labels)
		if !ok {
			t.Errorf("%s{%v}: no series in\n%s", c.name, c.labels, grepLines(body, c.name))
			continue
		}
		if c.want >= 0 && got != c.want {
			t.Errorf("%s{%v} = %v, want %v", c.name, c.labels, got, c.want)
		}
		if c.want < 0 && got <= 0 {
			t.Errorf("%s{%v} = %v, want > 0", c.name, c.labels, got)
		}
	}

	// The console's group page shows produced 5, committed 3, lag 2.
	code, page := httpGet(t, "http://"+addr+"/group?name="+group)
	if code != 200 {
		t.Fatalf("/group: %d\n%s", code, page)
	}
	if want := `<td>` + topic + `</td><td>0</td><td>5</td><td>3</td><td class="lag">2</td>`; !strings.Contains(page, want) {
		t.Errorf("group page lacks %q\n%s", want, page)
	}
	// The console finds the first message by its id.
	if _, page := httpGet(t, "http://"+addr+"/message?id="+msgID); !strings.Contains(page, "1 message(s) found") || !strings.Contains(page, msgID) {
		t.Errorf("lookup of %s:\n%s", msgID, page)
	}
	if _, page := httpGet(t, "http://"+addr+"/"); !strings.Contains(page, "broker-a") {
		t.Errorf("front page lacks the broker name\n%s", page)
	}

	// VIEW_BROKER_STATS_DATA after a minute sample.
	e.b.traffic.SampleMinute()
	resp := e.invoke(goRequest(remoting.ViewBrokerStatsData, map[string]string{"statsName": "TOPIC_PUT_NUMS", "statsKey": topic}, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("VIEW_BROKER_STATS_DATA: %d %q", resp.Code, resp.Remark)
	}
	var st adminbody.BrokerStatsData
	if err := adminbody.Unmarshal(resp.Body, &st); err != nil {
		t.Fatalf("decode %s: %v", resp.Body, err)
	}
	if !strings.Contains(string(resp.Body), `"statsMinute"`) {
		t.Errorf("body %s lacks statsMinute", resp.Body)
	}
	resp = e.invoke(goRequest(remoting.ViewBrokerStatsData, map[string]string{"statsName": "GROUP_GET_NUMS", "statsKey": "nope@" + group}, nil))
	if resp.Code != remoting.SystemError || resp.Remark != "The stats <GROUP_GET_NUMS> <nope@"+group+"> not exist" {
		t.Errorf("absent item: %d %q", resp.Code, resp.Remark)
	}
	if _, n := e.b.traffic.Totals(brokerstats.GroupGetLatency, brokerstats.Key{Topic: topic, Group: group, QueueID: 0}); n != 1 {
		t.Errorf("GROUP_GET_LATENCY 0@%s@%s: %d increments, want 1 (one pull)", topic, group, n)
	}
	if _, n := e.b.traffic.Totals(brokerstats.TopicPutLatency, brokerstats.Key{Topic: topic, QueueID: 0}); n != 5 {
		t.Errorf("TOPIC_PUT_LATENCY 0@%s: %d increments, want 5 (one a send)", topic, n)
	}
	if _, ok := e.b.traffic.View("QUEUE_PUT_NUMS", topic+"@0"); !ok {
		t.Errorf("no QUEUE_PUT_NUMS %s@0 with enableDetailStat=true", topic)
	}
	if v, _ := e.b.traffic.Totals(brokerstats.TopicPutNums, brokerstats.Key{Topic: topic}); v != 5 {
		t.Errorf("TOPIC_PUT_NUMS total %d, want 5", v)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// No listener is opened unless metricsExporterType is PROM.
func TestNoHTTPListenerByDefault(t *testing.T) {
	e := startBroker(t, nil)
	if a := e.b.HTTPAddr(); a != "" {
		t.Fatalf("HTTP listener on %s with metricsExporterType=%s", a, e.b.Config().MetricsExporterType)
	}
}
