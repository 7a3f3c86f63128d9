package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/internal/config"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/remoting"
)

func (a *admin) brokerCommands() []*cobra.Command {
	return []*cobra.Command{a.clusterList(), a.brokerStatus(), a.getBrokerConfig(), a.updateBrokerConfig(), a.exportMetadata()}
}

// runtimeInfo asks a broker for GET_BROKER_RUNTIME_INFO's table.
func (e *adminEnv) runtimeInfo(addr string) (map[string]string, error) {
	resp, err := e.brokerCall(addr, remoting.GetBrokerRuntimeInfo, "GET_BROKER_RUNTIME_INFO", nil, nil)
	if err != nil {
		return nil, err
	}
	var kv adminbody.KVTable
	if err := json.Unmarshal(resp.Body, &kv); err != nil {
		return nil, fmt.Errorf("GET_BROKER_RUNTIME_INFO answer of %s: %w", addr, err)
	}
	return kv.Table, nil
}

// firstFloat reads the first space-separated figure of a runtime value
// ("12.5 11.0 10.2" for the TPS windows), 0 when absent.
func firstFloat(v string) float64 {
	f, _ := strconv.ParseFloat(strings.Fields(v + " 0")[0], 64)
	return f
}

func orZero(v string) string {
	if v == "" {
		return "0"
	}
	return v
}

func (a *admin) clusterList() *cobra.Command {
	var cluster string
	c := a.command("clusterList", "list the clusters' brokers with their load (GET_BROKER_CLUSTER_INFO, GET_BROKER_RUNTIME_INFO)", true, func(e *adminEnv, _ []string) error {
		ct, err := e.clusterInfo()
		if err != nil {
			return err
		}
		type row struct {
			brokerRef
			Version   string  `json:"version"`
			InTPS     float64 `json:"inTps"`
			OutTPS    float64 `json:"outTps"`
			PCWait    string  `json:"pageCacheLockTimeMills"`
			Hour      float64 `json:"hour"`
			Space     string  `json:"space"`
			Activated bool    `json:"activated"`
			table     map[string]string
		}
		var rows []row
		for _, r := range ct.brokers(cluster) {
			t, err := e.runtimeInfo(r.Addr)
			if err != nil {
				t = map[string]string{}
			}
			hour := 0.0
			if ts, err := strconv.ParseInt(t["earliestMessageTimeStamp"], 10, 64); err == nil && ts > 0 {
				hour = float64(time.Now().UnixMilli()-ts) / 3600000
			}
			rows = append(rows, row{brokerRef: r, Version: t["brokerVersionDesc"], InTPS: firstFloat(t["putTps"]),
				OutTPS: firstFloat(t["getTransferedTps"]), PCWait: orZero(t["pageCacheLockTimeMills"]), Hour: hour,
				Space: orZero(t["commitLogDiskRatio"]), Activated: t["brokerActive"] == "true", table: t})
		}
		if e.jsonOut() {
			return e.printJSON(rows)
		}
		e.printf("%-22s  %-22s  %-4s  %-22s %-16s  %16s  %30s  %-22s  %-11s  %-12s  %-8s  %-10s\n",
			"#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)", "#OutTPS(LOAD)", "#Timer(Progress)", "#PCWait(ms)", "#Hour", "#SPACE", "#ACTIVATED")
		for _, r := range rows {
			t := r.table
			in := fmt.Sprintf("%9.2f(%s,%sms)", r.InTPS, orZero(t["sendThreadPoolQueueSize"]), orZero(t["sendThreadPoolQueueHeadWaitTimeMills"]))
			out := fmt.Sprintf("%9.2f(%s,%sms|%s,%sms)", r.OutTPS, orZero(t["pullThreadPoolQueueSize"]), orZero(t["pullThreadPoolQueueHeadWaitTimeMills"]),
				orZero(t["ackThreadPoolQueueSize"]), orZero(t["ackThreadPoolQueueHeadWaitTimeMills"]))
			congest, _ := strconv.ParseFloat(orZero(t["timerCongestNum"]), 64)
			timer := fmt.Sprintf("%s-%s(%.1fw, %.1f, %.1f)", orZero(t["timerReadBehind"]), orZero(t["timerOffsetBehind"]), congest/10000,
				firstFloat(t["timerEnqueueTps"]), firstFloat(t["timerDequeueTps"]))
			e.printf("%-22s  %-22s  %-4d  %-22s %-16s  %16s  %30s  %-22s  %11s  %-12s  %-8s  %10v\n",
				r.Cluster, r.BrokerName, r.BrokerID, r.Addr, r.Version, in, out, timer, r.PCWait, fmt.Sprintf("%2.2f", r.Hour), r.Space, r.Activated)
		}
		return nil
	})
	c.Flags().StringVarP(&cluster, "clusterName", "c", "", "which cluster (default: all)")
	return c
}

func (a *admin) brokerStatus() *cobra.Command {
	var broker, cluster string
	c := a.command("brokerStatus", "print a broker's runtime figures (GET_BROKER_RUNTIME_INFO)", true, func(e *adminEnv, _ []string) error {
		addrs, err := e.everyBroker(broker, cluster)
		if err != nil {
			return err
		}
		all := map[string]map[string]string{}
		for _, addr := range addrs {
			t, err := e.runtimeInfo(addr)
			if err != nil {
				return err
			}
			all[addr] = t
		}
		if e.jsonOut() {
			if broker != "" {
				return e.printJSON(all[broker])
			}
			return e.printJSON(all)
		}
		for _, addr := range addrs {
			t := all[addr]
			for _, k := range sortedKeys(t) {
				if broker != "" {
					e.printf("%-32s: %s\n", k, t[k])
				} else {
					e.printf("%-24s %-32s: %s\n", addr, k, t[k])
				}
			}
		}
		return nil
	})
	c.Flags().StringVarP(&broker, "brokerAddr", "b", "", "broker address")
	c.Flags().StringVarP(&cluster, "clusterName", "c", "", "every broker of this cluster")
	return c
}

// brokerConfig reads GET_BROKER_CONFIG's properties body.
func (e *adminEnv) brokerConfig(addr string) (map[string]string, error) {
	resp, err := e.brokerCall(addr, remoting.GetBrokerConfig, "GET_BROKER_CONFIG", nil, nil)
	if err != nil {
		return nil, err
	}
	return config.ParseProperties(bytes.NewReader(resp.Body))
}

// printConfigs prints mqadmin's getBrokerConfig / getNamesrvConfig form.
func (e *adminEnv) printConfigs(order []string, all map[string]map[string]string) error {
	if e.jsonOut() {
		return e.printJSON(all)
	}
	for _, addr := range order {
		e.printf("============%s============\n", addr)
		for _, k := range sortedKeys(all[addr]) {
			e.printf("%-50s=  %s\n", k, all[addr][k])
		}
	}
	return nil
}

func (a *admin) getBrokerConfig() *cobra.Command {
	var broker, cluster string
	c := a.command("getBrokerConfig", "print brokers' configuration (GET_BROKER_CONFIG)", true, func(e *adminEnv, _ []string) error {
		addrs, err := e.everyBroker(broker, cluster)
		if err != nil {
			return err
		}
		all := map[string]map[string]string{}
		for _, addr := range addrs {
			kv, err := e.brokerConfig(addr)
			if err != nil {
				return err
			}
			all[addr] = kv
		}
		return e.printConfigs(addrs, all)
	})
	c.Flags().StringVarP(&broker, "brokerAddr", "b", "", "broker address")
	c.Flags().StringVarP(&cluster, "clusterName", "c", "", "every broker of this cluster")
	return c
}

func (a *admin) updateBrokerConfig() *cobra.Command {
	var broker, cluster, key, value string
	c := a.command("updateBrokerConfig", "change a live broker key (UPDATE_BROKER_CONFIG)", true, func(e *adminEnv, _ []string) error {
		if key == "" {
			return errors.New("give -k KEY and -v VALUE")
		}
		addrs, err := e.targets(broker, cluster)
		if err != nil {
			return err
		}
		body := []byte(key + "=" + value + "\n")
		for _, addr := range addrs {
			if _, err := e.brokerCall(addr, remoting.UpdateBrokerConfig, "UPDATE_BROKER_CONFIG", nil, body); err != nil {
				return err
			}
			if !e.jsonOut() {
				e.printf("update broker config success, %s\n", addr)
			}
		}
		if e.jsonOut() {
			return e.printJSON(map[string]any{"brokers": addrs, "key": key, "value": value})
		}
		return nil
	})
	c.Flags().StringVarP(&broker, "brokerAddr", "b", "", "update which broker")
	c.Flags().StringVarP(&cluster, "clusterName", "c", "", "update which cluster")
	c.Flags().StringVarP(&key, "key", "k", "", "config key")
	c.Flags().StringVarP(&value, "value", "v", "", "config value")
	return c
}

func (a *admin) exportMetadata() *cobra.Command {
	var broker, cluster, dir string
	var topicOnly, groupOnly, special bool
	c := a.command("exportMetadata", "write the brokers' topic and group configs to DIR/metadata.json (or topic.json, subscriptionGroup.json)", true, func(e *adminEnv, _ []string) error {
		addrs, err := e.targets(broker, cluster)
		if err != nil {
			return err
		}
		topics := map[string]*metadata.TopicConfig{}
		groups := map[string]*metadata.SubscriptionGroupConfig{}
		for _, addr := range addrs {
			if !groupOnly {
				resp, err := e.brokerCall(addr, remoting.GetAllTopicConfig, "GET_ALL_TOPIC_CONFIG", nil, nil)
				if err != nil {
					return err
				}
				var w adminbody.TopicConfigSerializeWrapper
				if err := adminbody.Unmarshal(resp.Body, &w); err != nil {
					return fmt.Errorf("GET_ALL_TOPIC_CONFIG answer of %s: %w", addr, err)
				}
				for name, tc := range w.TopicConfigTable {
					if !special && isSystemTopic(name) {
						continue
					}
					if old, ok := topics[name]; ok {
						// As mqadmin: the queue counts add up over brokers.
						old.ReadQueueNums += tc.ReadQueueNums
						old.WriteQueueNums += tc.WriteQueueNums
						continue
					}
					topics[name] = tc
				}
			}
			if !topicOnly {
				resp, err := e.brokerCall(addr, remoting.GetAllSubscriptionGroupConfig, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG", nil, nil)
				if err != nil {
					return err
				}
				var w adminbody.SubscriptionGroupWrapper
				if err := adminbody.Unmarshal(resp.Body, &w); err != nil {
					return fmt.Errorf("GET_ALL_SUBSCRIPTIONGROUP_CONFIG answer of %s: %w", addr, err)
				}
				for name, g := range w.SubscriptionGroupTable {
					if !special && isSystemGroup(name) {
						continue
					}
					groups[name] = g
				}
			}
		}
		doc := map[string]any{"exportTime": time.Now().UnixMilli()}
		file := "metadata.json"
		switch {
		case topicOnly:
			doc["topicConfigTable"], file = topics, "topic.json"
		case groupOnly:
			doc["subscriptionGroupTable"], file = groups, "subscriptionGroup.json"
		default:
			doc["topicConfigTable"], doc["subscriptionGroupTable"] = topics, groups
		}
		data, err := json.MarshalIndent(doc, "", "\t")
		if err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		path := filepath.Join(dir, file)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
		if e.jsonOut() {
			return e.printJSON(map[string]any{"file": path, "topics": len(topics), "subscriptionGroups": len(groups)})
		}
		e.printf("export %s success\n", path)
		return nil
	})
	f := c.Flags()
	f.StringVarP(&broker, "brokerAddr", "b", "", "choose a broker to export")
	f.StringVarP(&cluster, "clusterName", "c", "", "choose a cluster to export")
	f.StringVarP(&dir, "filePath", "f", "/tmp/rocketmq/export", "export metadata.json to this directory")
	f.BoolVarP(&topicOnly, "topic", "t", false, "only export the topic metadata")
	f.BoolVarP(&groupOnly, "subscriptionGroup", "g", false, "only export the subscription group metadata")
	f.BoolVarP(&special, "specialTopic", "s", false, "include the system topics and groups")
	return c
}

// isSystemTopic reports the topics exportMetadata leaves out by default:
// RocketMQ's system topics and the retry and dead-letter topics.
func isSystemTopic(t string) bool {
	return systopic.IsSystem(t) || systopic.IsRetry(t) || systopic.IsDLQ(t)
}

// isSystemGroup reports RocketMQ's built-in groups.
func isSystemGroup(g string) bool {
	switch g {
	case "TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "__MONITOR_CONSUMER", "CLIENT_INNER_PRODUCER", "SELF_TEST_P_GROUP",
		"SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_ONSAPI_PULL",
		"CID_RMQ_SYS_TRANS":
		return true
	}
	return strings.HasPrefix(g, "CID_RMQ_SYS_") || strings.HasPrefix(g, "CID_SYS_RMQ_TRANS")
}
