package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
)

// A broker whose descriptor limit is below its number of queues keeps
// dispatching: every message sent to every queue is readable, new
// connections to the broker and the name server still work, and it
// restarts under the same limit.
func TestQueuesBeyondDescriptorLimit(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	const nofile, topics, queuesPer = 512, 8, 100 // 800 queues
	ns, br := freePort(t, false), freePort(t, true)
	s := &spool{t: t, store: t.TempDir(), namesrvAddr: fmt.Sprintf("127.0.0.1:%d", ns),
		brokerAddr: fmt.Sprintf("127.0.0.1:%d", br), vipAddr: fmt.Sprintf("127.0.0.1:%d", br-2),
		wrap: []string{prlimit, fmt.Sprintf("--nofile=%d:%d", nofile, nofile), "--"}}
	s.start()
	t.Cleanup(func() {
		if s.running() {
			s.stop()
		}
	})
	rc := dialRaw(t, s.brokerAddr)
	info := func() map[string]string {
		t.Helper()
		resp := rc.call(t, rawRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
		var body struct {
			Table map[string]string `json:"table"`
		}
		if resp.Code != remoting.Success || json.Unmarshal(resp.Body, &body) != nil {
			t.Fatalf("runtime info: %d %q", resp.Code, resp.Remark)
		}
		return body.Table
	}
	if tb := info(); tb["openFileSoftLimit"] != strconv.Itoa(nofile) || tb["openFileHardLimit"] != strconv.Itoa(nofile) {
		t.Fatalf("runtime info limits soft %q hard %q, want %d", tb["openFileSoftLimit"], tb["openFileHardLimit"], nofile)
	}
	topic := func(i int) string { return fmt.Sprintf("NofileTopic%d", i) }
	for i := 0; i < topics; i++ {
		resp := rc.call(t, rawRequest(remoting.UpdateAndCreateTopic, map[string]string{
			"topic": topic(i), "defaultTopic": "TBW102", "readQueueNums": strconv.Itoa(queuesPer),
			"writeQueueNums": strconv.Itoa(queuesPer), "perm": "6", "topicFilterType": "SINGLE_TAG"}, nil))
		if resp.Code != remoting.Success {
			t.Fatalf("create %s: %d %q", topic(i), resp.Code, resp.Remark)
		}
	}
	send := func(round int) {
		t.Helper()
		for i := 0; i < topics; i++ {
			for q := 0; q < queuesPer; q++ {
				resp := rc.call(t, rawRequest(remoting.SendMessage, map[string]string{
					"producerGroup": "pg", "topic": topic(i), "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
					"queueId": strconv.Itoa(q), "sysFlag": "0", "bornTimestamp": "1", "flag": "0",
				}, []byte(fmt.Sprintf("%s/%d/%d", topic(i), q, round))))
				if resp.Code != remoting.Success {
					t.Fatalf("send %s/%d round %d: %d %q", topic(i), q, round, resp.Code, resp.Remark)
				}
			}
		}
	}
	// readAll pulls every queue (each over a new connection) and checks
	// it holds the messages of rounds [0, rounds).
	readAll := func(rounds int) {
		t.Helper()
		for i := 0; i < topics; i++ {
			for q := 0; q < queuesPer; q++ {
				var msgs []string
				waitFor(t, 30*time.Second, fmt.Sprintf("%s/%d to hold %d messages", topic(i), q, rounds), func() bool {
					msgs = msgs[:0]
					for _, m := range s.pullAll(t, "nofile-group", topic(i), q) {
						msgs = append(msgs, string(m.Body))
					}
					return len(msgs) >= rounds
				})
				for r := 0; r < rounds; r++ {
					if want := fmt.Sprintf("%s/%d/%d", topic(i), q, r); len(msgs) != rounds || msgs[r] != want {
						t.Fatalf("%s/%d: messages %q, want %d ending with %q", topic(i), q, msgs, rounds, want)
					}
				}
			}
		}
	}
	send(0)
	readAll(1)
	tb := info()
	open, _ := strconv.Atoi(tb["openFiles"])
	cqOpen, _ := strconv.Atoi(tb["consumeQueueOpenFiles"])
	cqLimit, _ := strconv.Atoi(tb["consumeQueueFileLimit"])
	if open <= 0 || open >= nofile || cqOpen > cqLimit || tb["dispatchError"] != "" {
		t.Fatalf("with %d queues: openFiles %q, consume-queue %q (limit %q), dispatchError %q", topics*queuesPer,
			tb["openFiles"], tb["consumeQueueOpenFiles"], tb["consumeQueueFileLimit"], tb["dispatchError"])
	}
	t.Logf("%d queues under RLIMIT_NOFILE=%d: %s descriptors open, %s of them consume-queue files (limit %s), %s opens, %s evictions",
		topics*queuesPer, nofile, tb["openFiles"], tb["consumeQueueOpenFiles"], tb["consumeQueueFileLimit"],
		tb["consumeQueueFileOpens"], tb["consumeQueueFileEvictions"])
	// New connections still work: the name server answers a route.
	if got := len(s.routeQueues(t, topic(topics-1))); got != queuesPer {
		t.Fatalf("route of %s over a new connection: %d queues, want %d", topic(topics-1), got, queuesPer)
	}

	s.restart()
	rc = dialRaw(t, s.brokerAddr)
	send(1)
	readAll(2)
	if tb := info(); tb["dispatchError"] != "" {
		t.Fatalf("after restart: dispatchError %q", tb["dispatchError"])
	}
}
