package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/remoting"
)

// Broker request codes the admin commands send that remoting does not
// name yet (RocketMQ RequestCode numbers).
const (
	codeUpdateAndCreateTopicList             int32 = 18
	codeGetTopicStatsInfo                    int32 = 202
	codeGetConsumerConnectionList            int32 = 203
	codeGetProducerConnectionList            int32 = 204
	codeGetConsumeStats                      int32 = 208
	codeUpdateAndCreateSubscriptionGroupList int32 = 225
	codeQueryTopicConsumeByWho               int32 = 300
)

// brokerRef is one broker process the cluster table names.
type brokerRef struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	BrokerID   int64  `json:"brokerId"`
	Addr       string `json:"addr"`
}

// clusterTable is the GET_BROKER_CLUSTER_INFO answer.
type clusterTable struct {
	BrokerAddrTable map[string]struct {
		Cluster     string            `json:"cluster"`
		BrokerName  string            `json:"brokerName"`
		BrokerAddrs map[string]string `json:"brokerAddrs"`
	} `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string `json:"clusterAddrTable"`
}

func (e *adminEnv) clusterInfo() (*clusterTable, error) {
	var lastErr error
	for _, n := range e.ns {
		resp, err := call(e.cli, n, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
		if err != nil {
			lastErr = err
			continue
		}
		ct := &clusterTable{}
		if err := json.Unmarshal(resp.Body, ct); err != nil {
			return nil, fmt.Errorf("cluster info from %s: %w", n, err)
		}
		return ct, nil
	}
	return nil, lastErr
}

// brokers lists every broker process of cluster (all clusters when
// empty), sorted by cluster, name and id.
func (ct *clusterTable) brokers(cluster string) []brokerRef {
	var out []brokerRef
	for c, names := range ct.ClusterAddrTable {
		if cluster != "" && c != cluster {
			continue
		}
		for _, n := range names {
			bd, ok := ct.BrokerAddrTable[n]
			if !ok {
				continue
			}
			for id, addr := range bd.BrokerAddrs {
				i, _ := strconv.ParseInt(id, 10, 64)
				out = append(out, brokerRef{Cluster: c, BrokerName: n, BrokerID: i, Addr: addr})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		if a.BrokerName != b.BrokerName {
			return a.BrokerName < b.BrokerName
		}
		return a.BrokerID < b.BrokerID
	})
	return out
}

func masters(refs []brokerRef) []brokerRef {
	var out []brokerRef
	for _, r := range refs {
		if r.BrokerID == 0 {
			out = append(out, r)
		}
	}
	return out
}

// targets resolves mqadmin's -b BROKER_ADDR / -c CLUSTER pair into the
// broker addresses a command acts on: -b alone, or every master of -c.
func (e *adminEnv) targets(brokerAddr, cluster string) ([]string, error) {
	out, err := e.resolveBrokers(brokerAddr, cluster, masters)
	if err == nil && len(out) == 0 {
		return nil, fmt.Errorf("the name server knows no master broker in cluster %s", cluster)
	}
	return out, err
}

// everyBroker is targets with the slaves of -c too, as mqadmin's
// brokerStatus and getBrokerConfig take them.
func (e *adminEnv) everyBroker(brokerAddr, cluster string) ([]string, error) {
	return e.resolveBrokers(brokerAddr, cluster, func(refs []brokerRef) []brokerRef { return refs })
}

func (e *adminEnv) resolveBrokers(brokerAddr, cluster string, pick func([]brokerRef) []brokerRef) ([]string, error) {
	if brokerAddr != "" {
		return []string{brokerAddr}, nil
	}
	if cluster == "" {
		return nil, errors.New("give -b BROKER_ADDR or -c CLUSTER_NAME")
	}
	ct, err := e.clusterInfo()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range pick(ct.brokers(cluster)) {
		out = append(out, r.Addr)
	}
	return out, nil
}

// clusterOf names the cluster of a broker address ("" when unknown).
func (e *adminEnv) clusterOf(addr string) string {
	ct, err := e.clusterInfo()
	if err != nil {
		return ""
	}
	for _, r := range ct.brokers("") {
		if r.Addr == addr {
			return r.Cluster
		}
	}
	return ""
}

// brokerCall sends one request to a broker and, when the broker refuses
// it, says what the broker answered.
func (e *adminEnv) brokerCall(addr string, code int32, name string, ext map[string]string, body []byte) (*remoting.Command, error) {
	resp, err := call(e.cli, addr, remoting.NewRequest(code, ext, body))
	if err != nil {
		return resp, refusal(name, code, addr, resp, err)
	}
	return resp, nil
}

// refusal words a failed request: what the broker answered, or the
// transport's error when it answered nothing.
func refusal(name string, code int32, addr string, resp *remoting.Command, err error) error {
	if resp == nil {
		return err
	}
	return fmt.Errorf("%s (%d) to %s: the broker answered code %d: %s", name, code, addr, resp.Code, resp.Remark)
}

// notSupported reports an answer of REQUEST_CODE_NOT_SUPPORTED.
func notSupported(resp *remoting.Command) bool {
	return resp != nil && resp.Code == remoting.RequestCodeNotSupported
}

// routeOf asks the name servers for a topic's route, TOPIC_NOT_EXIST being
// an error naming the topic.
func (e *adminEnv) routeOf(topic string) (*route, error) {
	r, ok, err := lookupRoute(e.cli, e.ns, topic)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("no route of topic %s: the name server answered TOPIC_NOT_EXIST", topic)
	}
	return r, nil
}

// allTopics lists the name server's topics, sorted.
func allTopics(e *adminEnv) ([]string, error) {
	resp, err := call(e.cli, e.ns[0], remoting.NewRequest(remoting.GetAllTopicListFromNameserver, nil, nil))
	if err != nil {
		return nil, err
	}
	var tl adminbody.TopicList
	if err := json.Unmarshal(resp.Body, &tl); err != nil {
		return nil, err
	}
	sort.Strings(tl.TopicList)
	return tl.TopicList, nil
}

// boolFlag parses mqadmin's true/false option values ("" is def).
func boolFlag(name, v string, def bool) (bool, error) {
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, fmt.Errorf("-%s %q: want true or false", name, v)
	}
	return b, nil
}

// permString is RocketMQ's PermName.perm2String: R, W, X or '-'.
func permString(p int) string {
	b := []byte("---")
	if p&4 != 0 {
		b[0] = 'R'
	}
	if p&2 != 0 {
		b[1] = 'W'
	}
	if p&1 != 0 {
		b[2] = 'X'
	}
	return string(b)
}

// javaMap formats a string map as Java's AbstractMap.toString.
func javaMap(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// javaTime formats epoch milliseconds as RocketMQ's UtilAll.formatDate
// with "yyyy-MM-dd HH:mm:ss,SSS".
func javaTime(ms int64) string {
	if ms <= 0 {
		return ""
	}
	return time.UnixMilli(ms).Format("2006-01-02 15:04:05,000")
}

// parseTimeFlag reads mqadmin's timestamps: epoch milliseconds or
// "yyyy-MM-dd#HH:mm:ss:SSS".
func parseTimeFlag(name, v string, def int64) (int64, error) {
	if v == "" {
		return def, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n, nil
	}
	t, err := time.ParseInLocation("2006-01-02#15:04:05:000", v, time.Local)
	if err != nil {
		return 0, fmt.Errorf("-%s %q: want epoch milliseconds or yyyy-MM-dd#HH:mm:ss:SSS", name, v)
	}
	return t.UnixMilli(), nil
}

// submitBatch sends a batch create (UPDATE_AND_CREATE_TOPIC_LIST,
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST) to every address, falling back
// to one request per entry where a broker does not know the batch request,
// and prints mqadmin's line per broker (or the JSON summary).
func (e *adminEnv) submitBatch(addrs []string, code int32, name string, body []byte, what, jsonKey string, names []string,
	oneByOne func(addr string) error) error {
	for _, addr := range addrs {
		resp, err := call(e.cli, addr, remoting.NewRequest(code, nil, body))
		if notSupported(resp) {
			if err := oneByOne(addr); err != nil {
				return err
			}
		} else if err != nil {
			return refusal(name, code, addr, resp, err)
		}
		if !e.jsonOut() {
			e.printf("submit batch of %s config to %s success, please check the result later.\n", what, addr)
		}
	}
	if e.jsonOut() {
		return e.printJSON(map[string]any{"brokers": addrs, jsonKey: names})
	}
	return nil
}
