package console

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type fakeBroker struct {
	groups map[string]Group
	msgs   []Message
	tp     Throughput
}

func (f *fakeBroker) Overview() Overview {
	return Overview{Cluster: "DefaultCluster", BrokerName: "broker-a", Addr: "10.0.0.1:10911", Permission: 6, Version: "V5_3_3", Topics: 2, Groups: 1}
}

func (f *fakeBroker) Topics() []Topic {
	return []Topic{{Name: "orders", ReadQueues: 2, WriteQueues: 2, Perm: 6, MessagesIn: 30, PutTps: 2.5,
		Queues: []Queue{{ID: 0, MinOffset: 0, MaxOffset: 20}, {ID: 1, MinOffset: 5, MaxOffset: 15}}}}
}

func (f *fakeBroker) Groups() []GroupSummary {
	return []GroupSummary{{Name: "billing", Online: 1, Lag: 12, Topics: 1}}
}

func (f *fakeBroker) Group(name string) (Group, bool) {
	g, ok := f.groups[name]
	return g, ok
}

func (f *fakeBroker) MessageByID(topic, id string) ([]Message, error) {
	if id == "bad" {
		return nil, errors.New("message id bad is not valid")
	}
	for _, m := range f.msgs {
		if m.MsgID == id || m.UniqKey == id {
			return []Message{m}, nil
		}
	}
	return nil, nil
}

func (f *fakeBroker) MessagesByKey(topic, key string) ([]Message, error) {
	var out []Message
	for _, m := range f.msgs {
		if m.Topic == topic && strings.Contains(" "+m.Keys+" ", " "+key+" ") {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *fakeBroker) Throughput() Throughput { return f.tp }

func newFake() *fakeBroker {
	return &fakeBroker{
		groups: map[string]Group{"billing": {Name: "billing", Online: 1, Queues: []GroupQueue{
			{Topic: "orders", QueueID: 0, Produced: 20, Committed: 10, Lag: 10, LastConsumed: time.UnixMilli(1700000000000)},
			{Topic: "orders", QueueID: 1, Produced: 15, Committed: 13, Lag: 2},
		}}},
		msgs: []Message{{MsgID: "0A00000100002A9F0000000000000000", UniqKey: "U1", Topic: "orders", Keys: "order-7 k2", Body: "<hello>"}},
		tp:   Throughput{AtMillis: 1000, MessagesIn: 30, MessagesOut: 18, BytesIn: 3000, BytesOut: 1800},
	}
}

func get(t *testing.T, h http.Handler, url string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", url, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

func TestPages(t *testing.T) {
	c := New(newFake())
	for _, tc := range []struct {
		url  string
		code int
		want []string
	}{
		{"/", 200, []string{"DefaultCluster", "broker-a", "10.0.0.1:10911", "RW-", `<canvas id="chart"`, "/static/chart.js"}},
		{"/topics", 200, []string{`href="/topic?name=orders"`, "2/2", "<td>30</td>", "2.5"}},
		{"/topic?name=orders", 200, []string{"<td>1</td><td>5</td><td>15</td><td>10</td>"}},
		{"/topic?name=nope", 404, []string{"no topic nope"}},
		{"/groups", 200, []string{`href="/group?name=billing"`, `<td class="lag">12</td>`}},
		{"/group?name=billing", 200, []string{
			"<td>orders</td><td>0</td><td>20</td><td>10</td><td class=\"lag\">10</td>",
			"<td>orders</td><td>1</td><td>15</td><td>13</td><td class=\"lag\">2</td><td>-</td>",
			`id="lag-total">12<`,
		}},
		{"/group?name=nope", 404, []string{"no consumer group nope"}},
		{"/message?id=U1", 200, []string{"1 message(s) found", "0A00000100002A9F0000000000000000", "&lt;hello&gt;"}},
		{"/message?id=bad", 200, []string{"message id bad is not valid"}},
		{"/message?topic=orders&key=order-7", 200, []string{"1 message(s) found"}},
		{"/message?key=order-7", 200, []string{"a lookup by key needs its topic"}},
		{"/static/chart.js", 200, []string{"/api/throughput"}},
		{"/static/style.css", 200, []string{"td.lag"}},
		{"/nothing", 404, nil},
	} {
		code, body := get(t, c, tc.url)
		if code != tc.code {
			t.Errorf("%s: status %d, want %d\n%s", tc.url, code, tc.code, body)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: body lacks %q\n%s", tc.url, w, body)
			}
		}
	}
}

func TestThroughputJSON(t *testing.T) {
	code, body := get(t, New(newFake()), "/api/throughput")
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	var got map[string]int64
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"at": 1000, "messagesIn": 30, "messagesOut": 18, "bytesIn": 3000, "bytesOut": 1800}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
}

func TestNoExternalReferences(t *testing.T) {
	c := New(newFake())
	for _, u := range []string{"/", "/topics", "/groups", "/group?name=billing", "/message", "/static/chart.js", "/static/style.css"} {
		_, body := get(t, c, u)
		if strings.Contains(body, "http://") || strings.Contains(body, "https://") {
			t.Errorf("%s refers to another host", u)
		}
	}
}
