package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// route is the part of a TopicRouteData the tools need.
type route struct {
	QueueDatas []struct {
		BrokerName     string `json:"brokerName"`
		ReadQueueNums  int    `json:"readQueueNums"`
		WriteQueueNums int    `json:"writeQueueNums"`
		Perm           int    `json:"perm"`
	} `json:"queueDatas"`
	BrokerDatas []struct {
		BrokerName  string            `json:"brokerName"`
		Cluster     string            `json:"cluster"`
		BrokerAddrs map[string]string `json:"brokerAddrs"`
	} `json:"brokerDatas"`
}

// queueRef names one queue of a topic on one broker.
type queueRef struct {
	brokerName string
	addr       string
	queueID    int
}

func (r *route) masterAddr(brokerName string) string {
	for _, b := range r.BrokerDatas {
		if b.BrokerName == brokerName {
			return b.BrokerAddrs["0"]
		}
	}
	return ""
}

// writeQueues lists the queues producers may send to: the write bit and a
// master address are needed.
func (r *route) writeQueues() []queueRef {
	return r.queues(2, func(q int, _ int) int { return q })
}

// readQueues lists the queues consumers may pull from.
func (r *route) readQueues() []queueRef {
	return r.queues(4, func(_ int, q int) int { return q })
}

// queues lists the queues of every broker whose perm has bit, counting them
// with count(writeQueueNums, readQueueNums).
func (r *route) queues(bit int, count func(write, read int) int) []queueRef {
	var out []queueRef
	for _, q := range r.QueueDatas {
		addr := r.masterAddr(q.BrokerName)
		if addr == "" || q.Perm&bit == 0 {
			continue
		}
		for i := 0; i < count(q.WriteQueueNums, q.ReadQueueNums); i++ {
			out = append(out, queueRef{q.BrokerName, addr, i})
		}
	}
	return out
}

// call makes one request and turns a non-success answer into an error.
func call(cli *transport.Client, addr string, req *remoting.Command, ok ...int32) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	signAdmin(req)
	resp, err := cli.Invoke(ctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("%s to %s: %w", remoting.RequestName(req.Code), addr, err)
	}
	if resp.Code == remoting.Success {
		return resp, nil
	}
	for _, c := range ok {
		if resp.Code == c {
			return resp, nil
		}
	}
	return resp, fmt.Errorf("%s to %s: code %d: %s", remoting.RequestName(req.Code), addr, resp.Code, resp.Remark)
}

// lookupRoute asks each name server in turn for a topic's route; found is
// false when they answer TOPIC_NOT_EXIST.
func lookupRoute(cli *transport.Client, namesrvs []string, topic string) (*route, bool, error) {
	var lastErr error
	for _, ns := range namesrvs {
		resp, err := call(cli, ns, remoting.NewRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": topic}, nil), remoting.TopicNotExist)
		if err != nil {
			lastErr = err
			continue
		}
		if resp.Code == remoting.TopicNotExist {
			return nil, false, nil
		}
		r := &route{}
		if err := json.Unmarshal(resp.Body, r); err != nil {
			return nil, false, fmt.Errorf("route of %s from %s: %w", topic, ns, err)
		}
		return r, true, nil
	}
	return nil, false, lastErr
}

// clusterBrokers lists every broker master address the name server knows.
func clusterBrokers(cli *transport.Client, namesrvs []string) (map[string]string, error) {
	var lastErr error
	for _, ns := range namesrvs {
		resp, err := call(cli, ns, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
		if err != nil {
			lastErr = err
			continue
		}
		var info struct {
			BrokerAddrTable map[string]struct {
				BrokerAddrs map[string]string `json:"brokerAddrs"`
			} `json:"brokerAddrTable"`
		}
		if err := json.Unmarshal(resp.Body, &info); err != nil {
			return nil, fmt.Errorf("cluster info from %s: %w", ns, err)
		}
		out := map[string]string{}
		for name, b := range info.BrokerAddrTable {
			if a := b.BrokerAddrs["0"]; a != "" {
				out[name] = a
			}
		}
		return out, nil
	}
	return nil, lastErr
}

// createTopic creates or updates a topic on every master broker.
func createTopic(cli *transport.Client, namesrvs []string, topic string, queues, perm int) error {
	brokers, err := clusterBrokers(cli, namesrvs)
	if err != nil {
		return err
	}
	if len(brokers) == 0 {
		return fmt.Errorf("the name server knows no broker")
	}
	for _, addr := range brokers {
		ext := map[string]string{
			"topic": topic, "defaultTopic": systopic.AutoCreate,
			"readQueueNums": fmt.Sprint(queues), "writeQueueNums": fmt.Sprint(queues),
			"perm": fmt.Sprint(perm), "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
		}
		if _, err := call(cli, addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, ext, nil)); err != nil {
			return err
		}
	}
	return nil
}

func splitNamesrv(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
