package main

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/remoting"
)

// More broker request codes the offset and stats commands send (RocketMQ
// RequestCode numbers).
const (
	codeInvokeBrokerToResetOffset int32 = 222
	codeCloneGroupOffset          int32 = 314
	codeViewBrokerStatsData       int32 = 315
)

func (a *admin) offsetCommands() []*cobra.Command {
	return []*cobra.Command{a.resetOffsetByTime(), a.skipAccumulatedMessage(), a.cloneGroupOffset(), a.statsAll()}
}

// resetOffsets sends INVOKE_BROKER_TO_RESET_OFFSET to every master of the
// topic's route and merges the queue -> offset answers.
func (e *adminEnv) resetOffsets(group, topic string, timestamp int64, force bool) (map[adminbody.MessageQueue]int64, error) {
	r, err := e.routeOf(topic)
	if err != nil {
		return nil, err
	}
	out := map[adminbody.MessageQueue]int64{}
	for _, qd := range r.QueueDatas {
		addr := r.masterAddr(qd.BrokerName)
		if addr == "" {
			continue
		}
		ext := map[string]string{"topic": topic, "group": group, "timestamp": strconv.FormatInt(timestamp, 10),
			"isForce": strconv.FormatBool(force), "queueId": "-1"}
		resp, err := e.brokerCall(addr, codeInvokeBrokerToResetOffset, "INVOKE_BROKER_TO_RESET_OFFSET", ext, nil)
		if err != nil {
			return nil, err
		}
		if len(resp.Body) == 0 {
			continue
		}
		var body adminbody.ResetOffsetBody
		if err := adminbody.Unmarshal(resp.Body, &body); err != nil {
			return nil, fmt.Errorf("INVOKE_BROKER_TO_RESET_OFFSET answer of %s: %w", addr, err)
		}
		for q, o := range body.OffsetTable {
			out[q] = o
		}
	}
	return out, nil
}

func (e *adminEnv) printResetOffsets(offsets map[adminbody.MessageQueue]int64) error {
	qs := sortedQueues(adminbody.Map[adminbody.MessageQueue, int64](offsets))
	if e.jsonOut() {
		type row struct {
			Topic      string `json:"topic"`
			BrokerName string `json:"brokerName"`
			QueueID    int    `json:"queueId"`
			Offset     int64  `json:"offset"`
		}
		rows := make([]row, 0, len(qs))
		for _, q := range qs {
			rows = append(rows, row{q.Topic, q.BrokerName, q.QueueID, offsets[q]})
		}
		return e.printJSON(rows)
	}
	e.printf("%-40s  %-40s  %-40s\n", "#brokerName", "#queueId", "#offset")
	for _, q := range qs {
		e.printf("%-40s  %-40d  %-40d\n", q.BrokerName, q.QueueID, offsets[q])
	}
	return nil
}

func (a *admin) resetOffsetByTime() *cobra.Command {
	var group, topic, ts, force string
	c := a.command("resetOffsetByTime", "move a group's offsets to a time (INVOKE_BROKER_TO_RESET_OFFSET)", true, func(e *adminEnv, _ []string) error {
		if group == "" || topic == "" || ts == "" {
			return errors.New("give -g GROUP -t TOPIC -s TIMESTAMP (ms, now, or yyyy-MM-dd#HH:mm:ss:SSS)")
		}
		var when int64
		if ts == "now" {
			when = time.Now().UnixMilli()
		} else {
			var err error
			if when, err = parseTimeFlag("s", ts, 0); err != nil {
				return err
			}
		}
		f, err := boolFlag("f", force, true)
		if err != nil {
			return err
		}
		offsets, err := e.resetOffsets(group, topic, when, f)
		if err != nil {
			return err
		}
		if !e.jsonOut() {
			e.printf("rollback consumer offset by specified group[%s], topic[%s], force[%v], timestamp(string)[%s], timestamp(long)[%d]\n",
				group, topic, f, ts, when)
		}
		return e.printResetOffsets(offsets)
	})
	c.Flags().StringVarP(&group, "group", "g", "", "consumer group name")
	c.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	c.Flags().StringVarP(&ts, "timestamp", "s", "", "ms, now, or yyyy-MM-dd#HH:mm:ss:SSS")
	c.Flags().StringVarP(&force, "force", "f", "", "reset even to a larger offset (true|false, default true)")
	var cplus string
	c.Flags().StringVarP(&cplus, "cplus", "c", "", "reset a C++ client's offsets (accepted; the broker pushes to every client)")
	return c
}

func (a *admin) skipAccumulatedMessage() *cobra.Command {
	var group, topic, cluster, force string
	c := a.command("skipAccumulatedMessage", "move a group's offsets to the end of the topic's queues", true, func(e *adminEnv, _ []string) error {
		if group == "" || topic == "" {
			return errors.New("give -g GROUP and -t TOPIC")
		}
		f, err := boolFlag("f", force, true)
		if err != nil {
			return err
		}
		// A timestamp of -1 is RocketMQ's "the max offset".
		offsets, err := e.resetOffsets(group, topic, -1, f)
		if err != nil {
			return err
		}
		return e.printResetOffsets(offsets)
	})
	c.Flags().StringVarP(&group, "group", "g", "", "consumer group name")
	c.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	c.Flags().StringVarP(&cluster, "cluster", "c", "", "cluster name (accepted; the route names the brokers)")
	c.Flags().StringVarP(&force, "force", "f", "", "true|false (default true)")
	return c
}

func (a *admin) cloneGroupOffset() *cobra.Command {
	var src, dst, topic, offline string
	c := a.command("cloneGroupOffset", "copy one group's offsets of a topic to another group (CLONE_GROUP_OFFSET)", false, func(e *adminEnv, _ []string) error {
		if src == "" || dst == "" || topic == "" {
			return errors.New("give -s SRC_GROUP -d DEST_GROUP -t TOPIC")
		}
		off, err := boolFlag("o", offline, false)
		if err != nil {
			return err
		}
		r, err := e.routeOf(topic)
		if err != nil {
			return err
		}
		var addrs []string
		for _, qd := range r.QueueDatas {
			addr := r.masterAddr(qd.BrokerName)
			if addr == "" {
				continue
			}
			ext := map[string]string{"srcGroup": src, "destGroup": dst, "topic": topic, "offline": strconv.FormatBool(off)}
			if _, err := e.brokerCall(addr, codeCloneGroupOffset, "CLONE_GROUP_OFFSET", ext, nil); err != nil {
				return err
			}
			addrs = append(addrs, addr)
		}
		if e.jsonOut() {
			return e.printJSON(map[string]any{"srcGroup": src, "destGroup": dst, "topic": topic, "brokers": addrs})
		}
		e.printf("clone group offset success. srcGroup[%s], destGroup=[%s], topic[%s]\n", src, dst, topic)
		return nil
	})
	c.Flags().StringVarP(&src, "srcGroup", "s", "", "source group")
	c.Flags().StringVarP(&dst, "destGroup", "d", "", "destination group")
	c.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	c.Flags().StringVarP(&offline, "offline", "o", "", "the destination group is offline (true|false)")
	return c
}

// brokerStats reads VIEW_BROKER_STATS_DATA of one stats item; a key the
// broker has not counted (SYSTEM_ERROR "The stats <...> not exist" from
// RocketMQ, or QUERY_NOT_FOUND) is zero, as mqadmin counts it.
func (e *adminEnv) brokerStats(addr, name, key string) (adminbody.BrokerStatsData, error) {
	var d adminbody.BrokerStatsData
	resp, err := e.brokerCall(addr, codeViewBrokerStatsData, "VIEW_BROKER_STATS_DATA", map[string]string{"statsName": name, "statsKey": key}, nil)
	if resp != nil && (resp.Code == remoting.QueryNotFound ||
		resp.Code == remoting.SystemError && strings.Contains(resp.Remark, "not exist")) {
		return d, nil
	}
	if err != nil {
		return d, err
	}
	err = adminbody.Unmarshal(resp.Body, &d)
	return d, err
}

// sum24h is mqadmin's compute24HourSum: the day's sum, else the hour's,
// else the minute's.
func sum24h(d adminbody.BrokerStatsData) int64 {
	switch {
	case d.StatsDay.Sum != 0:
		return d.StatsDay.Sum
	case d.StatsHour.Sum != 0:
		return d.StatsHour.Sum
	}
	return d.StatsMinute.Sum
}

func (a *admin) statsAll() *cobra.Command {
	var topicOnly string
	var active bool
	c := a.command("statsAll", "per topic and group: accumulation, TPS in and out, messages in the last 24 hours", true, func(e *adminEnv, _ []string) error {
		topics := []string{topicOnly}
		if topicOnly == "" {
			all, err := allTopics(e)
			if err != nil {
				return err
			}
			topics = topics[:0]
			for _, t := range all {
				if !systopic.IsSystem(t) && !strings.HasPrefix(t, systopic.RetryPrefix) && !strings.HasPrefix(t, systopic.DLQPrefix) {
					topics = append(topics, t)
				}
			}
		}
		type row struct {
			Topic        string  `json:"topic"`
			Group        string  `json:"consumerGroup"`
			Accumulation int64   `json:"accumulation"`
			InTPS        float64 `json:"inTps"`
			OutTPS       float64 `json:"outTps"`
			InMsg24Hour  int64   `json:"inMsg24Hour"`
			OutMsg24Hour int64   `json:"outMsg24Hour"`
			NoConsumer   bool    `json:"noConsumer,omitempty"`
		}
		var rows []row
		for _, t := range topics {
			r, err := e.routeOf(t)
			if err != nil {
				return err
			}
			var inTPS float64
			var in24 int64
			groups := map[string]bool{}
			var addrs []string
			for _, qd := range r.QueueDatas {
				addr := r.masterAddr(qd.BrokerName)
				if addr == "" {
					continue
				}
				addrs = append(addrs, addr)
				d, err := e.brokerStats(addr, "TOPIC_PUT_NUMS", t)
				if err != nil {
					return err
				}
				inTPS += float64(d.StatsMinute.Tps)
				in24 += sum24h(d)
				resp, err := e.brokerCall(addr, codeQueryTopicConsumeByWho, "QUERY_TOPIC_CONSUME_BY_WHO", map[string]string{"topic": t}, nil)
				if err != nil {
					return err
				}
				var gl adminbody.GroupList
				if err := adminbody.Unmarshal(resp.Body, &gl); err != nil {
					return err
				}
				for _, g := range gl.GroupList {
					groups[g] = true
				}
			}
			if len(groups) == 0 {
				if !active || in24 > 0 {
					rows = append(rows, row{Topic: t, InTPS: inTPS, InMsg24Hour: in24, NoConsumer: true})
				}
				continue
			}
			for _, g := range sortedKeys(groups) {
				rw := row{Topic: t, Group: g, InTPS: inTPS, InMsg24Hour: in24}
				for _, addr := range addrs {
					d, err := e.brokerStats(addr, "GROUP_GET_NUMS", t+"@"+g)
					if err != nil {
						return err
					}
					rw.OutTPS += float64(d.StatsMinute.Tps)
					rw.OutMsg24Hour += sum24h(d)
					resp, err := e.brokerCall(addr, codeGetConsumeStats, "GET_CONSUME_STATS", map[string]string{"consumerGroup": g, "topic": t}, nil)
					if err != nil {
						return err
					}
					var cs adminbody.ConsumeStats
					if err := adminbody.Unmarshal(resp.Body, &cs); err != nil {
						return err
					}
					rw.Accumulation += cs.TotalDiff()
				}
				if !active || rw.InMsg24Hour > 0 || rw.OutMsg24Hour > 0 {
					rows = append(rows, rw)
				}
			}
		}
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].Topic < rows[j].Topic })
		if e.jsonOut() {
			return e.printJSON(rows)
		}
		e.printf("%-64s  %-64s %12s %11s %11s %14s %14s\n", "#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour")
		for _, r := range rows {
			if r.NoConsumer {
				e.printf("%-64s  %-64s %12d %11.2f %11s %14d %14s\n", r.Topic, "", 0, r.InTPS, "", r.InMsg24Hour, "NO_CONSUMER")
				continue
			}
			e.printf("%-64s  %-64s %12d %11.2f %11.2f %14d %14d\n", r.Topic, r.Group, r.Accumulation, r.InTPS, r.OutTPS, r.InMsg24Hour, r.OutMsg24Hour)
		}
		return nil
	})
	c.Flags().StringVarP(&topicOnly, "topic", "t", "", "only this topic")
	c.Flags().BoolVarP(&active, "activeTopic", "a", false, "only topics with messages in the last 24 hours")
	return c
}
