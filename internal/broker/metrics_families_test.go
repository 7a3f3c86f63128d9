package broker

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/spoolmq/spool/internal/metrics"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

// scrape reads the broker's /metrics.
func scrape(t *testing.T, e *testEnv) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	code, body := httpGet(t, "http://"+e.b.HTTPAddr()+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams, body
}

// histCount is the sample count of the histogram series of name whose
// labels include want (-1: none).
func histCount(fams map[string]*dto.MetricFamily, name string, want map[string]string) int64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
				continue next
			}
		}
		if m.Histogram != nil {
			return int64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// TestEveryMetricFamilyIsFed: after a produce, a consume, a message moved
// to the dead-letter queue, a committed, a rolled-back and a pending
// transaction and a pending timer message, every family of /metrics but
// replication's has a series with the figure it stands for; deleting the
// topic and the group takes their series away.
func TestEveryMetricFamilyIsFed(t *testing.T) {
	e := startBroker(t, func(c *Config, _ *store.Config) {
		c.MetricsExporterType = "PROM"
		c.MetricsPromExporterHost = "127.0.0.1"
		c.MetricsPromExporterPort = freePort(t)
	})
	const topic, group = "MF1", "mfgroup"
	e.createTopic(topic, 1)
	if r := e.invoke(goRequest(remoting.HeartBeat, nil, goHeartbeat("10.0.0.8@1", group, topic, "*"))); r.Code != remoting.Success {
		t.Fatalf("heartbeat: %d %q", r.Code, r.Remark)
	}
	var first *remoting.Command
	for i := 0; i < 5; i++ {
		if r := e.mustSend(topic, 0, "", "message body"); first == nil {
			first = r
		}
	}
	e.waitDispatched(topic, 0, 5)
	// Pull 5, commit 3: 2 in flight, none ready.
	if pr := e.invoke(pullReq(group, topic, 0, 0, 0, 0, "*")); pr.Code != remoting.Success || len(decodeRecords(t, pr.Body)) != 5 {
		t.Fatalf("pull: %d %q", pr.Code, pr.Remark)
	}
	if r := e.invoke(goRequest(remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": "0", "commitOffset": "3"}, nil)); r.Code != remoting.Success {
		t.Fatalf("commit: %d %q", r.Code, r.Remark)
	}
	// A pull past the end with the suspend flag: held for 1 ms, then
	// answered (a long-polled answer).
	if pr := e.invoke(pullReq(group, topic, 0, 5, pullFlagSuspend, 1, "*")); pr.Code != remoting.PullNotFound {
		t.Fatalf("held pull: %d %q", pr.Code, pr.Remark)
	}
	// One message straight to the dead-letter queue (delay level -1).
	_, off, err := message.ParseOffsetMsgID(first.ExtFields["msgId"])
	if err != nil {
		t.Fatal(err)
	}
	if r := e.invoke(goRequest(remoting.ConsumerSendMsgBack, map[string]string{
		"offset": itoa64(off), "group": group, "delayLevel": "-1", "originMsgId": first.ExtFields["msgId"], "originTopic": topic}, nil)); r.Code != remoting.Success {
		t.Fatalf("send back to the DLQ: %d %q", r.Code, r.Remark)
	}
	// Three halves of topic: one committed, one rolled back, one pending.
	var halves []*remoting.Command
	for i, u := range []string{"H1", "H2", "H3"} {
		req := sendV1(topic, 0, map[string]string{"TRAN_MSG": "true", "PGROUP": "pg", "UNIQ_KEY": u}, []byte("half"))
		req.ExtFields["sysFlag"] = "4"
		r := e.invoke(req)
		if r.Code != remoting.Success {
			t.Fatalf("half %d: %d %q", i, r.Code, r.Remark)
		}
		halves = append(halves, r)
	}
	e.waitDispatched("RMQ_SYS_TRANS_HALF_TOPIC", 0, 3)
	for i, state := range []string{"8", "12"} {
		_, phy, err := message.ParseOffsetMsgID(halves[i].ExtFields["msgId"])
		if err != nil {
			t.Fatal(err)
		}
		if r := e.invoke(goRequest(remoting.EndTransaction, map[string]string{
			"producerGroup": "pg", "tranStateTableOffset": halves[i].ExtFields["queueOffset"],
			"commitLogOffset": itoa64(phy), "commitOrRollback": state, "fromTransactionCheck": "false",
			"msgId": halves[i].ExtFields["transactionId"]}, nil)); r.Code != remoting.Success {
			t.Fatalf("end transaction %s: %d %q", state, r.Code, r.Remark)
		}
	}
	// A timer message due in 10 minutes: pending in the wheel.
	if r := e.invoke(sendV1(topic, 0, map[string]string{message.PropertyTimerDelaySec: "600"}, []byte("later"))); r.Code != remoting.Success {
		t.Fatalf("timer send: %d %q", r.Code, r.Remark)
	}
	waitFor(t, "the timer linked", func() bool { s, _ := e.b.TimerStats(); return s.EnqueueOffset == 1 })

	fams, body := scrape(t, e)
	for _, name := range metrics.Names() {
		if name == "spool_replication_lag_bytes" {
			continue // no replication here
		}
		if f := fams[name]; f == nil || len(f.Metric) == 0 {
			t.Errorf("%s has no series", name)
		}
	}
	tl := map[string]string{"topic": topic}
	gl := map[string]string{"topic": topic, "consumer_group": group}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"rocketmq_commit_messages_total", tl, 1},
		{"rocketmq_rollback_messages_total", tl, 1},
		{"rocketmq_half_messages", tl, 1},
		{"rocketmq_send_to_dlq_messages_total", gl, 1},
		{"rocketmq_consumer_inflight_messages", gl, 2},
		{"rocketmq_consumer_lag_messages", gl, -1}, // the committed message and the timer's delivery add to it
		{"rocketmq_timing_messages", tl, 1},
		{"rocketmq_timer_enqueue_total", tl, 1},
		{"rocketmq_timer_dequeue_total", tl, 0},
		{"rocketmq_timer_message_snapshot", map[string]string{"timer_bound_s": "900"}, 1},
		{"rocketmq_timer_enqueue_lag", nil, 0},
		{"rocketmq_processor_watermark", map[string]string{"processor": "send"}, 0},
		{"rocketmq_storage_message_reserve_time", nil, -1},
	} {
		got, ok := sample(t, fams, c.name, c.labels)
		if !ok {
			t.Errorf("%s{%v}: no series in\n%s", c.name, c.labels, grepLines(body, c.name))
			continue
		}
		if c.want >= 0 && got != c.want {
			t.Errorf("%s{%v} = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// The 5 sends to the topic (a committed half is not a send).
	if n := histCount(fams, "rocketmq_message_size", tl); n != 5 {
		t.Errorf("rocketmq_message_size{topic=%s} counts %d, want 5", topic, n)
	}
	if n := histCount(fams, "rocketmq_rpc_latency", map[string]string{"request_code": "send_message", "response_code": "success"}); n < 9 {
		t.Errorf("rocketmq_rpc_latency{send_message,success} counts %d, want >= 9 sends", n)
	}
	if n := histCount(fams, "rocketmq_rpc_latency", map[string]string{"request_code": "pull_message"}); n < 1 {
		t.Errorf("rocketmq_rpc_latency{pull_message} counts %d", n)
	}
	// result tells how the answer's write went, whatever its code;
	// is_long_polling marks the held pull's answer only.
	for _, c := range []struct {
		labels map[string]string
		want   int64
	}{
		{map[string]string{"request_code": "send_message", "response_code": "success", "is_long_polling": "false", "result": "success"}, 9},
		{map[string]string{"request_code": "pull_message", "response_code": "success", "is_long_polling": "false", "result": "success"}, 1},
		{map[string]string{"request_code": "pull_message", "response_code": "pull_not_found", "is_long_polling": "true", "result": "success"}, 1},
		{map[string]string{"request_code": "pull_message", "response_code": "pull_not_found", "is_long_polling": "false"}, -1},
		{map[string]string{"result": "write_channel_failed"}, -1},
	} {
		n := histCount(fams, "rocketmq_rpc_latency", c.labels)
		if (c.want < 0 && n != -1) || (c.want >= 0 && n < c.want) {
			t.Errorf("rocketmq_rpc_latency%v counts %d, want %d (-1: no series):\n%s", c.labels, n, c.want, grepLines(body, "rocketmq_rpc_latency_count"))
		}
	}

	// Deleting the group and the topic takes their series away.
	if r := e.invoke(goRequest(remoting.DeleteSubscriptionGroup, map[string]string{"groupName": group, "cleanOffset": "true"}, nil)); r.Code != remoting.Success {
		t.Fatalf("delete group: %d %q", r.Code, r.Remark)
	}
	if r := e.invoke(goRequest(remoting.DeleteTopicInBroker, map[string]string{"topic": topic}, nil)); r.Code != remoting.Success {
		t.Fatalf("delete topic: %d %q", r.Code, r.Remark)
	}
	fams, body = scrape(t, e)
	for _, name := range []string{"rocketmq_messages_in_total", "rocketmq_message_size", "rocketmq_commit_messages_total",
		"rocketmq_timing_messages", "rocketmq_messages_out_total", "rocketmq_send_to_dlq_messages_total"} {
		if f := fams[name]; f != nil {
			for _, m := range f.Metric {
				for _, l := range m.Label {
					if (l.GetName() == "topic" && l.GetValue() == topic) || (l.GetName() == "consumer_group" && l.GetValue() == group) {
						t.Errorf("%s keeps a series of the deleted topic or group:\n%s", name, grepLines(body, name))
					}
				}
			}
		}
	}
}
