package namesrv

import "encoding/json"

// QueueData is one broker name's queues for a topic, as routes carry it.
// Field order is alphabetical, as RocketMQ's standard-JSON form writes it.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	Perm           int32  `json:"perm"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	TopicSysFlag   int32  `json:"topicSysFlag"`
	WriteQueueNums int32  `json:"writeQueueNums"`
}

// BrokerData is one broker name (a master and its slaves): broker id to
// "ip:port". Id 0 is the master.
type BrokerData struct {
	BrokerAddrs        map[int64]string `json:"brokerAddrs"`
	BrokerName         string           `json:"brokerName"`
	Cluster            string           `json:"cluster"`
	EnableActingMaster bool             `json:"enableActingMaster"`
	ZoneName           string           `json:"zoneName,omitempty"`
}

// clone returns a deep copy, so a route built under the table's lock can be
// encoded after the lock is released.
func (b *BrokerData) clone() BrokerData {
	c := *b
	c.BrokerAddrs = make(map[int64]string, len(b.BrokerAddrs))
	for id, a := range b.BrokerAddrs {
		c.BrokerAddrs[id] = a
	}
	return c
}

// TopicRouteData is the GET_ROUTEINFO_BY_TOPIC answer body.
type TopicRouteData struct {
	BrokerDatas       []BrokerData        `json:"brokerDatas"`
	FilterServerTable map[string][]string `json:"filterServerTable"`
	OrderTopicConf    string              `json:"orderTopicConf,omitempty"`
	QueueDatas        []QueueData         `json:"queueDatas"`
}

// Encode writes the route as compact JSON: no whitespace, brokerAddrs keys
// quoted integers, queueDatas/brokerDatas always present (never null) and
// filterServerTable {}. This is the form every client parser accepts,
// including the Go client's hand-split of brokerAddrs (see the package doc).
func (r *TopicRouteData) Encode() []byte {
	c := *r
	if c.BrokerDatas == nil {
		c.BrokerDatas = []BrokerData{}
	}
	if c.QueueDatas == nil {
		c.QueueDatas = []QueueData{}
	}
	if c.FilterServerTable == nil {
		c.FilterServerTable = map[string][]string{}
	}
	for i := range c.BrokerDatas {
		if c.BrokerDatas[i].BrokerAddrs == nil {
			c.BrokerDatas[i].BrokerAddrs = map[int64]string{}
		}
	}
	return mustMarshal(&c)
}

// ClusterInfo is the GET_BROKER_CLUSTER_INFO answer body.
type ClusterInfo struct {
	BrokerAddrTable  map[string]BrokerData `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string   `json:"clusterAddrTable"`
}

// TopicList is the GET_ALL_TOPIC_LIST_FROM_NAMESERVER answer body (and
// that of the other topic-list queries); BrokerAddr is set only by
// GET_SYSTEM_TOPIC_LIST_FROM_NS, and absent otherwise as fastjson leaves a
// null field out.
type TopicList struct {
	TopicList  []string `json:"topicList"`
	BrokerAddr string   `json:"brokerAddr,omitempty"`
}

// KVTable is the GET_KVLIST_BY_NAMESPACE answer body and the
// REGISTER_BROKER answer body (ORDER_TOPIC_CONFIG namespace).
type KVTable struct {
	Table map[string]string `json:"table"`
}

// mustMarshal encodes values whose types cannot fail to marshal (strings,
// numbers, maps with string or integer keys).
func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("namesrv: marshal: " + err.Error())
	}
	return b
}
