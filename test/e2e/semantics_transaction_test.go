package e2e

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// txSettings make the check service fast enough for a test.
var txSettings = []string{"transactionCheckInterval=1000", "transactionTimeOut=1000"}

// checkCounter counts check-backs per message body.
type checkCounter struct {
	mu     sync.Mutex
	checks map[string]int
}

func (c *checkCounter) add(body string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.checks == nil {
		c.checks = map[string]int{}
	}
	c.checks[body]++
	return c.checks[body]
}

func (c *checkCounter) get(body string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checks[body]
}

// Commit is delivered, rollback never is, and an unknown outcome is
// resolved by check-back: the first check answers unknown again, the next
// one commits.
func TestSemanticsTransactions(t *testing.T) {
	t.Parallel()
	s := startSpool(t, txSettings...)
	topic := "E2ESemTx"
	s.createTopic(t, s.newAdmin(t), topic, 2)
	log := newReceiptLog()
	s.startConsumer(t, "cg-sem-tx", topic, consumer.MessageSelector{}, log.handler)

	var checks checkCounter
	l := &txListener{
		exec: func(m *primitive.Message) primitive.LocalTransactionState {
			switch string(m.Body) {
			case "commit":
				return primitive.CommitMessageState
			case "rollback":
				return primitive.RollbackMessageState
			}
			return primitive.UnkonwnState
		},
		check: func(m *primitive.MessageExt) primitive.LocalTransactionState {
			b := string(m.Body)
			n := checks.add(b)
			switch {
			case b == "commit":
				return primitive.CommitMessageState
			case b == "rollback":
				return primitive.RollbackMessageState
			case n == 1:
				return primitive.UnkonwnState
			}
			return primitive.CommitMessageState
		},
	}
	p := s.newTxProducer(t, "pg-sem-tx", l)
	for _, b := range []string{"rollback", "commit", "unknown"} {
		res, err := p.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte(b)))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send half %s: %v %+v", b, err, res)
		}
	}
	waitFor(t, 60*time.Second, "commit and the checked unknown", func() bool {
		return log.hasAll([]string{"commit", "unknown"})
	})
	if n := checks.get("unknown"); n < 2 {
		t.Errorf("unknown delivered after %d check-backs, want >= 2 (the first answered unknown)", n)
	}
	// The rollback was sent before the unknown, which needed two check
	// rounds: had the rollback leaked, it would be here by now.
	if n := log.count("rollback"); n != 0 {
		t.Errorf("rolled back message delivered %d times", n)
	}
	if n := checks.get("commit") + checks.get("rollback"); n != 0 {
		t.Errorf("resolved transactions checked back %d times (commit %d, rollback %d)", n, checks.get("commit"), checks.get("rollback"))
	}
	for _, r := range log.snapshot() {
		b := string(r.msg.Body)
		if n := log.count(b); n != 1 {
			t.Errorf("%s delivered %d times, want once", b, n)
		}
		if v := r.msg.GetProperty(primitive.PropertyTransactionPrepared); v != "" {
			t.Errorf("%s delivered with TRAN_MSG=%q", b, v)
		}
	}
}

// An unknown half message is checked again after a kill -9 of the broker:
// check state is rebuilt from disk and the producer, once it has
// reconnected, answers the check.
//
// The Go producer heartbeats 1 s after its start (when it knows no broker
// yet) and then every 30 s, and the broker can check back only a group it
// knows from a heartbeat. Its client instance is shared with consumers (as
// the clients of one process are by default), so a consumer start sends a
// heartbeat at once, carrying the producer group: once before the kill,
// and once after the restart to make the client reconnect.
func TestSemanticsTransactionCheckSurvivesKill(t *testing.T) {
	t.Parallel()
	s := startSpool(t, txSettings...)
	s.logOnFailure(t)
	topic := "E2ESemTxKill"
	s.createTopic(t, s.newAdmin(t), topic, 1)

	var restarted atomic.Bool
	var checksBefore, checksAfter atomic.Int64
	var mu sync.Mutex
	var countsBefore, countsAfter []string // TRANSACTION_CHECK_TIMES of each check
	l := &txListener{
		exec: func(*primitive.Message) primitive.LocalTransactionState { return primitive.UnkonwnState },
		check: func(m *primitive.MessageExt) primitive.LocalTransactionState {
			if string(m.Body) != "pending" {
				return primitive.RollbackMessageState
			}
			mu.Lock()
			if !restarted.Load() {
				countsBefore = append(countsBefore, m.GetProperty("TRANSACTION_CHECK_TIMES"))
			} else {
				countsAfter = append(countsAfter, m.GetProperty("TRANSACTION_CHECK_TIMES"))
			}
			mu.Unlock()
			if !restarted.Load() {
				checksBefore.Add(1)
				return primitive.UnkonwnState
			}
			checksAfter.Add(1)
			return primitive.CommitMessageState
		},
	}
	shared := instance("txkill")
	p := s.newTxProducer(t, "pg-sem-tx-kill", l, producer.WithInstanceName(shared))
	res, err := p.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte("pending")))
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("send half: %v %+v", err, res)
	}
	before := newReceiptLog()
	s.startConsumer(t, "cg-sem-tx-kill-a", topic, consumer.MessageSelector{}, before.handler, consumer.WithInstance(shared))
	waitFor(t, 60*time.Second, "a first check-back", func() bool { return checksBefore.Load() > 0 })

	if m := s.maxOffset(t, topic, 0); m != 0 {
		t.Errorf("%s/0 holds %d messages while the transaction is unknown, want 0", topic, m)
	}
	s.kill()
	restarted.Store(true)
	deliveredBeforeKill := before.count("pending")
	s.start()

	log := newReceiptLog()
	s.startConsumer(t, "cg-sem-tx-kill-b", topic, consumer.MessageSelector{}, log.handler, consumer.WithInstance(shared))
	waitFor(t, 90*time.Second, "the half message to be checked and committed after the kill", func() bool {
		return log.count("pending") > 0
	})
	if checksAfter.Load() == 0 {
		t.Fatal("delivered without a check after the restart")
	}
	if n := log.count("pending"); n != 1 {
		t.Errorf("committed message delivered %d times to the group started after the restart, want once", n)
	}
	// The check count lives on disk: the first check after the restart
	// continues the count instead of starting again.
	mu.Lock()
	last, first := countsBefore[len(countsBefore)-1], countsAfter[0]
	mu.Unlock()
	lastN, err1 := strconv.Atoi(last)
	firstN, err2 := strconv.Atoi(first)
	if err1 != nil || err2 != nil || firstN <= lastN {
		t.Errorf("TRANSACTION_CHECK_TIMES %q in the last check before the kill, %q in the first after: want a growing count", last, first)
	}
	if deliveredBeforeKill != 0 {
		t.Errorf("the unknown half was delivered %d times before the kill", deliveredBeforeKill)
	}
	if m := s.maxOffset(t, topic, 0); m != 1 {
		t.Errorf("%s/0 holds %d messages after the commit, want 1", topic, m)
	}
}
