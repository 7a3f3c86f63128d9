package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
)

func TestPullStatuses(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("P1", 2)
	sub := pullFlagSubscription
	check := func(name string, req *remoting.Command, code int32, next int64) {
		t.Helper()
		resp := e.invoke(req)
		if resp.Code != code {
			t.Errorf("%s: code %d remark %q, want %d", name, resp.Code, resp.Remark, code)
			return
		}
		if next >= 0 {
			if got := extInt(t, resp, "nextBeginOffset"); got != next {
				t.Errorf("%s: nextBeginOffset %d, want %d", name, got, next)
			}
			extInt(t, resp, "minOffset")
			extInt(t, resp, "maxOffset")
			extInt(t, resp, "suggestWhichBrokerId")
		}
	}
	check("empty queue offset 0", pullReq("g", "P1", 0, 0, sub, 0, "*"), remoting.PullNotFound, 0)
	check("empty queue offset 5", pullReq("g", "P1", 0, 5, sub, 0, "*"), remoting.PullOffsetMoved, 0)
	e.mustSend("P1", 0, "", "a")
	e.mustSend("P1", 0, "", "b")
	e.waitDispatched("P1", 0, 2)
	check("offset == max", pullReq("g", "P1", 0, 2, sub, 0, "*"), remoting.PullNotFound, 2)
	check("offset > max", pullReq("g", "P1", 0, 9, sub, 0, "*"), remoting.PullOffsetMoved, 2)
	check("found", pullReq("g", "P1", 0, 1, sub, 0, "*"), remoting.Success, 2)
	e.waitDispatched("OFFSET_MOVED_EVENT", 0, 2) // one per PULL_OFFSET_MOVED answer
	check("unknown topic", pullReq("g", "Nope", 0, 3, sub, 0, "*"), remoting.TopicNotExist, 3)
	check("bad queue", pullReq("g", "P1", 2, 1, sub, 0, "*"), remoting.InvalidParameter, 1)
	check("no heartbeat", pullReq("g", "P1", 0, 1, 0, 0, ""), remoting.SubscriptionNotExist, 1)
	bad := pullReq("g", "P1", 0, 0, sub, 0, "*")
	delete(bad.ExtFields, "queueOffset")
	resp := e.invoke(bad)
	if resp.Code != remoting.InvalidParameter || !strings.Contains(resp.Remark, "queueOffset") {
		t.Errorf("missing queueOffset: code %d remark %q", resp.Code, resp.Remark)
	}
}

func TestPullCommitOffsetFlag(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("P2", 1)
	req := pullReq("g", "P2", 0, 0, pullFlagSubscription|pullFlagCommitOffset, 0, "*")
	req.ExtFields["commitOffset"] = "7"
	e.invoke(req)
	if got := e.b.offsets.Query("g", "P2", 0); got != 7 {
		t.Fatalf("committed %d, want 7", got)
	}
}

func TestLongPollWokenBySend(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("LP", 1)
	type result struct {
		resp *remoting.Command
		err  error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := e.client.InvokeAsync(ctx, e.b.Addr(), pullReq("g", "LP", 0, 0, pullFlagSubscription|pullFlagSuspend, 20000, "*"),
		func(r *remoting.Command, err error) { done <- result{r, err} })
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pull to be held", func() bool { return e.b.longPoll.Held() == 1 })
	e.mustSend("LP", 0, "", "wake")
	r := <-done
	if r.err != nil || r.resp.Code != remoting.Success {
		t.Fatalf("held pull: err %v resp %+v", r.err, r.resp)
	}
	if recs := decodeRecords(t, r.resp.Body); len(recs) != 1 || string(recs[0].Body) != "wake" {
		t.Fatalf("records %+v", recs)
	}
	if e.b.longPoll.Held() != 0 {
		t.Errorf("%d pulls still held", e.b.longPoll.Held())
	}
}

func TestLongPollTimeout(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("LT", 1)
	e.mustSend("LT", 0, "", "x")
	e.waitDispatched("LT", 0, 1)
	resp := e.invoke(pullReq("g", "LT", 0, 1, pullFlagSubscription|pullFlagSuspend, 50, "*"))
	if resp.Code != remoting.PullNotFound || extInt(t, resp, "nextBeginOffset") != 1 {
		t.Fatalf("code %d remark %q next %v", resp.Code, resp.Remark, resp.ExtFields)
	}
}

func TestShutdownAnswersHeldPulls(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("LS", 1)
	done := make(chan *remoting.Command, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.client.InvokeAsync(ctx, e.b.Addr(), pullReq("g", "LS", 0, 0, pullFlagSubscription|pullFlagSuspend, 20000, "*"),
		func(r *remoting.Command, err error) { done <- r }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pull to be held", func() bool { return e.b.longPoll.Held() == 1 })
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if err := e.b.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	r := <-done
	if r == nil || r.Code != remoting.PullNotFound {
		t.Fatalf("held pull at shutdown: %+v", r)
	}
	if e.ns.lastRegistration() == nil {
		t.Errorf("never registered")
	}
	e.ns.mu.Lock()
	last := e.ns.reqs[len(e.ns.reqs)-1]
	e.ns.mu.Unlock()
	if last.Code != remoting.UnregisterBroker {
		t.Errorf("last name-server request %s, want UNREGISTER_BROKER", remoting.RequestName(last.Code))
	}
}
