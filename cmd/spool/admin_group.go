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
	"github.com/spoolmq/spool/remoting"
)

func (a *admin) groupCommands() []*cobra.Command {
	return []*cobra.Command{a.updateSubGroup(), a.deleteSubGroup(), a.updateSubGroupList(),
		a.consumerProgress(), a.consumerConnection(), a.producerConnection(), a.consumerStatus()}
}

// groupConfigString is RocketMQ's SubscriptionGroupConfig.toString.
func groupConfigString(g *metadata.SubscriptionGroupConfig) string {
	return fmt.Sprintf("SubscriptionGroupConfig [groupName=%s, consumeEnable=%v, consumeFromMinEnable=%v, consumeBroadcastEnable=%v, "+
		"consumeMessageOrderly=%v, retryQueueNums=%d, retryMaxTimes=%d, groupRetryPolicy=GroupRetryPolicy{type=CUSTOMIZED, exponentialRetryPolicy=null, customizedRetryPolicy=null}, "+
		"brokerId=%d, whichBrokerWhenConsumeSlowly=%d, notifyConsumerIdsChangedEnable=%v, groupSysFlag=%d, consumeTimeoutMinute=%d, subscriptionDataSet=null, attributes=%s]",
		g.GroupName, g.ConsumeEnable, g.ConsumeFromMinEnable, g.ConsumeBroadcastEnable, g.ConsumeMessageOrderly, g.RetryQueueNums,
		g.RetryMaxTimes, g.BrokerID, g.WhichBrokerWhenConsumeSlowly, g.NotifyConsumerIdsChangedEnable, g.GroupSysFlag,
		g.ConsumeTimeoutMinute, javaMap(g.Attributes))
}

func (a *admin) updateSubGroup() *cobra.Command {
	var broker, cluster, group, consumeEnable, fromMin, broadcast, orderly, notify, attrs string
	var retryQueues, retryMax int
	var brokerID, slowly int64
	c := a.command("updateSubGroup", "create or update a subscription group (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)", false, func(e *adminEnv, _ []string) error {
		if group == "" {
			return errors.New("give -g GROUP")
		}
		g := metadata.NewSubscriptionGroupConfig(group)
		var err error
		for _, b := range []struct {
			name string
			v    string
			dst  *bool
		}{{"s", consumeEnable, &g.ConsumeEnable}, {"m", fromMin, &g.ConsumeFromMinEnable}, {"d", broadcast, &g.ConsumeBroadcastEnable},
			{"o", orderly, &g.ConsumeMessageOrderly}, {"a", notify, &g.NotifyConsumerIdsChangedEnable}} {
			if *b.dst, err = boolFlag(b.name, b.v, *b.dst); err != nil {
				return err
			}
		}
		if retryQueues >= 0 {
			g.RetryQueueNums = retryQueues
		}
		if retryMax >= 0 {
			g.RetryMaxTimes = retryMax
		}
		if brokerID >= 0 {
			g.BrokerID = brokerID
		}
		if slowly >= 0 {
			g.WhichBrokerWhenConsumeSlowly = slowly
		}
		if g.Attributes, err = parseAttributes(attrs); err != nil {
			return err
		}
		body, err := json.Marshal(g)
		if err != nil {
			return err
		}
		addrs, err := e.targets(broker, cluster)
		if err != nil {
			return err
		}
		for _, addr := range addrs {
			if _, err := e.brokerCall(addr, remoting.UpdateAndCreateSubscriptionGroup, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP", nil, body); err != nil {
				return err
			}
			if !e.jsonOut() {
				e.printf("create subscription group to %s success.\n", addr)
			}
		}
		if e.jsonOut() {
			return e.printJSON(map[string]any{"brokers": addrs, "subscriptionGroupConfig": g})
		}
		e.printf("%s\n", groupConfigString(g))
		return nil
	})
	f := c.Flags()
	f.StringVarP(&broker, "brokerAddr", "b", "", "create subscription group to which broker")
	f.StringVarP(&cluster, "clusterName", "c", "", "create subscription group to which cluster")
	f.StringVarP(&group, "groupName", "g", "", "consumer group name")
	f.StringVarP(&consumeEnable, "consumeEnable", "s", "", "consume enable (true|false)")
	f.StringVarP(&fromMin, "consumeFromMinEnable", "m", "", "from min offset (true|false)")
	f.StringVarP(&broadcast, "consumeBroadcastEnable", "d", "", "broadcast (true|false)")
	f.StringVarP(&orderly, "consumeMessageOrderly", "o", "", "consume message orderly (true|false)")
	f.IntVarP(&retryQueues, "retryQueueNums", "q", -1, "retry queue nums")
	f.IntVarP(&retryMax, "retryMaxTimes", "r", -1, "retry max times")
	f.Int64VarP(&brokerID, "brokerId", "i", -1, "consumer from which broker id")
	f.Int64VarP(&slowly, "whichBrokerWhenConsumeSlowly", "w", -1, "which broker id when consume slowly")
	f.StringVarP(&notify, "notifyConsumerIdsChanged", "a", "", "notify consumerId changed (true|false)")
	f.StringVar(&attrs, "attributes", "", "attribute(+a=b,+c=d)")
	return c
}

func (a *admin) deleteSubGroup() *cobra.Command {
	var broker, cluster, group, removeOffset string
	c := a.command("deleteSubGroup", "delete a subscription group and its retry and dead-letter topics", true, func(e *adminEnv, _ []string) error {
		if group == "" {
			return errors.New("give -g GROUP")
		}
		clean, err := boolFlag("r", removeOffset, false)
		if err != nil {
			return err
		}
		addrs, err := e.targets(broker, cluster)
		if err != nil {
			return err
		}
		for _, addr := range addrs {
			ext := map[string]string{"groupName": group, "cleanOffset": strconv.FormatBool(clean)}
			if _, err := e.brokerCall(addr, remoting.DeleteSubscriptionGroup, "DELETE_SUBSCRIPTIONGROUP", ext, nil); err != nil {
				return err
			}
			c := cluster
			if c == "" {
				c = e.clusterOf(addr)
			}
			if !e.jsonOut() {
				e.printf("delete subscription group [%s] from broker [%s] in cluster [%s] success.\n", group, addr, c)
			}
		}
		var topics []string
		if cluster != "" {
			// As mqadmin: the group's retry and dead-letter topics go too.
			for _, t := range []string{"%RETRY%" + group, "%DLQ%" + group} {
				for _, addr := range addrs {
					if _, err := e.brokerCall(addr, remoting.DeleteTopicInBroker, "DELETE_TOPIC_IN_BROKER", map[string]string{"topic": t}, nil); err != nil {
						return err
					}
				}
				for _, n := range e.ns {
					if _, err := call(e.cli, n, remoting.NewRequest(remoting.DeleteTopicInNamesrv, map[string]string{"topic": t, "clusterName": cluster}, nil)); err != nil {
						return err
					}
				}
				topics = append(topics, t)
				if !e.jsonOut() {
					e.printf("delete topic [%s] from cluster [%s] success.\n", t, cluster)
				}
			}
		}
		if e.jsonOut() {
			return e.printJSON(map[string]any{"group": group, "brokers": addrs, "cleanOffset": clean, "deletedTopics": topics})
		}
		return nil
	})
	c.Flags().StringVarP(&broker, "brokerAddr", "b", "", "delete subscription group from which broker")
	c.Flags().StringVarP(&cluster, "clusterName", "c", "", "delete subscription group from which cluster")
	c.Flags().StringVarP(&group, "groupName", "g", "", "subscription group name")
	c.Flags().StringVarP(&removeOffset, "removeOffset", "r", "", "remove the group's offsets too (true|false)")
	return c
}

func (a *admin) updateSubGroupList() *cobra.Command {
	var broker, cluster, file string
	c := a.command("updateSubGroupList", "create or update the groups of a JSON file (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST)", true, func(e *adminEnv, _ []string) error {
		if file == "" {
			return errors.New("give -f FILE (a JSON array of SubscriptionGroupConfig)")
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		var raw []json.RawMessage
		if err := json.Unmarshal(data, &raw); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		list := make([]*metadata.SubscriptionGroupConfig, 0, len(raw))
		for _, r := range raw {
			g := metadata.NewSubscriptionGroupConfig("")
			if err := json.Unmarshal(r, g); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			if g.GroupName == "" {
				return fmt.Errorf("%s: a group without groupName", file)
			}
			list = append(list, g)
		}
		addrs, err := e.targets(broker, cluster)
		if err != nil {
			return err
		}
		body, err := json.Marshal(adminbody.SubscriptionGroupList{GroupConfigList: list})
		if err != nil {
			return err
		}
		names := make([]string, 0, len(list))
		for _, g := range list {
			names = append(names, g.GroupName)
		}
		return e.submitBatch(addrs, codeUpdateAndCreateSubscriptionGroupList, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST", body, "group", "groups", names,
			func(addr string) error {
				for _, g := range list {
					b, _ := json.Marshal(g)
					if _, err := e.brokerCall(addr, remoting.UpdateAndCreateSubscriptionGroup, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP", nil, b); err != nil {
						return err
					}
				}
				return nil
			})
	})
	c.Flags().StringVarP(&broker, "brokerAddr", "b", "", "create groups to which broker")
	c.Flags().StringVarP(&cluster, "clusterName", "c", "", "create groups to which cluster")
	c.Flags().StringVarP(&file, "filename", "f", "", "path to a file with a list of SubscriptionGroupConfig in JSON format")
	return c
}

// groupBroker picks the master to ask about a group: the first master of
// its retry topic's route, else the first master the name server knows.
func (e *adminEnv) groupBroker(group string) (string, error) {
	if r, ok, err := lookupRoute(e.cli, e.ns, "%RETRY%"+group); err == nil && ok {
		for _, qd := range r.QueueDatas {
			if a := r.masterAddr(qd.BrokerName); a != "" {
				return a, nil
			}
		}
	}
	addrs, err := e.allMasters()
	if err != nil {
		return "", err
	}
	return addrs[0], nil
}

// allMasters lists every master address, sorted by broker name.
func (e *adminEnv) allMasters() ([]string, error) {
	ct, err := e.clusterInfo()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range masters(ct.brokers("")) {
		out = append(out, r.Addr)
	}
	if len(out) == 0 {
		return nil, errors.New("the name server knows no master broker")
	}
	return out, nil
}

// consumeStats merges every master's GET_CONSUME_STATS for group.
func (e *adminEnv) consumeStats(group string) (*adminbody.ConsumeStats, error) {
	addrs, err := e.allMasters()
	if err != nil {
		return nil, err
	}
	all := &adminbody.ConsumeStats{OffsetTable: adminbody.Map[adminbody.MessageQueue, adminbody.OffsetWrapper]{}}
	for _, addr := range addrs {
		resp, err := e.brokerCall(addr, codeGetConsumeStats, "GET_CONSUME_STATS", map[string]string{"consumerGroup": group}, nil)
		if err != nil {
			return nil, err
		}
		var cs adminbody.ConsumeStats
		if err := adminbody.Unmarshal(resp.Body, &cs); err != nil {
			return nil, fmt.Errorf("GET_CONSUME_STATS answer of %s: %w", addr, err)
		}
		for q, w := range cs.OffsetTable {
			all.OffsetTable[q] = w
		}
		all.ConsumeTps += cs.ConsumeTps
	}
	return all, nil
}

func (e *adminEnv) consumerConnection(group string) (*adminbody.ConsumerConnection, error) {
	addr, err := e.groupBroker(group)
	if err != nil {
		return nil, err
	}
	resp, err := e.brokerCall(addr, codeGetConsumerConnectionList, "GET_CONSUMER_CONNECTION_LIST", map[string]string{"consumerGroup": group}, nil)
	if err != nil {
		return nil, err
	}
	var cc adminbody.ConsumerConnection
	if err := adminbody.Unmarshal(resp.Body, &cc); err != nil {
		return nil, fmt.Errorf("GET_CONSUMER_CONNECTION_LIST answer of %s: %w", addr, err)
	}
	return &cc, nil
}

func (a *admin) consumerProgress() *cobra.Command {
	var group string
	c := a.command("consumerProgress", "print a group's offsets and lag per queue (GET_CONSUME_STATS)", true, func(e *adminEnv, _ []string) error {
		if group == "" {
			return a.allGroupsProgress(e)
		}
		cs, err := e.consumeStats(group)
		if err != nil {
			return err
		}
		qs := sortedQueues(cs.OffsetTable)
		if e.jsonOut() {
			type row struct {
				Topic          string `json:"topic"`
				BrokerName     string `json:"brokerName"`
				QueueID        int    `json:"queueId"`
				BrokerOffset   int64  `json:"brokerOffset"`
				ConsumerOffset int64  `json:"consumerOffset"`
				PullOffset     int64  `json:"pullOffset"`
				LastTimestamp  int64  `json:"lastTimestamp"`
				Diff           int64  `json:"diff"`
				Inflight       int64  `json:"inflight"`
			}
			rows := make([]row, 0, len(qs))
			for _, q := range qs {
				w := cs.OffsetTable[q]
				rows = append(rows, row{q.Topic, q.BrokerName, q.QueueID, w.BrokerOffset, w.ConsumerOffset, w.PullOffset,
					w.LastTimestamp, w.BrokerOffset - w.ConsumerOffset, w.PullOffset - w.ConsumerOffset})
			}
			return e.printJSON(map[string]any{"group": group, "queues": rows, "consumeTps": float64(cs.ConsumeTps),
				"diffTotal": cs.TotalDiff(), "inflightTotal": cs.InflightTotalDiff()})
		}
		e.printf("%-64s  %-32s  %-4s  %-20s  %-20s  %-20s  %-20s  %s\n", "#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#Inflight", "#LastTime")
		for _, q := range qs {
			w := cs.OffsetTable[q]
			last := "N/A"
			if w.LastTimestamp > 0 {
				last = javaTime(w.LastTimestamp)
			}
			e.printf("%-64s  %-32s  %-4d  %-20d  %-20d  %-20d  %-20d  %s\n", q.Topic, q.BrokerName, q.QueueID, w.BrokerOffset, w.ConsumerOffset,
				w.BrokerOffset-w.ConsumerOffset, w.PullOffset-w.ConsumerOffset, last)
		}
		e.printf("\nConsume TPS: %.2f\n", float64(cs.ConsumeTps))
		e.printf("Consume Diff Total: %d\n", cs.TotalDiff())
		e.printf("Consume Inflight Total: %d\n", cs.InflightTotalDiff())
		return nil
	})
	c.Flags().StringVarP(&group, "groupName", "g", "", "consumer group name (default: every group)")
	return c
}

// allGroupsProgress is consumerProgress without -g: one line per group.
func (a *admin) allGroupsProgress(e *adminEnv) error {
	addrs, err := e.allMasters()
	if err != nil {
		return err
	}
	set := map[string]bool{}
	for _, addr := range addrs {
		resp, err := e.brokerCall(addr, remoting.GetAllSubscriptionGroupConfig, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG", nil, nil)
		if err != nil {
			return err
		}
		var w adminbody.SubscriptionGroupWrapper
		if err := adminbody.Unmarshal(resp.Body, &w); err != nil {
			return err
		}
		for g := range w.SubscriptionGroupTable {
			set[g] = true
		}
	}
	type row struct {
		Group     string  `json:"group"`
		Count     int     `json:"count"`
		Version   string  `json:"version"`
		Type      string  `json:"consumeType"`
		Model     string  `json:"messageModel"`
		TPS       float64 `json:"consumeTps"`
		DiffTotal int64   `json:"diffTotal"`
	}
	var rows []row
	for _, g := range sortedKeys(set) {
		cs, err := e.consumeStats(g)
		if err != nil {
			return err
		}
		r := row{Group: g, TPS: float64(cs.ConsumeTps), DiffTotal: cs.TotalDiff()}
		if cc, err := e.consumerConnection(g); err == nil && len(cc.ConnectionSet) > 0 {
			r.Count, r.Type, r.Model = len(cc.ConnectionSet), cc.ConsumeType, cc.MessageModel
			r.Version = versionDesc(cc.ConnectionSet[0].Version)
		} else {
			r.Version, r.Type, r.Model = "OFFLINE", "", ""
		}
		rows = append(rows, r)
	}
	if e.jsonOut() {
		return e.printJSON(rows)
	}
	e.printf("%-64s  %-6s  %-24s %-5s  %-14s  %-7s  %s\n", "#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff Total")
	for _, r := range rows {
		typ := r.Type
		if strings.HasPrefix(typ, "CONSUME_") {
			typ = map[string]string{adminbody.ConsumeActively: "PULL", adminbody.ConsumePassively: "PUSH", adminbody.ConsumePop: "POP"}[typ]
		}
		e.printf("%-64s  %-6d  %-24s %-5s  %-14s  %-7d  %d\n", r.Group, r.Count, r.Version, typ, r.Model, int64(r.TPS), r.DiffTotal)
	}
	return nil
}

// versionDesc names a client's remoting version as MQVersion.getVersionDesc
// does for RocketMQ 5 (V5_0_0 is 413; each patch release has a snapshot
// ordinal before it, ten patches to a minor), else the number.
func versionDesc(v int) string {
	if v >= 412 && v < 612 {
		n := v - 412
		minor, patch, snap := n/20, (n%20)/2, n%2 == 0
		s := fmt.Sprintf("V5_%d_%d", minor, patch)
		if snap {
			s += "_SNAPSHOT"
		}
		return s
	}
	return strconv.Itoa(v)
}

func (a *admin) consumerConnection() *cobra.Command {
	var group string
	c := a.command("consumerConnection", "print a group's consumer connections and subscriptions", true, func(e *adminEnv, _ []string) error {
		if group == "" {
			return errors.New("give -g GROUP")
		}
		cc, err := e.consumerConnection(group)
		if err != nil {
			return err
		}
		if e.jsonOut() {
			return e.printJSON(cc)
		}
		conns := append([]adminbody.Connection(nil), cc.ConnectionSet...)
		sort.Slice(conns, func(i, j int) bool { return conns[i].ClientID < conns[j].ClientID })
		e.printf("%-3s  %-32s %-22s %-8s %s\n", "#", "#ClientId", "#ClientAddr", "#Language", "#Version")
		for i, c := range conns {
			e.printf("%03d  %-32s %-22s %-8s %s\n", i+1, c.ClientID, c.ClientAddr, c.Language, versionDesc(c.Version))
		}
		e.printf("\nBelow is subscription:\n")
		i := 0
		for _, t := range sortedKeys(cc.SubscriptionTable) {
			i++
			e.printf("%03d  Topic: %-40s SubExpression: %s\n", i, t, cc.SubscriptionTable[t].SubString)
		}
		e.printf("\nConsumeType: %s\nMessageModel: %s\nConsumeFromWhere: %s\n", cc.ConsumeType, cc.MessageModel, cc.ConsumeFromWhere)
		return nil
	})
	c.Flags().StringVarP(&group, "consumerGroup", "g", "", "consumer group name")
	return c
}

func (a *admin) producerConnection() *cobra.Command {
	var group, topic string
	c := a.command("producerConnection", "print a producer group's connections", true, func(e *adminEnv, _ []string) error {
		if group == "" || topic == "" {
			return errors.New("give -g PRODUCER_GROUP and -t TOPIC")
		}
		r, err := e.routeOf(topic)
		if err != nil {
			return err
		}
		seen := map[string]adminbody.Connection{}
		for _, qd := range r.QueueDatas {
			addr := r.masterAddr(qd.BrokerName)
			if addr == "" {
				continue
			}
			resp, err := e.brokerCall(addr, codeGetProducerConnectionList, "GET_PRODUCER_CONNECTION_LIST", map[string]string{"producerGroup": group}, nil)
			if err != nil {
				return err
			}
			var pc adminbody.ProducerConnection
			if err := adminbody.Unmarshal(resp.Body, &pc); err != nil {
				return fmt.Errorf("GET_PRODUCER_CONNECTION_LIST answer of %s: %w", addr, err)
			}
			for _, c := range pc.ConnectionSet {
				seen[c.ClientID+"|"+c.ClientAddr] = c
			}
		}
		conns := make([]adminbody.Connection, 0, len(seen))
		for _, k := range sortedKeys(seen) {
			conns = append(conns, seen[k])
		}
		if e.jsonOut() {
			return e.printJSON(adminbody.ProducerConnection{ConnectionSet: conns})
		}
		for i, c := range conns {
			e.printf("%04d  %-32s %-22s %-8s %s\n", i+1, c.ClientID, c.ClientAddr, c.Language, versionDesc(c.Version))
		}
		return nil
	})
	c.Flags().StringVarP(&group, "producerGroup", "g", "", "producer group name")
	c.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	return c
}
