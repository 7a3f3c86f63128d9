package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
)

// rawConn is a bare remoting connection for requests the official client
// cannot make (ROCKETMQ headers, malformed frames).
type rawConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{c: c, r: bufio.NewReader(c)}
}

func (rc *rawConn) call(t testing.TB, req *remoting.Command) *remoting.Command {
	t.Helper()
	frame, err := remoting.Encode(req)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	_ = rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write(frame); err != nil {
		t.Fatalf("write: %v", err)
	}
	resp, err := remoting.ReadCommand(rc.r, 64<<20)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	return resp
}

var rawOpaque int32 = 1000

func rawRequest(code int32, ext map[string]string, body []byte) *remoting.Command {
	rawOpaque++
	return &remoting.Command{Code: code, Language: "GO", Version: 317, Opaque: rawOpaque, ExtFields: ext, Body: body}
}

// routeQueues asks the name server for a topic's route and returns the
// write queue count per broker name (empty when the topic has no route).
func (s *spool) routeQueues(t testing.TB, topic string) map[string]int {
	t.Helper()
	rc := dialRaw(t, s.namesrvAddr)
	defer rc.c.Close()
	resp := rc.call(t, rawRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": topic}, nil))
	out := map[string]int{}
	if resp.Code != remoting.Success {
		return out
	}
	var route struct {
		QueueDatas []struct {
			BrokerName     string `json:"brokerName"`
			WriteQueueNums int    `json:"writeQueueNums"`
		} `json:"queueDatas"`
	}
	if err := json.Unmarshal(resp.Body, &route); err != nil {
		t.Fatalf("route body %q: %v", resp.Body, err)
	}
	for _, q := range route.QueueDatas {
		for i := 0; i < q.WriteQueueNums; i++ {
			out[fmt.Sprintf("%s/%d", q.BrokerName, i)] = 1
		}
	}
	return out
}

// offsets returns the group's committed offset (-1 when none) and the
// queue's max offset for every queue id below queues.
func (s *spool) offsets(t testing.TB, group, topic string, queues int) (committed, max []int64) {
	t.Helper()
	rc := dialRaw(t, s.brokerAddr)
	defer rc.c.Close()
	for q := 0; q < queues; q++ {
		qid := strconv.Itoa(q)
		resp := rc.call(t, rawRequest(remoting.QueryConsumerOffset, map[string]string{"consumerGroup": group, "topic": topic, "queueId": qid}, nil))
		c := int64(-1)
		if resp.Code == remoting.Success {
			c, _ = strconv.ParseInt(resp.Ext("offset"), 10, 64)
		}
		resp = rc.call(t, rawRequest(remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": qid}, nil))
		m, err := strconv.ParseInt(resp.Ext("offset"), 10, 64)
		if err != nil {
			t.Fatalf("GET_MAX_OFFSET answer without offset: %d %q", resp.Code, resp.Remark)
		}
		committed, max = append(committed, c), append(max, m)
	}
	return committed, max
}

// waitCommitted waits until the group has committed every queue up to its
// max offset (the official client persists offsets every 5 s).
func (s *spool) waitCommitted(t testing.TB, group, topic string, queues int) {
	t.Helper()
	waitFor(t, 30*time.Second, "group "+group+" to commit all of "+topic, func() bool {
		c, m := s.offsets(t, group, topic, queues)
		for i := range c {
			if c[i] != m[i] {
				return false
			}
		}
		return true
	})
}
