package namesrv

import (
	"fmt"
	"reflect"
	"testing"
	"time"
	"unsafe"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func reg(cluster, name, addr string, id int64, conn uint64, topics ...string) Registration {
	r := Registration{Cluster: cluster, BrokerName: name, BrokerAddr: addr, BrokerID: id,
		HAServerAddr: addr + "-ha", Timeout: 120 * time.Second, ConnID: conn, Topics: map[string]TopicConfig{}}
	for _, tp := range topics {
		r.Topics[tp] = TopicConfig{TopicName: tp, ReadQueueNums: 8, WriteQueueNums: 4, Perm: 6}
	}
	return r
}

func TestRouteTableRegisterAndRoute(t *testing.T) {
	rt := NewRouteTable()
	rt.Register(reg("c1", "b", "10.0.0.2:10911", 0, 1, "T"), t0)
	rt.Register(reg("c1", "a", "10.0.0.1:10911", 0, 2, "T", "U"), t0)
	rt.Register(reg("c1", "a", "10.0.0.3:10911", 1, 3, "T", "ignored-from-slave"), t0)

	r, ok := rt.TopicRoute("T")
	if !ok {
		t.Fatal("no route")
	}
	want := TopicRouteData{
		QueueDatas: []QueueData{
			{BrokerName: "a", Perm: 6, ReadQueueNums: 8, WriteQueueNums: 4},
			{BrokerName: "b", Perm: 6, ReadQueueNums: 8, WriteQueueNums: 4},
		},
		BrokerDatas: []BrokerData{
			{BrokerName: "a", Cluster: "c1", BrokerAddrs: map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.3:10911"}},
			{BrokerName: "b", Cluster: "c1", BrokerAddrs: map[int64]string{0: "10.0.0.2:10911"}},
		},
		FilterServerTable: map[string][]string{},
	}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("route\n got %+v\nwant %+v", r, want)
	}
	if _, ok := rt.TopicRoute("ignored-from-slave"); ok {
		t.Fatal("a slave registration created queue data")
	}
	if _, ok := rt.TopicRoute("nope"); ok {
		t.Fatal("route invented")
	}
	if got := rt.Topics(); !reflect.DeepEqual(got, []string{"T", "U"}) {
		t.Fatalf("topics %v", got)
	}
}

func TestRouteTableSlaveResult(t *testing.T) {
	rt := NewRouteTable()
	if res := rt.Register(reg("c", "a", "s:1", 1, 0), t0); res != (RegisterResult{}) {
		t.Fatalf("slave before master: %+v", res)
	}
	if res := rt.Register(reg("c", "a", "m:1", 0, 0), t0); res != (RegisterResult{}) {
		t.Fatalf("master: %+v", res)
	}
	res := rt.Register(reg("c", "a", "s:1", 1, 0), t0)
	if res != (RegisterResult{HAServerAddr: "m:1-ha", MasterAddr: "m:1"}) {
		t.Fatalf("slave after master: %+v", res)
	}
}

func TestRouteTableAddressChangesID(t *testing.T) {
	rt := NewRouteTable()
	rt.Register(reg("c", "a", "x:1", 1, 0), t0)
	rt.Register(reg("c", "a", "x:1", 0, 0, "T"), t0) // promoted: one id per address
	ci := rt.ClusterInfo()
	if got := ci.BrokerAddrTable["a"].BrokerAddrs; !reflect.DeepEqual(got, map[int64]string{0: "x:1"}) {
		t.Fatalf("addrs %v", got)
	}
}

func TestRouteTableDataVersionGatesUpdates(t *testing.T) {
	rt := NewRouteTable()
	r := reg("c", "a", "x:1", 0, 0, "T")
	r.DataVersion = DataVersion{Timestamp: 1, Counter: 1}
	rt.Register(r, t0)

	// Same version, different content: RocketMQ trusts the version and
	// skips topics it already has.
	r2 := reg("c", "a", "x:1", 0, 0, "T")
	r2.Topics["T"] = TopicConfig{TopicName: "T", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}
	r2.DataVersion = r.DataVersion
	rt.Register(r2, t0)
	if route, _ := rt.TopicRoute("T"); route.QueueDatas[0].WriteQueueNums != 4 {
		t.Fatalf("unchanged version applied: %+v", route.QueueDatas)
	}
	// A new topic is applied even with the same version.
	r2.Topics["New"] = TopicConfig{TopicName: "New", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}
	rt.Register(r2, t0)
	if _, ok := rt.TopicRoute("New"); !ok {
		t.Fatal("new topic not applied")
	}
	r2.DataVersion.Counter = 2
	rt.Register(r2, t0)
	if route, _ := rt.TopicRoute("T"); route.QueueDatas[0].WriteQueueNums != 2 {
		t.Fatalf("new version not applied: %+v", route.QueueDatas)
	}
}

func TestRouteTableTopicsKeptUnlessConfigured(t *testing.T) {
	for _, del := range []bool{false, true} {
		rt := NewRouteTable()
		rt.DeleteTopicWithBrokerRegistration = del
		rt.Register(reg("c", "a", "x:1", 0, 0, "T", "Gone"), t0)
		r := reg("c", "a", "x:1", 0, 0, "T")
		r.DataVersion.Counter = 1
		rt.Register(r, t0)
		_, ok := rt.TopicRoute("Gone")
		if ok == del {
			t.Fatalf("deleteTopicWithBrokerRegistration=%v: topic present=%v", del, ok)
		}
	}
}

func TestRouteTableExpire(t *testing.T) {
	rt := NewRouteTable()
	rt.Register(reg("c", "a", "x:1", 0, 7, "T"), t0)
	short := reg("c", "b", "y:1", 0, 8, "T")
	short.Timeout = 10 * time.Second
	rt.Register(short, t0)

	if d := rt.Expire(t0.Add(10 * time.Second)); len(d) != 0 {
		t.Fatalf("expired at the limit: %v", d)
	}
	d := rt.Expire(t0.Add(10*time.Second + time.Millisecond))
	if want := []Dropped{{BrokerAddrInfo{"c", "y:1"}, "b", 8}}; !reflect.DeepEqual(d, want) {
		t.Fatalf("dropped %v", d)
	}
	// A heartbeat keeps x alive past its original deadline.
	if !rt.Touch("c", "x:1", t0.Add(100*time.Second)) {
		t.Fatal("touch")
	}
	if d := rt.Expire(t0.Add(200 * time.Second)); len(d) != 0 {
		t.Fatalf("touched broker expired: %v", d)
	}
	d = rt.Expire(t0.Add(221 * time.Second))
	if len(d) != 1 || d[0].BrokerName != "a" {
		t.Fatalf("dropped %v", d)
	}
	if _, ok := rt.TopicRoute("T"); ok {
		t.Fatal("route of an expired broker")
	}
	if ci := rt.ClusterInfo(); len(ci.BrokerAddrTable) != 0 || len(ci.ClusterAddrTable) != 0 {
		t.Fatalf("cluster info not emptied: %+v", ci)
	}
}

func TestRouteTableDropConn(t *testing.T) {
	rt := NewRouteTable()
	rt.Register(reg("c", "a", "x:1", 0, 7, "T"), t0)
	rt.Register(reg("c", "a", "x:2", 1, 8), t0)
	rt.Register(reg("c", "z", "in-process:1", 0, 0, "T"), t0)
	if d := rt.DropConn(0); d != nil {
		t.Fatalf("conn 0 matched %v", d)
	}
	if d := rt.DropConn(8); len(d) != 1 || d[0].Addr != "x:2" {
		t.Fatalf("dropped %v", d)
	}
	r, _ := rt.TopicRoute("T")
	if len(r.BrokerDatas) != 2 || len(r.BrokerDatas[0].BrokerAddrs) != 1 {
		t.Fatalf("route %+v", r)
	}
	rt.DropConn(7)
	r, _ = rt.TopicRoute("T")
	if len(r.QueueDatas) != 1 || r.QueueDatas[0].BrokerName != "z" {
		t.Fatalf("route after master drop %+v", r)
	}
	// Re-registration on a new connection: the old one closing drops nothing.
	rt.Register(reg("c", "a", "x:1", 0, 9, "T"), t0)
	rt.Register(reg("c", "a", "x:1", 0, 10, "T"), t0)
	if d := rt.DropConn(9); len(d) != 0 {
		t.Fatalf("stale conn dropped %v", d)
	}
}

func TestRouteTableDeleteTopic(t *testing.T) {
	rt := NewRouteTable()
	rt.Register(reg("c1", "a", "x:1", 0, 0, "T"), t0)
	rt.Register(reg("c2", "b", "y:1", 0, 0, "T"), t0)
	if rt.DeleteTopic("T", "nope") {
		t.Fatal("deleted for unknown cluster")
	}
	if !rt.DeleteTopic("T", "c1") {
		t.Fatal("cluster delete")
	}
	r, ok := rt.TopicRoute("T")
	if !ok || len(r.QueueDatas) != 1 || r.QueueDatas[0].BrokerName != "b" {
		t.Fatalf("route %+v", r)
	}
	if !rt.DeleteTopic("T", "") || rt.DeleteTopic("T", "") {
		t.Fatal("full delete")
	}
	if _, ok := rt.TopicRoute("T"); ok {
		t.Fatal("deleted topic routed")
	}
}

func TestRouteTableUnregister(t *testing.T) {
	rt := NewRouteTable()
	rt.Register(reg("c", "a", "x:1", 0, 0, "T"), t0)
	if !rt.Unregister("c", "x:1", "a") || rt.Unregister("c", "x:1", "a") {
		t.Fatal("unregister result")
	}
	if _, ok := rt.TopicRoute("T"); ok {
		t.Fatal("route after unregister")
	}
}

// Queue data created by later registrations shares the broker name stored
// at the first one: a name sliced from each registration's header would
// keep every such header alive, one per registered topic.
func TestRouteTableQueueDataKeepsNoRegistrationStrings(t *testing.T) {
	rt := NewRouteTable()
	first := reg("c", string([]byte("broker-a")), "m:1", 0, 0, "T0")
	rt.Register(first, t0)
	for i := 1; i <= 3; i++ {
		r := reg("c", string([]byte("broker-a")), "m:1", 0, 0, fmt.Sprintf("T%d", i))
		r.DataVersion = DataVersion{Counter: int64(i)}
		rt.Register(r, t0)
		qd := rt.topicQueues[fmt.Sprintf("T%d", i)]["broker-a"]
		if unsafe.StringData(qd.BrokerName) != unsafe.StringData(rt.brokers["broker-a"].BrokerName) {
			t.Fatalf("registration %d: queue data holds its own copy of the broker name", i)
		}
	}
}

// A registration of a broker id held by a live address at a higher state
// version (controller mode: the master epoch) is ignored and its address
// dropped: a deposed master resumed after a stop registers as master
// after its successor, and the route keeps the successor. An equal or
// higher state version takes the id.
func TestRouteTableLowerStateVersionLosesTheID(t *testing.T) {
	rt := NewRouteTable()
	at := func(addr string, id int64, conn uint64, state int64) Registration {
		r := reg("c1", "a", addr, id, conn, "T")
		r.DataVersion = DataVersion{StateVersion: state, Counter: int64(conn)}
		return r
	}
	rt.Register(at("10.0.0.1:10911", 0, 1, 2), t0)        // master in epoch 2
	rt.Register(at("10.0.0.2:10911", 0, 2, 3), t0)        // its successor, epoch 3
	res := rt.Register(at("10.0.0.1:10911", 0, 1, 2), t0) // the deposed one, late
	if res.ConflictWith != "10.0.0.2:10911" || res.DisplacedMaster != "" {
		t.Fatalf("late registration at epoch 2: %+v, want a conflict with the epoch-3 master", res)
	}
	r, _ := rt.TopicRoute("T")
	if got := r.BrokerDatas[0].BrokerAddrs; len(got) != 1 || got[0] != "10.0.0.2:10911" {
		t.Fatalf("broker addrs %v, want the epoch-3 master alone", got)
	}
	if _, ok := rt.Live("c1", "10.0.0.1:10911"); ok {
		t.Fatal("the refused address is still live")
	}
	// Registering as the slave it now is, at the new epoch, is accepted.
	if res := rt.Register(at("10.0.0.1:10911", 2, 1, 3), t0); res.ConflictWith != "" || res.MasterAddr != "10.0.0.2:10911" {
		t.Fatalf("slave registration: %+v", res)
	}
	// A later epoch takes the id back.
	if res := rt.Register(at("10.0.0.1:10911", 0, 1, 4), t0); res.ConflictWith != "" || res.DisplacedMaster != "10.0.0.2:10911" {
		t.Fatalf("master registration at epoch 4: %+v", res)
	}
	r, _ = rt.TopicRoute("T")
	if got := r.BrokerDatas[0].BrokerAddrs; len(got) != 1 || got[0] != "10.0.0.1:10911" {
		t.Fatalf("broker addrs %v, want the epoch-4 master alone", got)
	}
}

// A second live master for one broker name is reported, and one id stays
// one address.
func TestRouteTableSecondMasterReported(t *testing.T) {
	rt := NewRouteTable()
	if res := rt.Register(reg("c1", "a", "10.0.0.1:10911", 0, 1, "T"), t0); res.DisplacedMaster != "" {
		t.Fatalf("first master displaced %q", res.DisplacedMaster)
	}
	if res := rt.Register(reg("c1", "a", "10.0.0.1:10911", 0, 1, "T"), t0); res.DisplacedMaster != "" {
		t.Fatalf("a re-registration displaced %q", res.DisplacedMaster)
	}
	res := rt.Register(reg("c1", "a", "10.0.0.9:10911", 0, 2, "T"), t0)
	if res.DisplacedMaster != "10.0.0.1:10911" {
		t.Fatalf("second master: displaced %q, want the first", res.DisplacedMaster)
	}
	r, _ := rt.TopicRoute("T")
	if got := r.BrokerDatas[0].BrokerAddrs; len(got) != 1 || got[0] != "10.0.0.9:10911" {
		t.Fatalf("broker addrs %v", got)
	}
}
