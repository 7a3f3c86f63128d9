package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolmq/spool/internal/adminbody"
)

// codeGetConsumerRunningInfo is RocketMQ's GET_CONSUMER_RUNNING_INFO: the
// broker relays it to the client the header names.
const codeGetConsumerRunningInfo int32 = 307

// runningInfo asks, through a broker, one client of group for its
// ConsumerRunningInfo.
func (e *adminEnv) runningInfo(group, clientID string, jstack bool) (*adminbody.ConsumerRunningInfo, error) {
	addr, err := e.groupBroker(group)
	if err != nil {
		return nil, err
	}
	ext := map[string]string{"consumerGroup": group, "clientId": clientID, "jstackEnable": strconv.FormatBool(jstack)}
	resp, err := e.brokerCall(addr, codeGetConsumerRunningInfo, "GET_CONSUMER_RUNNING_INFO", ext, nil)
	if err != nil {
		return nil, err
	}
	var cri adminbody.ConsumerRunningInfo
	if err := adminbody.Unmarshal(resp.Body, &cri); err != nil {
		return nil, fmt.Errorf("GET_CONSUMER_RUNNING_INFO answer of %s for %s: %w", addr, clientID, err)
	}
	return &cri, nil
}

// subscriptionKey is what analyzeSubscription compares between clients:
// each topic and its expression.
func subscriptionKey(cri *adminbody.ConsumerRunningInfo) string {
	var parts []string
	for _, s := range cri.SubscriptionSet {
		parts = append(parts, s.Topic+"\x00"+s.SubString)
	}
	sort.Strings(parts)
	b, _ := json.Marshal(parts)
	return string(b)
}

// printRunningInfo prints one client's running info in the sections of
// RocketMQ's ConsumerRunningInfo.formatString.
func (e *adminEnv) printRunningInfo(cri *adminbody.ConsumerRunningInfo) {
	e.printf("#Consumer Properties#\n")
	for _, k := range sortedKeys(cri.Properties) {
		e.printf("%-40s: %s\n", k, cri.Properties[k])
	}
	e.printf("\n\n#Consumer Subscription#\n")
	for i, s := range cri.SubscriptionSet {
		e.printf("%03d Topic: %-40s ClassFilter: %-8v SubExpression: %s\n", i+1, s.Topic, s.ClassFilterMode, s.SubString)
	}
	e.printf("\n\n#Consumer Offset#\n")
	e.printf("%-64s  %-32s  %-4s  %-20s\n", "#Topic", "#Broker Name", "#QID", "#Consumer Offset")
	for _, q := range sortedQueues(cri.MqTable) {
		e.printf("%-64s  %-32s  %-4d  %-20d\n", q.Topic, q.BrokerName, q.QueueID, cri.MqTable[q].CommitOffset)
	}
	e.printf("\n\n#Consumer MQ Detail#\n")
	e.printf("%-64s  %-32s  %-4s  %-20s\n", "#Topic", "#Broker Name", "#QID", "#ProcessQueueInfo")
	for _, q := range sortedQueues(cri.MqTable) {
		b, _ := json.Marshal(cri.MqTable[q])
		e.printf("%-64s  %-32s  %-4d  %s\n", q.Topic, q.BrokerName, q.QueueID, b)
	}
	e.printf("\n\n#Consumer RT&TPS#\n")
	e.printf("%-64s  %14s %14s %14s %14s %18s %25s\n", "#Topic", "#Pull RT", "#Pull TPS", "#Consume RT", "#ConsumeOK TPS", "#ConsumeFailed TPS", "#ConsumeFailedMsgsInHour")
	for _, t := range sortedKeys(cri.StatusTable) {
		s := cri.StatusTable[t]
		e.printf("%-64s  %14.2f %14.2f %14.2f %14.2f %18.2f %25d\n", t, float64(s.PullRT), float64(s.PullTPS), float64(s.ConsumeRT),
			float64(s.ConsumeOKTPS), float64(s.ConsumeFailedTPS), s.ConsumeFailedMsgs)
	}
	if cri.Jstack != "" {
		e.printf("\n\n#Consumer jstack#\n%s\n", cri.Jstack)
	}
}

func (a *admin) consumerStatus() *cobra.Command {
	var group, clientID string
	var jstack bool
	c := a.command("consumerStatus", "print the running state of a group's consumers (GET_CONSUMER_RUNNING_INFO through the broker)", true, func(e *adminEnv, _ []string) error {
		if group == "" {
			return errors.New("give -g GROUP")
		}
		if clientID != "" {
			cri, err := e.runningInfo(group, clientID, jstack)
			if err != nil {
				return err
			}
			if e.jsonOut() {
				return e.printJSON(cri)
			}
			e.printRunningInfo(cri)
			return nil
		}
		cc, err := e.consumerConnection(group)
		if err != nil {
			return err
		}
		conns := append([]adminbody.Connection(nil), cc.ConnectionSet...)
		sort.Slice(conns, func(i, j int) bool { return conns[i].ClientID < conns[j].ClientID })
		dir := filepath.Join(os.TempDir(), "rocketmq", "consumerStatus", strconv.FormatInt(time.Now().UnixMilli(), 10))
		infos := map[string]*adminbody.ConsumerRunningInfo{}
		type row struct {
			ClientID string `json:"clientId"`
			Version  string `json:"version"`
			File     string `json:"file"`
		}
		var rows []row
		for _, conn := range conns {
			cri, err := e.runningInfo(group, conn.ClientID, jstack)
			if err != nil {
				return err
			}
			infos[conn.ClientID] = cri
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			path := filepath.Join(dir, conn.ClientID)
			b, _ := json.MarshalIndent(cri, "", "  ")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				return err
			}
			rows = append(rows, row{conn.ClientID, versionDesc(conn.Version), path})
		}
		same := true
		var first string
		for i, r := range rows {
			k := subscriptionKey(infos[r.ClientID])
			if i == 0 {
				first = k
			} else if k != first {
				same = false
			}
		}
		if e.jsonOut() {
			return e.printJSON(map[string]any{"group": group, "clients": rows, "sameSubscription": same})
		}
		for i, r := range rows {
			e.printf("%03d  %-40s %-20s %s\n", i+1, r.ClientID, r.Version, r.File)
		}
		if len(rows) > 0 {
			if same {
				e.printf("\n\nSame subscription in the same group of consumer\n")
			} else {
				e.printf("\n\nWARN: Different subscription in the same group of consumer!!!\n")
			}
		}
		return nil
	})
	c.Flags().StringVarP(&group, "consumerGroup", "g", "", "consumer group name")
	c.Flags().StringVarP(&clientID, "clientId", "s", "", "the consumer's client id")
	c.Flags().BoolVarP(&jstack, "jstack", "i", false, "ask for the client's thread stacks")
	return c
}
