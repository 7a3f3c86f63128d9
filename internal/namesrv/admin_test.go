package namesrv

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/spoolmq/spool/internal/config"
	"github.com/spoolmq/spool/remoting"
)

// decodeTopicList reads a TopicList body as RocketMQ's TopicList.decode
// does: a JSON object with topicList (a set) and brokerAddr.
func decodeTopicList(t *testing.T, resp *remoting.Command) ([]string, string) {
	t.Helper()
	var l struct {
		TopicList  []string `json:"topicList"`
		BrokerAddr *string  `json:"brokerAddr"`
	}
	if err := json.Unmarshal(resp.Body, &l); err != nil {
		t.Fatalf("TopicList body %q: %v", resp.Body, err)
	}
	if l.TopicList == nil {
		t.Fatalf("TopicList body without topicList: %s", resp.Body)
	}
	addr := ""
	if l.BrokerAddr != nil {
		addr = *l.BrokerAddr
	}
	return l.TopicList, addr
}

func twoClusters(t *testing.T, s *Server) {
	t.Helper()
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "C1", name: "broker-a", addr: "10.0.0.1:10911", topics: topics(4, "Shared", "OnlyA"), version: DataVersion{Counter: 1}})))
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "C1", name: "broker-a", addr: "10.0.0.3:10911", id: 1, topics: topics(4, "Shared", "OnlyA")})))
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "C2", name: "broker-b", addr: "10.0.0.2:10911", topics: topics(4, "Shared", "OnlyB")})))
}

func TestTopicsByCluster(t *testing.T) {
	s := newTestServer(t, testConfig(t))
	twoClusters(t, s)
	req := func(c string) *remoting.Command {
		return remoting.NewRequest(remoting.GetTopicsByCluster, map[string]string{"cluster": c}, nil)
	}
	for c, want := range map[string][]string{"C1": {"OnlyA", "Shared"}, "C2": {"OnlyB", "Shared"}, "Nope": {}} {
		got, addr := decodeTopicList(t, mustOK(t, s.Handle(req(c))))
		if !reflect.DeepEqual(got, want) || addr != "" {
			t.Errorf("cluster %s: %v %q, want %v", c, got, addr, want)
		}
	}
	resp := s.Handle(remoting.NewRequest(remoting.GetTopicsByCluster, nil, nil))
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "cluster") {
		t.Fatalf("no cluster header: %d %q", resp.Code, resp.Remark)
	}
	cfg := testConfig(t)
	cfg.EnableTopicList = false
	off := newTestServer(t, cfg)
	if resp := off.Handle(req("C1")); resp.Code != remoting.SystemError || resp.Remark != "disable" {
		t.Fatalf("enableTopicList=false: %d %q", resp.Code, resp.Remark)
	}
}

// queuePerm returns the perm of brokerName's queue data in topic's route.
func queuePerm(t *testing.T, s *Server, topic, brokerName string) int {
	t.Helper()
	var r TopicRouteData
	if err := json.Unmarshal(mustOK(t, s.Handle(routeReq(topic))).Body, &r); err != nil {
		t.Fatal(err)
	}
	for _, q := range r.QueueDatas {
		if q.BrokerName == brokerName {
			return int(q.Perm)
		}
	}
	t.Fatalf("%s has no queue data of %s", topic, brokerName)
	return 0
}

// TestWipeAndAddWritePerm drains broker-a for writes and gives it back, the
// answers read as WipeWritePermOfBrokerResponseHeader and
// AddWritePermOfBrokerResponseHeader (an Integer ext field each).
func TestWipeAndAddWritePerm(t *testing.T) {
	s := newTestServer(t, testConfig(t))
	twoClusters(t, s)
	resp := mustOK(t, s.Handle(remoting.NewRequest(remoting.WipeWritePermOfBroker, map[string]string{"brokerName": "broker-a"}, nil)))
	if n, err := strconv.Atoi(resp.Ext("wipeTopicCount")); err != nil || n != 2 {
		t.Fatalf("wipeTopicCount %q", resp.Ext("wipeTopicCount"))
	}
	if p := queuePerm(t, s, "Shared", "broker-a"); p != 4 {
		t.Fatalf("broker-a perm after wipe %d, want 4", p)
	}
	if p := queuePerm(t, s, "Shared", "broker-b"); p != 6 {
		t.Fatalf("broker-b perm changed to %d", p)
	}
	// The broker's periodic registration with an unchanged data version
	// does not undo the drain.
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "C1", name: "broker-a", addr: "10.0.0.1:10911", topics: topics(4, "Shared", "OnlyA"), version: DataVersion{Counter: 1}})))
	if p := queuePerm(t, s, "OnlyA", "broker-a"); p != 4 {
		t.Fatalf("re-registration restored perm %d", p)
	}
	resp = mustOK(t, s.Handle(remoting.NewRequest(remoting.AddWritePermOfBroker, map[string]string{"brokerName": "broker-a"}, nil)))
	if n, err := strconv.Atoi(resp.Ext("addTopicCount")); err != nil || n != 2 {
		t.Fatalf("addTopicCount %q", resp.Ext("addTopicCount"))
	}
	if p := queuePerm(t, s, "OnlyA", "broker-a"); p != 6 {
		t.Fatalf("perm after add %d, want 6", p)
	}
	resp = mustOK(t, s.Handle(remoting.NewRequest(remoting.WipeWritePermOfBroker, map[string]string{"brokerName": "nobody"}, nil)))
	if resp.Ext("wipeTopicCount") != "0" {
		t.Fatalf("unknown broker: wipeTopicCount %q", resp.Ext("wipeTopicCount"))
	}
	for _, code := range []int32{remoting.WipeWritePermOfBroker, remoting.AddWritePermOfBroker} {
		resp := s.Handle(remoting.NewRequest(code, nil, nil))
		if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "brokerName") {
			t.Errorf("%s without brokerName: %d %q", remoting.RequestName(code), resp.Code, resp.Remark)
		}
	}
}

// getConfig reads GET_NAMESRV_CONFIG as MQClientAPIImpl does: the body as
// UTF-8 properties text.
func getConfig(t *testing.T, s *Server) map[string]string {
	t.Helper()
	resp := mustOK(t, s.Handle(remoting.NewRequest(remoting.GetNamesrvConfig, nil, nil)))
	props, err := config.ParseProperties(bytes.NewReader(resp.Body))
	if err != nil {
		t.Fatal(err)
	}
	return props
}

func TestNamesrvConfig(t *testing.T) {
	s := newTestServer(t, testConfig(t))
	props := getConfig(t, s)
	for k, want := range map[string]string{"listenPort": "9876", "enableAllTopicList": "true", "enableTopicList": "true",
		"scanNotActiveBrokerInterval": "5000", "configBlackList": DefaultConfigBlackList} {
		if props[k] != want {
			t.Errorf("%s=%q, want %q", k, props[k], want)
		}
	}
	update := func(body string) *remoting.Command {
		return s.Handle(remoting.NewRequest(remoting.UpdateNamesrvConfig, nil, []byte(body)))
	}
	mustOK(t, update("enableAllTopicList=false\norderMessageEnable=true\ndeleteTopicWithBrokerRegistration=true\n"))
	s.mu.RLock()
	deleting := s.routes.DeleteTopicWithBrokerRegistration
	s.mu.RUnlock()
	if !deleting {
		t.Fatal("deleteTopicWithBrokerRegistration=true did not reach the route table")
	}
	props = getConfig(t, s)
	if props["enableAllTopicList"] != "false" || props["orderMessageEnable"] != "true" {
		t.Fatalf("after update: %v", props)
	}
	if resp := s.Handle(remoting.NewRequest(remoting.GetAllTopicListFromNameserver, nil, nil)); resp.Code != remoting.SystemError || resp.Remark != "disable" {
		t.Fatalf("enableAllTopicList=false not applied: %d %q", resp.Code, resp.Remark)
	}
	for body, code := range map[string]int32{
		"kvConfigPath=/tmp/x\n":                    remoting.NoPermission,
		"configStorePath=/tmp/x\n":                 remoting.NoPermission,
		"enableTopicList=maybe\n":                  remoting.InvalidParameter,
		"enableTopicLst=true\n":                    remoting.InvalidParameter,
		"listenPort=1234\n":                        remoting.InvalidParameter,
		"enableTopicList=false\nlistenPort=1234\n": remoting.InvalidParameter,
		"key=\\u12\n":                              remoting.SystemError,
	} {
		resp := update(body)
		if resp.Code != code || resp.Remark == "" {
			t.Errorf("update %q: %d %q, want code %d", body, resp.Code, resp.Remark, code)
		}
	}
	if resp := update("kvConfigPath=/tmp/x\n"); resp.Remark != "Can not update config in black list." {
		t.Errorf("black list remark %q", resp.Remark)
	}
	if p := getConfig(t, s); p["enableTopicList"] != "true" || p["listenPort"] != "9876" {
		t.Fatalf("a refused update changed keys: %v", p)
	}
	mustOK(t, update(""))
}

func TestSystemAndUnitTopicLists(t *testing.T) {
	s := newTestServer(t, testConfig(t))
	tc := topics(4, "Plain", "Unit", "UnitSub", "Both")
	for name, flag := range map[string]int32{"Unit": TopicSysFlagUnit, "UnitSub": TopicSysFlagUnitSub, "Both": TopicSysFlagUnit | TopicSysFlagUnitSub} {
		c := tc[name]
		c.TopicSysFlag = flag
		tc[name] = c
	}
	mustOK(t, s.Handle(registerRequest(brokerSpec{cluster: "C1", name: "broker-a", addr: "10.0.0.1:10911", topics: tc})))
	got, addr := decodeTopicList(t, mustOK(t, s.Handle(remoting.NewRequest(remoting.GetSystemTopicListFromNs, nil, nil))))
	if !reflect.DeepEqual(got, []string{"C1", "broker-a"}) || addr != "10.0.0.1:10911" {
		t.Fatalf("system topics %v brokerAddr %q", got, addr)
	}
	for code, want := range map[int32][]string{
		remoting.GetUnitTopicList:             {"Both", "Unit"},
		remoting.GetHasUnitSubTopicList:       {"Both", "UnitSub"},
		remoting.GetHasUnitSubUnunitTopicList: {"UnitSub"},
	} {
		got, _ := decodeTopicList(t, mustOK(t, s.Handle(remoting.NewRequest(code, nil, nil))))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", remoting.RequestName(code), got, want)
		}
	}
}
