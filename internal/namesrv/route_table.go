package namesrv

import (
	"sort"
	"time"
)

// MasterID is the broker id of a master.
const MasterID = 0

// BrokerAddrInfo identifies one broker process: its cluster and address.
type BrokerAddrInfo struct {
	Cluster string
	Addr    string
}

// BrokerLiveInfo is what the name server knows about a registered broker
// process's liveness.
type BrokerLiveInfo struct {
	LastUpdate   time.Time
	Timeout      time.Duration
	DataVersion  DataVersion
	ConnID       uint64 // 0: registered in-process, no connection
	HAServerAddr string
}

// Registration is one REGISTER_BROKER request, decoded.
type Registration struct {
	Cluster      string
	BrokerName   string
	BrokerAddr   string
	BrokerID     int64
	HAServerAddr string
	ZoneName     string
	// Timeout is the broker's heartbeat timeout.
	Timeout            time.Duration
	EnableActingMaster bool
	// Topics is the broker's topic table; nil when the request had no body.
	Topics      map[string]TopicConfig
	DataVersion DataVersion
	ConnID      uint64
}

// RegisterResult is what a registration answers: for a slave, its master's
// address and HA address when the master is registered.
type RegisterResult struct {
	HAServerAddr string
	MasterAddr   string
	// DisplacedMaster is the live address that held brokerId 0 of this
	// broker name before a master at another address registered (two
	// masters for one name; the newer takes the id, as in RocketMQ).
	DisplacedMaster string
	// ConflictWith is the live address that holds the registered broker
	// id at a higher state version (controller mode: a later master
	// epoch). The registration was ignored and its address dropped, as
	// RocketMQ's name server does, so a deposed master that registers
	// late does not take the route back from its successor.
	ConflictWith string
}

// Dropped names a broker process removed by expiry or connection close.
type Dropped struct {
	BrokerAddrInfo
	BrokerName string
	ConnID     uint64
}

// RouteTable is the name server's routing state. It is a plain value with no
// locking and no clock of its own: the caller serialises access and passes
// the time in, so every decision here is testable without goroutines.
type RouteTable struct {
	// DeleteTopicWithBrokerRegistration: a master registration removes that
	// broker name's queue data for topics it no longer lists.
	DeleteTopicWithBrokerRegistration bool

	topicQueues map[string]map[string]QueueData // topic -> brokerName -> queues
	brokers     map[string]*BrokerData          // brokerName -> addresses
	clusters    map[string]map[string]struct{}  // cluster -> brokerNames
	live        map[BrokerAddrInfo]*BrokerLiveInfo
}

// NewRouteTable returns an empty table.
func NewRouteTable() *RouteTable {
	return &RouteTable{
		topicQueues: make(map[string]map[string]QueueData),
		brokers:     make(map[string]*BrokerData),
		clusters:    make(map[string]map[string]struct{}),
		live:        make(map[BrokerAddrInfo]*BrokerLiveInfo),
	}
}

// Register applies a broker registration at time now. Only a master
// (id 0) registration creates or updates topic queue data, and only when
// this is the address's first registration, its data version changed, or
// the topic lacks this broker name.
func (t *RouteTable) Register(r Registration, now time.Time) RegisterResult {
	names := t.clusters[r.Cluster]
	if names == nil {
		names = make(map[string]struct{})
		t.clusters[r.Cluster] = names
	}
	names[r.BrokerName] = struct{}{}

	first := false
	bd := t.brokers[r.BrokerName]
	if bd == nil {
		first = true
		bd = &BrokerData{Cluster: r.Cluster, BrokerName: r.BrokerName, BrokerAddrs: make(map[int64]string)}
		t.brokers[r.BrokerName] = bd
	}
	bd.EnableActingMaster = r.EnableActingMaster
	bd.ZoneName = r.ZoneName
	// One address holds one id: a slave switched to master loses its old id.
	for id, a := range bd.BrokerAddrs {
		if a == r.BrokerAddr && id != r.BrokerID {
			delete(bd.BrokerAddrs, id)
		}
	}
	key := BrokerAddrInfo{Cluster: r.Cluster, Addr: r.BrokerAddr}
	old := bd.BrokerAddrs[r.BrokerID]
	var displaced string
	if old != "" && old != r.BrokerAddr {
		if ol := t.live[BrokerAddrInfo{Cluster: r.Cluster, Addr: old}]; ol != nil {
			// Another live address holds the id: a higher state version
			// keeps it; else the newer registration takes it.
			if ol.DataVersion.StateVersion > r.DataVersion.StateVersion {
				delete(t.live, key)
				return RegisterResult{ConflictWith: old}
			}
			if r.BrokerID == MasterID {
				displaced = old
			}
		}
	}
	bd.BrokerAddrs[r.BrokerID] = r.BrokerAddr
	first = first || old == ""

	prev := t.live[key]
	versionChanged := prev == nil || prev.DataVersion != r.DataVersion

	if r.BrokerID == MasterID && r.Topics != nil {
		if t.DeleteTopicWithBrokerRegistration {
			for topic, qds := range t.topicQueues {
				if _, listed := r.Topics[topic]; listed {
					continue
				}
				if _, ok := qds[r.BrokerName]; ok {
					delete(qds, r.BrokerName)
					if len(qds) == 0 {
						delete(t.topicQueues, topic)
					}
				}
			}
		}
		for name, tc := range r.Topics {
			qds := t.topicQueues[name]
			_, hosted := qds[r.BrokerName]
			if !first && !versionChanged && hosted {
				continue
			}
			if qds == nil {
				qds = make(map[string]QueueData)
				t.topicQueues[name] = qds
			}
			// bd.BrokerName, not r.BrokerName: the latter is sliced from
			// this registration's header, which every topic's queue data
			// would otherwise keep alive.
			qds[bd.BrokerName] = QueueData{
				BrokerName:     bd.BrokerName,
				ReadQueueNums:  tc.ReadQueueNums,
				WriteQueueNums: tc.WriteQueueNums,
				Perm:           tc.Perm,
				TopicSysFlag:   tc.TopicSysFlag,
			}
		}
	}

	t.live[key] = &BrokerLiveInfo{
		LastUpdate:   now,
		Timeout:      r.Timeout,
		DataVersion:  r.DataVersion,
		ConnID:       r.ConnID,
		HAServerAddr: r.HAServerAddr,
	}

	res := RegisterResult{DisplacedMaster: displaced}
	if r.BrokerID != MasterID {
		if master, ok := bd.BrokerAddrs[MasterID]; ok {
			if ml := t.live[BrokerAddrInfo{Cluster: r.Cluster, Addr: master}]; ml != nil {
				res.HAServerAddr = ml.HAServerAddr
				res.MasterAddr = master
			}
		}
	}
	return res
}

// Unregister removes a broker process. It reports whether the address was
// registered.
func (t *RouteTable) Unregister(cluster, addr, brokerName string) bool {
	key := BrokerAddrInfo{Cluster: cluster, Addr: addr}
	_, wasLive := t.live[key]
	delete(t.live, key)
	removedAddr := false
	if bd := t.brokers[brokerName]; bd != nil {
		for id, a := range bd.BrokerAddrs {
			if a == addr {
				delete(bd.BrokerAddrs, id)
				removedAddr = true
			}
		}
		if len(bd.BrokerAddrs) == 0 {
			delete(t.brokers, brokerName)
			if names := t.clusters[cluster]; names != nil {
				delete(names, brokerName)
				if len(names) == 0 {
					delete(t.clusters, cluster)
				}
			}
			for topic, qds := range t.topicQueues {
				delete(qds, brokerName)
				if len(qds) == 0 {
					delete(t.topicQueues, topic)
				}
			}
		}
	}
	return wasLive || removedAddr
}

// Touch records a heartbeat (BROKER_HEARTBEAT, QUERY_DATA_VERSION) from a
// registered address. It reports whether the address was registered.
func (t *RouteTable) Touch(cluster, addr string, now time.Time) bool {
	li := t.live[BrokerAddrInfo{Cluster: cluster, Addr: addr}]
	if li == nil {
		return false
	}
	li.LastUpdate = now
	return true
}

// DataVersion returns the data version of the address's last registration.
func (t *RouteTable) DataVersion(cluster, addr string) (DataVersion, bool) {
	li := t.live[BrokerAddrInfo{Cluster: cluster, Addr: addr}]
	if li == nil {
		return DataVersion{}, false
	}
	return li.DataVersion, true
}

// Live returns a copy of the address's live info.
func (t *RouteTable) Live(cluster, addr string) (BrokerLiveInfo, bool) {
	li := t.live[BrokerAddrInfo{Cluster: cluster, Addr: addr}]
	if li == nil {
		return BrokerLiveInfo{}, false
	}
	return *li, true
}

// Expire removes every broker process whose last update is older than its
// timeout at time now, and returns them.
func (t *RouteTable) Expire(now time.Time) []Dropped {
	var out []Dropped
	for key, li := range t.live {
		if li.LastUpdate.Add(li.Timeout).Before(now) {
			out = append(out, t.drop(key, li.ConnID))
		}
	}
	sortDropped(out)
	return out
}

// DropConn removes every broker process registered over connection id and
// returns them. Id 0 (in-process registration) matches nothing.
func (t *RouteTable) DropConn(id uint64) []Dropped {
	if id == 0 {
		return nil
	}
	var out []Dropped
	for key, li := range t.live {
		if li.ConnID == id {
			out = append(out, t.drop(key, id))
		}
	}
	sortDropped(out)
	return out
}

// drop unregisters key, finding its broker name from the address table.
func (t *RouteTable) drop(key BrokerAddrInfo, conn uint64) Dropped {
	d := Dropped{BrokerAddrInfo: key, ConnID: conn}
	for name, bd := range t.brokers {
		if bd.Cluster != key.Cluster {
			continue
		}
		for _, a := range bd.BrokerAddrs {
			if a == key.Addr {
				d.BrokerName = name
			}
		}
	}
	t.Unregister(key.Cluster, key.Addr, d.BrokerName)
	return d
}

func sortDropped(d []Dropped) {
	sort.Slice(d, func(i, j int) bool {
		if d[i].Cluster != d[j].Cluster {
			return d[i].Cluster < d[j].Cluster
		}
		return d[i].Addr < d[j].Addr
	})
}

// TopicRoute builds the route of topic: its queue data and the broker data
// of the names hosting it, both sorted by broker name. It reports false
// when the topic has no queue data or none of its brokers is registered
// (the caller answers TOPIC_NOT_EXIST; routes are never invented).
func (t *RouteTable) TopicRoute(topic string) (TopicRouteData, bool) {
	qds := t.topicQueues[topic]
	if len(qds) == 0 {
		return TopicRouteData{}, false
	}
	r := TopicRouteData{
		QueueDatas:        make([]QueueData, 0, len(qds)),
		BrokerDatas:       make([]BrokerData, 0, len(qds)),
		FilterServerTable: map[string][]string{},
	}
	for name, qd := range qds {
		r.QueueDatas = append(r.QueueDatas, qd)
		if bd := t.brokers[name]; bd != nil {
			r.BrokerDatas = append(r.BrokerDatas, bd.clone())
		}
	}
	if len(r.BrokerDatas) == 0 {
		return TopicRouteData{}, false
	}
	sort.Slice(r.QueueDatas, func(i, j int) bool { return r.QueueDatas[i].BrokerName < r.QueueDatas[j].BrokerName })
	sort.Slice(r.BrokerDatas, func(i, j int) bool { return r.BrokerDatas[i].BrokerName < r.BrokerDatas[j].BrokerName })
	return r, true
}

// ClusterInfo returns a copy of the broker and cluster tables.
func (t *RouteTable) ClusterInfo() ClusterInfo {
	ci := ClusterInfo{
		BrokerAddrTable:  make(map[string]BrokerData, len(t.brokers)),
		ClusterAddrTable: make(map[string][]string, len(t.clusters)),
	}
	for name, bd := range t.brokers {
		ci.BrokerAddrTable[name] = bd.clone()
	}
	for c, names := range t.clusters {
		l := make([]string, 0, len(names))
		for n := range names {
			l = append(l, n)
		}
		sort.Strings(l)
		ci.ClusterAddrTable[c] = l
	}
	return ci
}

// Topics returns every topic with queue data, sorted.
func (t *RouteTable) Topics() []string {
	l := make([]string, 0, len(t.topicQueues))
	for topic := range t.topicQueues {
		l = append(l, topic)
	}
	sort.Strings(l)
	return l
}

// DeleteTopic removes topic's queue data: all of it when cluster is empty,
// else only that of the cluster's broker names. It reports whether
// anything was removed.
func (t *RouteTable) DeleteTopic(topic, cluster string) bool {
	qds, ok := t.topicQueues[topic]
	if !ok {
		return false
	}
	if cluster == "" {
		delete(t.topicQueues, topic)
		return true
	}
	removed := false
	for name := range t.clusters[cluster] {
		if _, ok := qds[name]; ok {
			delete(qds, name)
			removed = true
		}
	}
	if len(qds) == 0 {
		delete(t.topicQueues, topic)
	}
	return removed
}
