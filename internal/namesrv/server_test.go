package namesrv

import (
	"encoding/json"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/config"
	"github.com/spoolmq/spool/remoting"
)

func testConfig(t *testing.T) Config {
	cfg := DefaultConfig()
	cfg.KVConfigPath = filepath.Join(t.TempDir(), "namesrv", "kvConfig.json")
	return cfg
}

// manualScan keeps the background scan off: the test calls
// scanNotActiveBrokers itself.
func manualScan(s *Server) { s.noScanLoop = true }

func newTestServer(t *testing.T, cfg Config, opts ...Option) *Server {
	t.Helper()
	s, err := New(cfg, nil, append([]Option{manualScan}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown() })
	return s
}

type brokerSpec struct {
	cluster, name, addr string
	id                  int64
	topics              map[string]TopicConfig
	version             DataVersion
	compressed          bool
	ext                 map[string]string
}

func topics(queues int32, names ...string) map[string]TopicConfig {
	m := make(map[string]TopicConfig, len(names))
	for _, n := range names {
		m[n] = TopicConfig{TopicName: n, ReadQueueNums: queues, WriteQueueNums: queues, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	}
	return m
}

func registerRequest(b brokerSpec) *remoting.Command {
	body := (&RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
		TopicConfigTable: b.topics, DataVersion: b.version}}).Encode(b.compressed)
	ext := map[string]string{
		"brokerName": b.name, "brokerAddr": b.addr, "clusterName": b.cluster,
		"haServerAddr": b.addr + "0", "brokerId": strconv.FormatInt(b.id, 10),
		"compressed": strconv.FormatBool(b.compressed), "enableActingMaster": "false",
		"bodyCrc32": strconv.FormatInt(int64(crc32.ChecksumIEEE(body)&0x7fffffff), 10),
	}
	for k, v := range b.ext {
		ext[k] = v
	}
	return remoting.NewRequest(remoting.RegisterBroker, ext, body)
}

func mustOK(t *testing.T, resp *remoting.Command) *remoting.Command {
	t.Helper()
	if resp == nil || resp.Code != remoting.Success {
		t.Fatalf("response %+v", resp)
	}
	if !resp.IsResponse() {
		t.Fatalf("response flag not set: %+v", resp)
	}
	return resp
}

func routeReq(topic string) *remoting.Command {
	return remoting.NewRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": topic}, nil)
}

func TestRouteUnknownTopic(t *testing.T) {
	s := newTestServer(t, testConfig(t))
	req := routeReq("NoSuchTopic")
	req.Opaque = 42
	resp := s.Handle(req)
	if resp.Code != remoting.TopicNotExist || resp.Remark != "No topic route info in name server for the topic: NoSuchTopic" {
		t.Fatalf("got %d %q", resp.Code, resp.Remark)
	}
	if resp.Opaque != 42 || len(resp.Body) != 0 {
		t.Fatalf("opaque %d body %q", resp.Opaque, resp.Body)
	}
}

func TestRouteJSONExact(t *testing.T) {
	s := newTestServer(t, testConfig(t))
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "DefaultCluster", name: "broker-b", addr: "10.0.0.2:10911", topics: topics(4, "TopicA")})))
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "DefaultCluster", name: "broker-a", addr: "10.0.0.1:10911", topics: topics(8, "TopicA")})))
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "DefaultCluster", name: "broker-a", addr: "10.0.0.3:10911", id: 1, topics: topics(8, "TopicA")})))
	resp := mustOK(t, s.Handle(routeReq("TopicA")))
	want := `{"brokerDatas":[` +
		`{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.3:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false},` +
		`{"brokerAddrs":{"0":"10.0.0.2:10911"},"brokerName":"broker-b","cluster":"DefaultCluster","enableActingMaster":false}],` +
		`"filterServerTable":{},"queueDatas":[` +
		`{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8},` +
		`{"brokerName":"broker-b","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`
	if string(resp.Body) != want {
		t.Fatalf("route body\n got %s\nwant %s", resp.Body, want)
	}
	// The Go client's own brokerAddrs split (raw text, ',' then first ':').
	var doc struct {
		BrokerDatas []struct {
			BrokerAddrs json.RawMessage `json:"brokerAddrs"`
		} `json:"brokerDatas"`
	}
	if err := json.Unmarshal(resp.Body, &doc); err != nil {
		t.Fatal(err)
	}
	raw := string(doc.BrokerDatas[0].BrokerAddrs)
	got := map[int64]string{}
	for _, part := range strings.Split(raw[1:len(raw)-1], ",") {
		i := strings.Index(part, ":")
		id, err := strconv.ParseInt(strings.ReplaceAll(part[:i], `"`, ""), 10, 64)
		if err != nil {
			t.Fatalf("id %q: %v", part[:i], err)
		}
		got[id] = strings.ReplaceAll(part[i+1:], `"`, "")
	}
	if !reflect.DeepEqual(got, map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.3:10911"}) {
		t.Fatalf("go-style split: %v", got)
	}
}

func TestRegisterResponse(t *testing.T) {
	cfg := testConfig(t)
	s := newTestServer(t, cfg)
	// No ORDER_TOPIC_CONFIG entries: no body.
	resp := mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "c", name: "a", addr: "m:1", topics: topics(1, "T")})))
	if resp.Body != nil || resp.Ext("masterAddr") != "" {
		t.Fatalf("master answer %+v", resp)
	}
	mustOK(t, s.Handle(remoting.NewRequest(remoting.PutKVConfig, map[string]string{"namespace": NamespaceOrderTopicConfig, "key": "T", "value": "a:1"}, nil)))
	resp = mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "c", name: "a", addr: "s:1", id: 1})))
	if resp.Ext("masterAddr") != "m:1" || resp.Ext("haServerAddr") != "m:10" {
		t.Fatalf("slave ext %v", resp.ExtFields)
	}
	if string(resp.Body) != `{"table":{"T":"a:1"}}` {
		t.Fatalf("body %s", resp.Body)
	}
	cfg.ReturnOrderTopicConfigToBroker = false
	s2 := newTestServer(t, cfg)
	if resp := mustOK(t, s2.Handle(registerRequest(brokerSpec{cluster: "c", name: "a", addr: "m:1"}))); resp.Body != nil {
		t.Fatalf("body with returnOrderTopicConfigToBroker=false: %s", resp.Body)
	}
}

func TestRegisterCompressed(t *testing.T) {
	s := newTestServer(t, testConfig(t))
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "c", name: "a", addr: "m:1", compressed: true, topics: topics(3, "T1", "T2")})))
	resp := mustOK(t, s.Handle(routeReq("T2")))
	if !strings.Contains(string(resp.Body), `"readQueueNums":3`) {
		t.Fatalf("route %s", resp.Body)
	}
	// A pre-5.0 broker's compressed body has no mapping section.
	req := remoting.NewRequest(remoting.RegisterBroker, map[string]string{"brokerName": "b", "brokerAddr": "o:1",
		"clusterName": "c", "haServerAddr": "", "brokerId": "0", "compressed": "true"},
		javaCompressed(`{"counter":1,"timestamp":1}`, []string{"Old 2 2 6 SINGLE_TAG {}"}, "[]", false))
	req.Version = 317
	mustOK(t, s.Handle(req))
	mustOK(t, s.Handle(routeReq("Old")))
}

func TestRegisterCRC(t *testing.T) {
	s := newTestServer(t, testConfig(t))
	req := registerRequest(brokerSpec{cluster: "c", name: "a", addr: "m:1", topics: topics(1, "T")})
	req.SetExt("bodyCrc32", "12345")
	resp := s.Handle(req)
	if resp.Code != remoting.SystemError || resp.Remark != "crc32 not match" {
		t.Fatalf("got %d %q", resp.Code, resp.Remark)
	}
	if s.Handle(routeReq("T")).Code != remoting.TopicNotExist {
		t.Fatal("a rejected registration was applied")
	}
	req.SetExt("bodyCrc32", "0") // zero: not checked
	mustOK(t, s.Handle(req))
}

func TestRegisterBadRequests(t *testing.T) {
	s := newTestServer(t, testConfig(t))
	good := func() *remoting.Command {
		return registerRequest(brokerSpec{cluster: "c", name: "a", addr: "m:1", topics: topics(1, "T")})
	}
	cases := map[string]func(r *remoting.Command){
		"no brokerName":      func(r *remoting.Command) { delete(r.ExtFields, "brokerName") },
		"no clusterName":     func(r *remoting.Command) { delete(r.ExtFields, "clusterName") },
		"no brokerId":        func(r *remoting.Command) { delete(r.ExtFields, "brokerId") },
		"bad brokerId":       func(r *remoting.Command) { r.SetExt("brokerId", "zero") },
		"comma in addr":      func(r *remoting.Command) { r.SetExt("brokerAddr", "a:1,b:2") },
		"garbage body":       func(r *remoting.Command) { r.Body = []byte("{{"); r.SetExt("bodyCrc32", "0") },
		"garbage compressed": func(r *remoting.Command) { r.SetExt("compressed", "true") },
	}
	for name, mutate := range cases {
		r := good()
		mutate(r)
		if resp := s.Handle(r); resp.Code != remoting.SystemError || resp.Remark == "" {
			t.Errorf("%s: got %d %q", name, resp.Code, resp.Remark)
		}
	}
	if s.Handle(routeReq("T")).Code != remoting.TopicNotExist {
		t.Fatal("bad registration applied")
	}
}

func TestExpiryWithClock(t *testing.T) {
	clk := clock.NewManual(t0)
	s := newTestServer(t, testConfig(t), WithClock(clk))
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "c", name: "a", addr: "m:1", topics: topics(1, "T")})))
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "c", name: "b", addr: "n:1", topics: topics(1, "T"),
		ext: map[string]string{"heartbeatTimeoutMillis": "10000"}})))

	clk.Advance(10 * time.Second)
	if d := s.scanNotActiveBrokers(); len(d) != 0 {
		t.Fatalf("dropped at the limit: %v", d)
	}
	clk.Advance(time.Millisecond)
	if d := s.scanNotActiveBrokers(); len(d) != 1 || d[0].Addr != "n:1" {
		t.Fatalf("dropped %v", d)
	}
	// BROKER_HEARTBEAT keeps a alive.
	clk.Advance(100 * time.Second)
	mustOK(t, s.Handle(remoting.NewRequest(remoting.BrokerHeartbeat, map[string]string{"clusterName": "c", "brokerAddr": "m:1", "brokerName": "a"}, nil)))
	clk.Advance(119 * time.Second)
	if d := s.scanNotActiveBrokers(); len(d) != 0 {
		t.Fatalf("heartbeat ignored: %v", d)
	}
	mustOK(t, s.Handle(routeReq("T")))
	clk.Advance(2 * time.Second)
	if d := s.scanNotActiveBrokers(); len(d) != 1 {
		t.Fatalf("dropped %v", d)
	}
	if resp := s.Handle(routeReq("T")); resp.Code != remoting.TopicNotExist {
		t.Fatalf("route after expiry: %d %s", resp.Code, resp.Body)
	}
}

func TestUnregisterBroker(t *testing.T) {
	s := newTestServer(t, testConfig(t))
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "c", name: "a", addr: "m:1", topics: topics(1, "T")})))
	mustOK(t, s.Handle(remoting.NewRequest(remoting.UnregisterBroker, map[string]string{"clusterName": "c", "brokerAddr": "m:1", "brokerName": "a", "brokerId": "0"}, nil)))
	if s.Handle(routeReq("T")).Code != remoting.TopicNotExist {
		t.Fatal("route after unregister")
	}
	if r := s.Handle(remoting.NewRequest(remoting.UnregisterBroker, map[string]string{"brokerAddr": "m:1"}, nil)); r.Code != remoting.SystemError {
		t.Fatalf("missing fields: %d", r.Code)
	}
}

func TestDeleteTopicInNamesrv(t *testing.T) {
	s := newTestServer(t, testConfig(t))
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "c1", name: "a", addr: "m:1", topics: topics(1, "T", "U")})))
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "c2", name: "b", addr: "n:1", topics: topics(1, "T")})))
	mustOK(t, s.Handle(remoting.NewRequest(remoting.DeleteTopicInNamesrv, map[string]string{"topic": "T", "clusterName": "c2"}, nil)))
	body := string(mustOK(t, s.Handle(routeReq("T"))).Body)
	if strings.Contains(body, `"brokerName":"b"`) || !strings.Contains(body, `"brokerName":"a"`) {
		t.Fatalf("route after cluster delete: %s", body)
	}
	mustOK(t, s.Handle(remoting.NewRequest(remoting.DeleteTopicInNamesrv, map[string]string{"topic": "T"}, nil)))
	if s.Handle(routeReq("T")).Code != remoting.TopicNotExist {
		t.Fatal("route after delete")
	}
	mustOK(t, s.Handle(routeReq("U")))
	// Deleting an unknown topic is not an error.
	mustOK(t, s.Handle(remoting.NewRequest(remoting.DeleteTopicInNamesrv, map[string]string{"topic": "T"}, nil)))
}

func TestTopicListAndClusterInfo(t *testing.T) {
	cfg := testConfig(t)
	s := newTestServer(t, cfg)
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "c1", name: "a", addr: "m:1", topics: topics(1, "T", "U")})))
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "c1", name: "b", addr: "n:1", topics: topics(1, "V")})))
	resp := mustOK(t, s.Handle(remoting.NewRequest(remoting.GetAllTopicListFromNameserver, nil, nil)))
	if string(resp.Body) != `{"topicList":["T","U","V"]}` {
		t.Fatalf("topic list %s", resp.Body)
	}
	resp = mustOK(t, s.Handle(remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil)))
	want := `{"brokerAddrTable":{"a":{"brokerAddrs":{"0":"m:1"},"brokerName":"a","cluster":"c1","enableActingMaster":false},` +
		`"b":{"brokerAddrs":{"0":"n:1"},"brokerName":"b","cluster":"c1","enableActingMaster":false}},"clusterAddrTable":{"c1":["a","b"]}}`
	if string(resp.Body) != want {
		t.Fatalf("cluster info\n got %s\nwant %s", resp.Body, want)
	}
	cfg.EnableAllTopicList = false
	s2 := newTestServer(t, cfg)
	resp = s2.Handle(remoting.NewRequest(remoting.GetAllTopicListFromNameserver, nil, nil))
	if resp.Code != remoting.SystemError || resp.Remark != "disable" {
		t.Fatalf("disabled: %d %q", resp.Code, resp.Remark)
	}
}

func TestUnknownCode(t *testing.T) {
	s := newTestServer(t, testConfig(t))
	resp := s.Handle(remoting.NewRequest(remoting.SendMessage, nil, nil))
	if resp.Code != remoting.RequestCodeNotSupported || !strings.Contains(resp.Remark, "10") {
		t.Fatalf("got %d %q", resp.Code, resp.Remark)
	}
}

func TestQueryDataVersion(t *testing.T) {
	clk := clock.NewManual(t0)
	s := newTestServer(t, testConfig(t), WithClock(clk))
	dv := DataVersion{Timestamp: 5, Counter: 2}
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "c", name: "a", addr: "m:1", version: dv})))
	ask := func(v DataVersion) *remoting.Command {
		return mustOK(t, s.Handle(remoting.NewRequest(remoting.QueryDataVersion,
			map[string]string{"clusterName": "c", "brokerAddr": "m:1", "brokerName": "a", "brokerId": "0"}, v.Encode())))
	}
	if r := ask(dv); r.Ext("changed") != "false" || string(r.Body) != string(dv.Encode()) {
		t.Fatalf("same version: %v %s", r.ExtFields, r.Body)
	}
	if r := ask(DataVersion{Timestamp: 5, Counter: 3}); r.Ext("changed") != "true" {
		t.Fatalf("new version: %v", r.ExtFields)
	}
	// QUERY_DATA_VERSION counts as a heartbeat.
	clk.Advance(100 * time.Second)
	ask(dv)
	clk.Advance(100 * time.Second)
	if d := s.scanNotActiveBrokers(); len(d) != 0 {
		t.Fatalf("dropped %v", d)
	}
}

func kvReq(code int32, ns, key, value string) *remoting.Command {
	ext := map[string]string{"namespace": ns}
	if key != "" {
		ext["key"] = key
	}
	if value != "" {
		ext["value"] = value
	}
	return remoting.NewRequest(code, ext, nil)
}

func TestKVConfigCalls(t *testing.T) {
	s := newTestServer(t, testConfig(t))
	mustOK(t, s.Handle(kvReq(remoting.PutKVConfig, "ns", "k1", "v1")))
	mustOK(t, s.Handle(kvReq(remoting.PutKVConfig, "ns", "k2", "v2")))
	if r := mustOK(t, s.Handle(kvReq(remoting.GetKVConfig, "ns", "k1", ""))); r.Ext("value") != "v1" {
		t.Fatalf("get %v", r.ExtFields)
	}
	r := s.Handle(kvReq(remoting.GetKVConfig, "ns", "nope", ""))
	if r.Code != remoting.QueryNotFound || r.Remark != "No config item, Namespace: ns Key: nope" {
		t.Fatalf("missing key: %d %q", r.Code, r.Remark)
	}
	if r := mustOK(t, s.Handle(kvReq(remoting.GetKVListByNamespace, "ns", "", ""))); string(r.Body) != `{"table":{"k1":"v1","k2":"v2"}}` {
		t.Fatalf("list %s", r.Body)
	}
	mustOK(t, s.Handle(kvReq(remoting.DeleteKVConfig, "ns", "k1", "")))
	mustOK(t, s.Handle(kvReq(remoting.DeleteKVConfig, "ns", "k2", "")))
	r = s.Handle(kvReq(remoting.GetKVListByNamespace, "ns", "", ""))
	if r.Code != remoting.QueryNotFound || r.Remark != "No config item, Namespace: ns" {
		t.Fatalf("empty namespace: %d %q", r.Code, r.Remark)
	}
	if r := s.Handle(remoting.NewRequest(remoting.PutKVConfig, map[string]string{"namespace": "ns"}, nil)); r.Code != remoting.SystemError || r.Remark != "namespace or key is null" {
		t.Fatalf("put without key: %d %q", r.Code, r.Remark)
	}
}

func TestOrderTopicConf(t *testing.T) {
	cfg := testConfig(t)
	cfg.OrderMessageEnable = true
	s := newTestServer(t, cfg)
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "c", name: "a", addr: "m:1", topics: topics(4, "O", "P")})))
	mustOK(t, s.Handle(kvReq(remoting.PutKVConfig, NamespaceOrderTopicConfig, "O", "a:4")))
	body := string(mustOK(t, s.Handle(routeReq("O"))).Body)
	if !strings.Contains(body, `"orderTopicConf":"a:4"`) {
		t.Fatalf("route %s", body)
	}
	if body := string(mustOK(t, s.Handle(routeReq("P"))).Body); strings.Contains(body, "orderTopicConf") {
		t.Fatalf("route without KV entry: %s", body)
	}
	cfg.OrderMessageEnable = false
	s2 := newTestServer(t, cfg)
	mustOK(t, s2.Handle(registerRequest(brokerSpec{cluster: "c", name: "a", addr: "m:1", topics: topics(4, "O")})))
	mustOK(t, s2.Handle(kvReq(remoting.PutKVConfig, NamespaceOrderTopicConfig, "O", "a:4")))
	if body := string(mustOK(t, s2.Handle(routeReq("O"))).Body); strings.Contains(body, "orderTopicConf") {
		t.Fatalf("orderMessageEnable=false: %s", body)
	}
}

func TestKVPersistenceAcrossRestart(t *testing.T) {
	cfg := testConfig(t)
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, s.Handle(kvReq(remoting.PutKVConfig, "ns", "k", "v")))
	mustOK(t, s.Handle(kvReq(remoting.PutKVConfig, NamespaceOrderTopicConfig, "T", "a:8")))
	if err := s.SyncKV(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(cfg.KVConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	var f kvConfigFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if f.ConfigTable["ns"]["k"] != "v" {
		t.Fatalf("file %s", data)
	}
	mustOK(t, s.Handle(kvReq(remoting.DeleteKVConfig, "ns", "k", "")))
	mustOK(t, s.Handle(kvReq(remoting.PutKVConfig, "ns", "k2", "v2")))
	if err := s.Shutdown(); err != nil { // writes the pending change
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Dir(cfg.KVConfigPath))
	if len(entries) != 1 {
		t.Fatalf("temp files left: %v", entries)
	}

	s2 := newTestServer(t, cfg)
	if r := s2.Handle(kvReq(remoting.GetKVConfig, "ns", "k", "")); r.Code != remoting.QueryNotFound {
		t.Fatalf("deleted key back: %+v", r)
	}
	if r := mustOK(t, s2.Handle(kvReq(remoting.GetKVConfig, "ns", "k2", ""))); r.Ext("value") != "v2" {
		t.Fatalf("k2 %v", r.ExtFields)
	}
	if r := mustOK(t, s2.Handle(kvReq(remoting.GetKVConfig, NamespaceOrderTopicConfig, "T", ""))); r.Ext("value") != "a:8" {
		t.Fatalf("order conf %v", r.ExtFields)
	}
}

func TestKVFileFromRocketMQ(t *testing.T) {
	cfg := testConfig(t)
	os.MkdirAll(filepath.Dir(cfg.KVConfigPath), 0o755)
	if err := os.WriteFile(cfg.KVConfigPath, []byte(`{"configTable":{"ORDER_TOPIC_CONFIG":{"T":"broker-a:4"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, cfg)
	if r := mustOK(t, s.Handle(kvReq(remoting.GetKVConfig, NamespaceOrderTopicConfig, "T", ""))); r.Ext("value") != "broker-a:4" {
		t.Fatalf("%v", r.ExtFields)
	}
	if err := os.WriteFile(cfg.KVConfigPath, []byte(`{"configTable":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg, nil); !errors.Is(err, ErrBadKVConfigFile) {
		t.Fatalf("corrupt file: %v", err)
	}
}

func TestKVPersistFailureReported(t *testing.T) {
	cfg := testConfig(t)
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Replace the file's directory by a plain file: every write now fails.
	dir := filepath.Dir(cfg.KVConfigPath)
	os.RemoveAll(dir)
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mustOK(t, s.Handle(kvReq(remoting.PutKVConfig, "ns", "k", "v")))
	if err := s.SyncKV(); err == nil {
		t.Fatal("SyncKV hid a write error")
	}
	if err := s.Shutdown(); err == nil {
		t.Fatal("Shutdown hid a write error")
	}
}

func TestWriteFileAtomic(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "f.json")
	for _, content := range []string{"one", "two"} {
		if err := writeFileAtomic(p, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(p)
		if string(got) != content {
			t.Fatalf("got %q", got)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Fatalf("leftovers %v", entries)
	}
}

func TestBackgroundScan(t *testing.T) {
	clk := clock.NewManual(t0)
	cfg := testConfig(t)
	cfg.ScanNotActiveBrokerInterval = 1
	scans := make(chan []Dropped, 1)
	hook := func(s *Server) {
		s.testHookScanned = func(d []Dropped) {
			select {
			case scans <- d:
			default:
			}
		}
	}
	s, err := New(cfg, nil, WithClock(clk), hook)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "c", name: "a", addr: "m:1", topics: topics(1, "T")})))
	clk.Advance(121 * time.Second)
	for {
		select {
		case d := <-scans:
			if len(d) == 0 {
				continue // a scan that ran before the clock moved
			}
			if d[0].Addr != "m:1" {
				t.Fatalf("dropped %v", d)
			}
			if s.Handle(routeReq("T")).Code != remoting.TopicNotExist {
				t.Fatal("route after background expiry")
			}
			return
		case <-time.After(10 * time.Second):
			t.Fatal("background scan never dropped the broker")
		}
	}
}

func TestConfigBindsFromProperties(t *testing.T) {
	props, err := config.ParseProperties(strings.NewReader(
		"listenPort=9877\nkvConfigPath=/data/kv.json\norderMessageEnable=true\nenableAllTopicList=false\n" +
			"scanNotActiveBrokerInterval=3000\nbrokerChannelExpiredTime=60000\nclusterTest=false\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	rep, err := config.Bind(props, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.ListenPort, want.KVConfigPath, want.OrderMessageEnable, want.EnableAllTopicList = 9877, "/data/kv.json", true, false
	want.ScanNotActiveBrokerInterval, want.BrokerChannelExpiredTime = 3000, 60000
	if cfg != want {
		t.Fatalf("got %+v\nwant %+v", cfg, want)
	}
	if !reflect.DeepEqual(rep.Unbuilt, []string{"clusterTest"}) {
		t.Fatalf("unbuilt %v", rep.Unbuilt)
	}
	if d := config.Dump(&cfg); d["scanNotActiveBrokerInterval"] != "3000" || d["returnOrderTopicConfigToBroker"] != "true" || d["enableControllerInNamesrv"] != "false" || len(d) != 11 {
		t.Fatalf("dump %v", d)
	}
}
