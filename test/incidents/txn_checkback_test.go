package incidents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/broker"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

const txnGroup = "incident-tx-producer"

// TestTransactionCheckBackStorm replays seed 000's root cause: many
// unresolved half messages older than transactionTimeOut, the producer
// answering UNKNOWN to every check. The check-back reads must stay within
// transactionCheckReadMsgsPerSecond / transactionCheckReadBytesPerSecond
// and sends must keep their latency.
//
// The halves are sent by producers that never register their group, so
// the check service passes them over (reading nothing) during the
// baseline; the storm starts when a producer of the group connects and
// answers UNKNOWN.
func TestTransactionCheckBackStorm(t *testing.T) {
	var ratios []float64
	runReps(t, func(t *testing.T) { ratios = append(ratios, txnStormOnce(t)) })
	t.Logf("median over %d run(s): send p99 ratio %.2f", prof.reps, median(ratios))
	if prof.timed {
		if m := median(ratios); m > 2 {
			t.Errorf("send p99 during the check-back storm is %.2fx the baseline (median), target <= 2x", m)
		}
	}
}

// unknownProducer registers txnGroup on its connection and answers every
// CHECK_TRANSACTION_STATE with END_TRANSACTION "unknown".
type unknownProducer struct {
	cli    *transport.Client
	checks atomic.Int64
	errs   atomic.Int64
}

func newUnknownProducer() *unknownProducer {
	p := &unknownProducer{}
	p.cli = transport.NewClient(transport.ClientConfig{DialTimeout: 10 * time.Second, Handler: p.handle})
	return p
}

func (p *unknownProducer) handle(c *transport.Conn, req *remoting.Command) *remoting.Command {
	if req.Code != remoting.CheckTransactionState {
		return remoting.NewResponse(req, remoting.RequestCodeNotSupported, "not a producer request")
	}
	p.checks.Add(1)
	end := remoting.NewRequest(remoting.EndTransaction, map[string]string{
		"producerGroup": txnGroup, "tranStateTableOffset": req.Ext("tranStateTableOffset"),
		"commitLogOffset": req.Ext("commitLogOffset"), "commitOrRollback": strconv.Itoa(int(message.TransactionNotType)),
		"fromTransactionCheck": "true", "msgId": req.Ext("msgId"), "transactionId": req.Ext("transactionId"),
	}, nil)
	if err := c.InvokeOneway(end); err != nil {
		p.errs.Add(1)
	}
	return nil
}

func (p *unknownProducer) register(t *testing.T, addr string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"clientID": "incident-tx@1", "producerDataSet": []map[string]string{{"groupName": txnGroup}},
		"consumerDataSet": []any{}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := p.cli.Invoke(ctx, addr, remoting.NewRequest(remoting.HeartBeat, nil, body))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("producer heartbeat: %v %v", err, resp)
	}
}

// sendHalves sends n half messages of txnGroup from connections that do
// not register the group.
func sendHalves(t *testing.T, addr, topic string, n int) {
	t.Helper()
	body := make([]byte, 1024)
	var next, bad atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for c := 0; c < 4; c++ {
		cli := transport.NewClient(transport.ClientConfig{DialTimeout: 10 * time.Second})
		defer cli.Close()
		for j := 0; j < 8; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1) - 1
					if i >= int64(n) {
						return
					}
					props := message.EncodeProperties(map[string]string{
						message.PropertyUniqClientMessageIDKeyIdx: message.NewUniqID(),
						message.PropertyTransactionPrepared:       "true",
						message.PropertyProducerGroup:             txnGroup,
					})
					req := remoting.NewRequest(remoting.SendMessageV2, map[string]string{
						"a": txnGroup, "b": topic, "c": "TBW102", "d": "8", "e": strconv.Itoa(int(i % 8)),
						"f": strconv.Itoa(int(message.TransactionPreparedType)), "g": strconv.FormatInt(time.Now().UnixMilli(), 10), "h": "0", "i": props, "j": "0", "k": "false",
					}, body)
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					resp, err := cli.Invoke(ctx, addr, req)
					cancel()
					if err != nil || resp.Code != remoting.Success {
						bad.Add(1)
						if err == nil {
							err = errors.New(resp.Remark)
						}
						first.CompareAndSwap(nil, err.Error())
					}
				}
			}()
		}
	}
	wg.Wait()
	if b := bad.Load(); b > 0 {
		t.Fatalf("%d of %d half messages were not stored; first: %v", b, n, first.Load())
	}
}

func txnStormOnce(t *testing.T) float64 {
	const txTopic, hot, queues = "TxTopic", "TxHotTopic", 8
	// Until the storm, transactionTimeOut is an hour: no half is due, so
	// the check service neither reads nor writes anything.
	r := startRig(t, rigOptions{broker: func(c *broker.Config) {
		c.TransactionCheckInterval = 200
		c.TransactionTimeOut = 3600 * 1000
	}})
	cfg := r.b.Config()
	r.createTopic(txTopic, queues)
	r.createTopic(hot, queues)
	t0 := time.Now()
	sendHalves(t, r.addr(), txTopic, prof.txnHalves)
	t.Logf("%d half messages stored in %v", prof.txnHalves, time.Since(t0).Round(time.Millisecond))

	deadline := time.Now().Add(30 * time.Second)
	for r.b.TransactionStats().PendingHalves < int64(prof.txnHalves) {
		if time.Now().After(deadline) {
			t.Fatalf("the check service indexed %d of %d halves after 30s", r.b.TransactionStats().PendingHalves, prof.txnHalves)
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitFlushedTo(t, r.st, r.st.MaxPhyOffset()-64<<10)
	evicted := "not evicted (store.EvictPageCache is not built; a restart would replace the storm with the index rebuild)"
	if rep, err := r.st.EvictPageCache(""); err == nil {
		evicted = fmt.Sprintf("evicted with store.EvictPageCache: %d files, %s, resident %s -> %s",
			rep.Files, mib(rep.Bytes), mib(rep.ResidentBefore), mib(rep.ResidentAfter))
	} else if !errors.Is(err, store.ErrNotBuilt) {
		t.Fatalf("EvictPageCache: %v", err)
	}

	addr := r.addr()
	capLoad := sendLoad{Addr: addr, Topic: hot, Queues: queues, Conns: 16, Inflight: 4, Size: 1024}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	capRes := runSends(ctx, capLoad, 6*time.Second)
	cancel()
	steady := capLoad
	steady.Rate = capRes.Throughput() / 2

	ctx, cancel = context.WithTimeout(context.Background(), prof.txnBaseline)
	base := runSends(ctx, steady, prof.txnBaseline+5*time.Second)
	cancel()

	p := newUnknownProducer()
	defer p.cli.Close()
	s0, st0 := r.b.TransactionStats(), time.Now()
	p.register(t, addr)
	upd := remoting.NewRequest(remoting.UpdateBrokerConfig, nil, []byte("transactionTimeOut=1000\n"))
	if resp := r.call(addr, upd); resp.Code != remoting.Success {
		t.Fatalf("UPDATE_BROKER_CONFIG transactionTimeOut=1000: code %d: %s", resp.Code, resp.Remark)
	}
	ctx, cancel = context.WithTimeout(context.Background(), prof.txnStorm)
	storm := runSends(ctx, steady, prof.txnStorm+5*time.Second)
	cancel()
	s1, secs := r.b.TransactionStats(), time.Since(st0).Seconds()

	reads, rbytes := s1.CheckReads-s0.CheckReads, s1.CheckReadBytes-s0.CheckReadBytes
	t.Logf("halves: %s", evicted)
	t.Logf("budget: transactionCheckReadMsgsPerSecond=%d transactionCheckReadBytesPerSecond=%d, check interval %d ms",
		cfg.TransactionCheckReadMsgsPerSecond, cfg.TransactionCheckReadBytesPerSecond, cfg.TransactionCheckInterval)
	t.Logf("storm %.1fs: check reads %d (%.0f/s), %s (%.2f MB/s); checks sent %d, received %d; pending %d; given up %d; skipped (no producer) %d",
		secs, reads, float64(reads)/secs, mib(rbytes), float64(rbytes)/secs/1e6, s1.ChecksSent-s0.ChecksSent, p.checks.Load(),
		s1.PendingHalves, s1.GivenUp-s0.GivenUp, s1.SkippedNoProducer-s0.SkippedNoProducer)
	t.Logf("steady load paced at %.0f msg/s (half of %.0f)", steady.Rate, capRes.Throughput())
	t.Logf("baseline %s", base.describe())
	t.Logf("storm    %s", storm.describe())
	p99 := ratio(storm.OKLat.P99, base.OKLat.P99)
	t.Logf("send p99 %dus -> %dus (x%.2f)", base.OKLat.P99, storm.OKLat.P99, p99)

	storeInvariants(t, r.st.Stats())
	answerInvariants(t, "baseline", base)
	answerInvariants(t, "storm", storm)
	if reads == 0 || p.checks.Load() == 0 {
		t.Errorf("no check-back storm: %d check reads, %d checks received", reads, p.checks.Load())
	}
	// Within budget: the budget is a token bucket holding at most one
	// second of its rate, so over secs seconds at most (secs+1)*rate.
	if lim := cfg.TransactionCheckReadMsgsPerSecond; lim > 0 && float64(reads) > float64(lim)*(secs+1)+1 {
		t.Errorf("check reads %d in %.1fs exceed transactionCheckReadMsgsPerSecond=%d", reads, secs, lim)
	}
	if lim := cfg.TransactionCheckReadBytesPerSecond; lim > 0 && float64(rbytes) > float64(lim)*(secs+1)+(64<<10) {
		t.Errorf("check reads %d bytes in %.1fs exceed transactionCheckReadBytesPerSecond=%d", rbytes, secs, lim)
	}
	if p.errs.Load() != 0 {
		t.Errorf("%d END_TRANSACTION answers could not be sent", p.errs.Load())
	}
	if got, want := r.stored(hot, queues), capRes.OK+base.OK+storm.OK; got != want {
		t.Errorf("nothing lost: %s holds %d messages, %d sends were answered OK", hot, got, want)
	}
	return p99
}
