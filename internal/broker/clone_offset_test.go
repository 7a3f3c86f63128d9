package broker

import (
	"strconv"
	"testing"

	"github.com/spoolmq/spool/remoting"
)

// TestCloneGroupOffset: CLONE_GROUP_OFFSET replaces the destination
// group's offsets of the topic with the source's; a blank topic clones
// every topic the source committed; a missing group is INVALID_PARAMETER.
func TestCloneGroupOffset(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("C1", 4)
	e.createTopic("C2", 2)
	// src is online, subscribed to C1 only.
	e.invoke(goRequest(remoting.HeartBeat, nil, goHeartbeat("c1", "src", "C1", "*")))
	e.invoke(goRequest(remoting.HeartBeat, nil, goHeartbeat("c2", "dst", "C1", "*")))
	e.invoke(goRequest(remoting.HeartBeat, nil, goHeartbeat("c3", "all", "C2", "*")))
	commit := func(group, topic string, q, off int) {
		r := e.invoke(goRequest(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": group, "topic": topic,
			"queueId": strconv.Itoa(q), "commitOffset": strconv.Itoa(off)}, nil))
		if r.Code != remoting.Success {
			t.Fatalf("commit: %d %s", r.Code, r.Remark)
		}
	}
	query := func(group, topic string, q int) int64 {
		r := e.invoke(goRequest(remoting.QueryConsumerOffset, map[string]string{"consumerGroup": group, "topic": topic,
			"queueId": strconv.Itoa(q)}, nil))
		if r.Code != remoting.Success {
			return -1
		}
		return extInt(t, r, "offset")
	}
	clone := func(ext map[string]string) *remoting.Command {
		return e.invoke(goRequest(remoting.CloneGroupOffset, ext, nil))
	}
	commit("src", "C1", 0, 7)
	commit("src", "C1", 3, 9)
	commit("src", "C2", 1, 4)
	commit("dst", "C1", 2, 100) // replaced by the clone

	if r := clone(map[string]string{"srcGroup": "src", "destGroup": "dst", "topic": "C1", "offline": "false"}); r.Code != remoting.Success {
		t.Fatalf("clone: %d %s", r.Code, r.Remark)
	}
	if a, b, c := query("dst", "C1", 0), query("dst", "C1", 3), query("dst", "C1", 2); a != 7 || b != 9 || c != -1 {
		t.Fatalf("dst offsets of C1 after the clone: q0=%d q3=%d q2=%d, want 7, 9, none", a, b, c)
	}
	if q := query("dst", "C2", 1); q != -1 {
		t.Fatalf("C2 cloned with topic C1 given: %d", q)
	}
	// Online and not offline: the topic src does not subscribe is skipped.
	if r := clone(map[string]string{"srcGroup": "src", "destGroup": "all"}); r.Code != remoting.Success {
		t.Fatalf("clone of every topic: %d %s", r.Code, r.Remark)
	}
	if a, b := query("all", "C1", 3), query("all", "C2", 1); a != 9 || b != -1 {
		t.Fatalf("clone of every subscribed topic: C1/3=%d C2/1=%d, want 9 and none", a, b)
	}
	if r := clone(map[string]string{"srcGroup": "src", "destGroup": "all", "offline": "true"}); r.Code != remoting.Success {
		t.Fatalf("offline clone of every topic: %d %s", r.Code, r.Remark)
	}
	if a, b := query("all", "C1", 3), query("all", "C2", 1); a != 9 || b != 4 {
		t.Fatalf("offline clone of every topic: C1/3=%d C2/1=%d", a, b)
	}
	if r := clone(map[string]string{"srcGroup": "src", "topic": "C1"}); r.Code != remoting.InvalidParameter {
		t.Fatalf("clone without destGroup: %d %s", r.Code, r.Remark)
	}
}
