package namesrv

import "sort"

// Permission bits of a queue's perm (RocketMQ PermName).
const (
	PermWrite = 1 << 1
	PermRead  = 1 << 2
)

// Topic system flags of a queue's topicSysFlag (RocketMQ TopicSysFlag).
const (
	TopicSysFlagUnit    = 1 << 0
	TopicSysFlagUnitSub = 1 << 1
)

// TopicsByCluster returns, sorted, every topic with queue data on a broker
// name of cluster; an unknown cluster has none.
func (t *RouteTable) TopicsByCluster(cluster string) []string {
	names := t.clusters[cluster]
	var out []string
	for topic, qds := range t.topicQueues {
		for name := range qds {
			if _, ok := names[name]; ok {
				out = append(out, topic)
				break
			}
		}
	}
	sort.Strings(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// WipeWritePerm clears the write bit of brokerName's queue data in every
// topic, so routes stop offering the broker to producers; it returns the
// number of topics changed. The broker's next registration with a new
// data version restores what the broker itself holds.
func (t *RouteTable) WipeWritePerm(brokerName string) int {
	return t.setPerm(brokerName, func(p int32) int32 { return p &^ PermWrite })
}

// AddWritePerm sets brokerName's queue data in every topic to read and
// write (6), as RocketMQ does whatever the perm was; it returns the number
// of topics changed.
func (t *RouteTable) AddWritePerm(brokerName string) int {
	return t.setPerm(brokerName, func(int32) int32 { return PermRead | PermWrite })
}

func (t *RouteTable) setPerm(brokerName string, f func(int32) int32) int {
	n := 0
	for _, qds := range t.topicQueues {
		qd, ok := qds[brokerName]
		if !ok {
			continue
		}
		qd.Perm = f(qd.Perm)
		qds[brokerName] = qd
		n++
	}
	return n
}

// SystemTopics is the GET_SYSTEM_TOPIC_LIST_FROM_NS answer: every cluster
// name and broker name (RocketMQ treats them as system topics) and one
// broker address to ask for the broker's own system topics.
func (t *RouteTable) SystemTopics() TopicList {
	set := make(map[string]struct{})
	for c, names := range t.clusters {
		set[c] = struct{}{}
		for n := range names {
			set[n] = struct{}{}
		}
	}
	l := TopicList{TopicList: make([]string, 0, len(set))}
	for n := range set {
		l.TopicList = append(l.TopicList, n)
	}
	sort.Strings(l.TopicList)
	names := make([]string, 0, len(t.brokers))
	for n := range t.brokers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		bd := t.brokers[n]
		if len(bd.BrokerAddrs) == 0 {
			continue
		}
		ids := make([]int64, 0, len(bd.BrokerAddrs))
		for id := range bd.BrokerAddrs {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		l.BrokerAddr = bd.BrokerAddrs[ids[0]]
		break
	}
	return l
}

// TopicsWithSysFlag returns, sorted, the topics whose queue data (that of
// the first broker name, as RocketMQ reads it) satisfies keep.
func (t *RouteTable) TopicsWithSysFlag(keep func(flag int32) bool) []string {
	out := []string{}
	for topic, qds := range t.topicQueues {
		if len(qds) == 0 {
			continue
		}
		names := make([]string, 0, len(qds))
		for n := range qds {
			names = append(names, n)
		}
		sort.Strings(names)
		if keep(qds[names[0]].TopicSysFlag) {
			out = append(out, topic)
		}
	}
	sort.Strings(out)
	return out
}
