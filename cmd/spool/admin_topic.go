package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/remoting"
)

// topicConfigString is RocketMQ's TopicConfig.toString.
func topicConfigString(tc *metadata.TopicConfig) string {
	return fmt.Sprintf("TopicConfig [topicName=%s, readQueueNums=%d, writeQueueNums=%d, perm=%s, topicFilterType=%s, topicSysFlag=%d, order=%v, attributes=%s]",
		tc.TopicName, tc.ReadQueueNums, tc.WriteQueueNums, permString(tc.Perm), tc.TopicFilterType, tc.TopicSysFlag, tc.Order, javaMap(tc.Attributes))
}

// attributesExt writes topic attributes as UPDATE_AND_CREATE_TOPIC's
// attributes header: "+key=value" pairs joined by ','.
func attributesExt(m map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, "+"+k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

// parseAttributes reads mqadmin's -a "+k=v,+k2=v2".
func parseAttributes(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(p, "+"), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("attribute %q: want +key=value", p)
		}
		out[k] = v
	}
	return out, nil
}

func updateTopicExt(tc *metadata.TopicConfig) map[string]string {
	ext := map[string]string{
		"topic": tc.TopicName, "defaultTopic": systopic.AutoCreate,
		"readQueueNums": strconv.Itoa(tc.ReadQueueNums), "writeQueueNums": strconv.Itoa(tc.WriteQueueNums),
		"perm": strconv.Itoa(tc.Perm), "topicFilterType": tc.TopicFilterType,
		"topicSysFlag": strconv.Itoa(tc.TopicSysFlag), "order": strconv.FormatBool(tc.Order),
	}
	if len(tc.Attributes) > 0 {
		ext["attributes"] = attributesExt(tc.Attributes)
	}
	return ext
}

func (a *admin) topicCommands() []*cobra.Command {
	return []*cobra.Command{a.updateTopic(), a.deleteTopic(), a.topicList(), a.topicRoute(), a.topicStatus(),
		a.topicClusterList(), a.updateTopicList()}
}

func (a *admin) updateTopic() *cobra.Command {
	var broker, cluster, topic, order, unit, hasUnitSub, attrs string
	var read, write, perm int
	c := a.command("updateTopic", "create or update a topic (UPDATE_AND_CREATE_TOPIC)", false, func(e *adminEnv, _ []string) error {
		if topic == "" {
			return errors.New("give -t TOPIC")
		}
		ord, err := boolFlag("o", order, false)
		if err != nil {
			return err
		}
		u, err := boolFlag("u", unit, false)
		if err != nil {
			return err
		}
		us, err := boolFlag("s", hasUnitSub, false)
		if err != nil {
			return err
		}
		tc := metadata.NewTopicConfig(topic, read, write, perm)
		tc.TopicFilterType, tc.Order = metadata.FilterSingleTag, ord
		if u {
			tc.TopicSysFlag |= 1
		}
		if us {
			tc.TopicSysFlag |= 2
		}
		if tc.Attributes, err = parseAttributes(attrs); err != nil {
			return err
		}
		addrs, err := e.targets(broker, cluster)
		if err != nil {
			return err
		}
		for _, addr := range addrs {
			if _, err := e.brokerCall(addr, remoting.UpdateAndCreateTopic, "UPDATE_AND_CREATE_TOPIC", updateTopicExt(tc), nil); err != nil {
				return err
			}
			if !e.jsonOut() {
				e.printf("create topic to %s success.\n", addr)
			}
		}
		orderConf := ""
		if ord && cluster != "" {
			ct, err := e.clusterInfo()
			if err != nil {
				return err
			}
			var parts []string
			for _, r := range masters(ct.brokers(cluster)) {
				parts = append(parts, fmt.Sprintf("%s:%d", r.BrokerName, write))
			}
			orderConf = strings.Join(parts, ";")
			for _, n := range e.ns {
				if _, err := call(e.cli, n, remoting.NewRequest(remoting.PutKVConfig,
					map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": topic, "value": orderConf}, nil)); err != nil {
					return err
				}
			}
			if !e.jsonOut() {
				e.printf("set cluster orderConf. isOrder=%v, orderConf=[%s]\n", ord, orderConf)
			}
		}
		if e.jsonOut() {
			return e.printJSON(map[string]any{"brokers": addrs, "topicConfig": tc, "orderConf": orderConf})
		}
		e.printf("%s\n", topicConfigString(tc))
		return nil
	})
	f := c.Flags()
	f.StringVarP(&broker, "brokerAddr", "b", "", "create topic to which broker")
	f.StringVarP(&cluster, "clusterName", "c", "", "create topic to which cluster")
	f.StringVarP(&topic, "topic", "t", "", "topic name")
	f.IntVarP(&read, "readQueueNums", "r", 8, "set read queue nums")
	f.IntVarP(&write, "writeQueueNums", "w", 8, "set write queue nums")
	f.IntVarP(&perm, "perm", "p", 6, "set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]")
	f.StringVarP(&order, "order", "o", "", "set topic's order(true|false)")
	f.StringVarP(&unit, "unit", "u", "", "is unit topic (true|false)")
	f.StringVarP(&hasUnitSub, "hasUnitSub", "s", "", "has unit sub (true|false)")
	f.StringVarP(&attrs, "attributes", "a", "", "attribute(+a=b,+c=d)")
	return c
}

func (a *admin) deleteTopic() *cobra.Command {
	var topic, cluster string
	c := a.command("deleteTopic", "delete a topic from a cluster's brokers and the name servers", true, func(e *adminEnv, _ []string) error {
		if topic == "" || cluster == "" {
			return errors.New("give -t TOPIC and -c CLUSTER_NAME")
		}
		addrs, err := e.targets("", cluster)
		if err != nil {
			return err
		}
		for _, addr := range addrs {
			if _, err := e.brokerCall(addr, remoting.DeleteTopicInBroker, "DELETE_TOPIC_IN_BROKER", map[string]string{"topic": topic}, nil); err != nil {
				return err
			}
		}
		for _, n := range e.ns {
			if _, err := call(e.cli, n, remoting.NewRequest(remoting.DeleteTopicInNamesrv, map[string]string{"topic": topic, "clusterName": cluster}, nil)); err != nil {
				return err
			}
		}
		if e.jsonOut() {
			return e.printJSON(map[string]any{"topic": topic, "cluster": cluster, "brokers": addrs, "nameServers": e.ns})
		}
		e.printf("delete topic [%s] from cluster [%s] success.\n", topic, cluster)
		e.printf("delete topic [%s] from NameServer success.\n", topic)
		return nil
	})
	c.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	c.Flags().StringVarP(&cluster, "clusterName", "c", "", "delete topic from which cluster")
	return c
}

func (a *admin) topicList() *cobra.Command {
	var clusterModel bool
	c := a.command("topicList", "list the name server's topics; -c adds each one's cluster and consumer groups", true, func(e *adminEnv, _ []string) error {
		topics, err := allTopics(e)
		if err != nil {
			return err
		}
		if !clusterModel {
			if e.jsonOut() {
				return e.printJSON(map[string]any{"topicList": topics})
			}
			for _, t := range topics {
				e.printf("%s\n", t)
			}
			return nil
		}
		type row struct {
			Cluster string   `json:"cluster"`
			Topic   string   `json:"topic"`
			Groups  []string `json:"consumerGroups"`
		}
		var rows []row
		for _, t := range topics {
			if strings.HasPrefix(t, "%RETRY%") || strings.HasPrefix(t, "%DLQ%") {
				continue
			}
			r, err := e.routeOf(t)
			if err != nil {
				continue
			}
			cluster := ""
			if len(r.BrokerDatas) > 0 {
				cluster = r.BrokerDatas[0].Cluster
			}
			groups := []string{}
			for _, qd := range r.QueueDatas {
				addr := r.masterAddr(qd.BrokerName)
				if addr == "" {
					continue
				}
				resp, err := call(e.cli, addr, remoting.NewRequest(codeQueryTopicConsumeByWho, map[string]string{"topic": t}, nil))
				if err != nil {
					continue // a broker without QUERY_TOPIC_CONSUME_BY_WHO: no groups shown
				}
				var gl adminbody.GroupList
				if adminbody.Unmarshal(resp.Body, &gl) == nil {
					groups = append(groups, gl.GroupList...)
				}
			}
			sort.Strings(groups)
			groups = dedup(groups)
			rows = append(rows, row{cluster, t, groups})
		}
		if e.jsonOut() {
			return e.printJSON(rows)
		}
		e.printf("%-20s  %-48s  %-48s\n", "#Cluster Name", "#Topic", "#Consumer Group")
		for _, r := range rows {
			if len(r.Groups) == 0 {
				e.printf("%-20s  %-48s  %-48s\n", r.Cluster, r.Topic, "")
			}
			for _, g := range r.Groups {
				e.printf("%-20s  %-48s  %-48s\n", r.Cluster, r.Topic, g)
			}
		}
		return nil
	})
	c.Flags().BoolVarP(&clusterModel, "clusterModel", "c", false, "print each topic's cluster and consumer groups")
	return c
}

func dedup(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func (a *admin) topicRoute() *cobra.Command {
	var topic string
	var list bool
	c := a.command("topicRoute", "print a topic's route (GET_ROUTEINFO_BY_TOPIC)", true, func(e *adminEnv, _ []string) error {
		if topic == "" {
			return errors.New("give -t TOPIC")
		}
		resp, err := call(e.cli, e.ns[0], remoting.NewRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": topic}, nil))
		if err != nil {
			return err
		}
		if e.jsonOut() {
			_, err := fmt.Fprintf(e.out, "%s\n", resp.Body)
			return err
		}
		if !list {
			var v any
			if err := json.Unmarshal(resp.Body, &v); err != nil {
				return err
			}
			return e.printJSON(v)
		}
		var r route
		if err := json.Unmarshal(resp.Body, &r); err != nil {
			return err
		}
		e.printf("%-45s %-32s %-50s %-10s %-11s %-5s\n", "#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm")
		var tr, tw int
		for _, qd := range r.QueueDatas {
			cluster, addrs := "", ""
			for _, bd := range r.BrokerDatas {
				if bd.BrokerName == qd.BrokerName {
					cluster = bd.Cluster
					var parts []string
					for _, id := range sortedKeys(bd.BrokerAddrs) {
						parts = append(parts, id+":"+bd.BrokerAddrs[id])
					}
					addrs = "{" + strings.Join(parts, ", ") + "}"
				}
			}
			e.printf("%-45s %-32s %-50s %-10d %-11d %-5d\n", cluster, qd.BrokerName, addrs, qd.ReadQueueNums, qd.WriteQueueNums, qd.Perm)
			tr += qd.ReadQueueNums
			tw += qd.WriteQueueNums
		}
		e.printf("\n%-45s %-32s %-50s %-10d %-11d\n", "Total:", fmt.Sprint(len(r.QueueDatas)), "", tr, tw)
		return nil
	})
	c.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	c.Flags().BoolVarP(&list, "list", "l", false, "print the route as a table")
	return c
}

// topicStats asks every master of the topic's route for
// GET_TOPIC_STATS_INFO and merges the answers.
func (e *adminEnv) topicStats(topic string) (*adminbody.TopicStatsTable, error) {
	r, err := e.routeOf(topic)
	if err != nil {
		return nil, err
	}
	all := &adminbody.TopicStatsTable{OffsetTable: adminbody.Map[adminbody.MessageQueue, adminbody.TopicOffset]{}}
	for _, qd := range r.QueueDatas {
		addr := r.masterAddr(qd.BrokerName)
		if addr == "" {
			continue
		}
		resp, err := e.brokerCall(addr, codeGetTopicStatsInfo, "GET_TOPIC_STATS_INFO", map[string]string{"topic": topic}, nil)
		if err != nil {
			return nil, err
		}
		var st adminbody.TopicStatsTable
		if err := adminbody.Unmarshal(resp.Body, &st); err != nil {
			return nil, fmt.Errorf("GET_TOPIC_STATS_INFO answer of %s: %w", addr, err)
		}
		for mq, o := range st.OffsetTable {
			all.OffsetTable[mq] = o
		}
		all.TopicPutTps += st.TopicPutTps
	}
	return all, nil
}

func sortedQueues[V any](m adminbody.Map[adminbody.MessageQueue, V]) []adminbody.MessageQueue {
	qs := make([]adminbody.MessageQueue, 0, len(m))
	for q := range m {
		qs = append(qs, q)
	}
	sort.Slice(qs, func(i, j int) bool { return qs[i].Compare(qs[j]) < 0 })
	return qs
}

func (a *admin) topicStatus() *cobra.Command {
	var topic string
	c := a.command("topicStatus", "print each queue's min and max offset (GET_TOPIC_STATS_INFO)", true, func(e *adminEnv, _ []string) error {
		if topic == "" {
			return errors.New("give -t TOPIC")
		}
		st, err := e.topicStats(topic)
		if err != nil {
			return err
		}
		qs := sortedQueues(st.OffsetTable)
		if e.jsonOut() {
			// Named fields: an embedded MessageQueue would lend the row
			// its MarshalJSON.
			type row struct {
				Topic               string `json:"topic"`
				BrokerName          string `json:"brokerName"`
				QueueID             int    `json:"queueId"`
				MinOffset           int64  `json:"minOffset"`
				MaxOffset           int64  `json:"maxOffset"`
				LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
			}
			rows := make([]row, 0, len(qs))
			for _, q := range qs {
				o := st.OffsetTable[q]
				rows = append(rows, row{q.Topic, q.BrokerName, q.QueueID, o.MinOffset, o.MaxOffset, o.LastUpdateTimestamp})
			}
			return e.printJSON(rows)
		}
		e.printf("%-32s  %-4s  %-20s  %-20s    %s\n", "#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated")
		for _, q := range qs {
			o := st.OffsetTable[q]
			e.printf("%-32s  %-4d  %-20d  %-20d    %s\n", q.BrokerName, q.QueueID, o.MinOffset, o.MaxOffset, javaTime(o.LastUpdateTimestamp))
		}
		return nil
	})
	c.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	var cluster string
	c.Flags().StringVarP(&cluster, "cluster", "c", "", "cluster name (accepted; the route names the brokers)")
	return c
}

func (a *admin) topicClusterList() *cobra.Command {
	var topic string
	c := a.command("topicClusterList", "print the clusters a topic is on", true, func(e *adminEnv, _ []string) error {
		if topic == "" {
			return errors.New("give -t TOPIC")
		}
		r, err := e.routeOf(topic)
		if err != nil {
			return err
		}
		var clusters []string
		for _, bd := range r.BrokerDatas {
			clusters = append(clusters, bd.Cluster)
		}
		sort.Strings(clusters)
		clusters = dedup(clusters)
		if e.jsonOut() {
			return e.printJSON(clusters)
		}
		for _, c := range clusters {
			e.printf("%s\n", c)
		}
		return nil
	})
	c.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	return c
}

func (a *admin) updateTopicList() *cobra.Command {
	var broker, cluster, file string
	c := a.command("updateTopicList", "create or update the topics of a JSON file (UPDATE_AND_CREATE_TOPIC_LIST)", true, func(e *adminEnv, _ []string) error {
		if file == "" {
			return errors.New("give -f FILE (a JSON array of TopicConfig)")
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		var list []*metadata.TopicConfig
		if err := json.Unmarshal(data, &list); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		for _, tc := range list {
			if tc.TopicFilterType == "" {
				tc.TopicFilterType = metadata.FilterSingleTag
			}
		}
		addrs, err := e.targets(broker, cluster)
		if err != nil {
			return err
		}
		body, err := json.Marshal(adminbody.CreateTopicListRequestBody{TopicConfigList: list})
		if err != nil {
			return err
		}
		names := make([]string, 0, len(list))
		for _, tc := range list {
			names = append(names, tc.TopicName)
		}
		return e.submitBatch(addrs, codeUpdateAndCreateTopicList, "UPDATE_AND_CREATE_TOPIC_LIST", body, "topic", "topics", names,
			func(addr string) error {
				// A broker without the batch request: one request per topic.
				for _, tc := range list {
					if _, err := e.brokerCall(addr, remoting.UpdateAndCreateTopic, "UPDATE_AND_CREATE_TOPIC", updateTopicExt(tc), nil); err != nil {
						return err
					}
				}
				return nil
			})
	})
	c.Flags().StringVarP(&broker, "brokerAddr", "b", "", "create topics to which broker")
	c.Flags().StringVarP(&cluster, "clusterName", "c", "", "create topics to which cluster")
	c.Flags().StringVarP(&file, "filename", "f", "", "path to a file with a list of TopicConfig in JSON format")
	return c
}
