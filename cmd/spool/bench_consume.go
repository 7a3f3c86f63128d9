package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolmq/spool/internal/datapath"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

func benchConsumeCmd() *cobra.Command {
	var (
		namesrv, topic, group string
		duration, idleExit    time.Duration
		asJSON, fromLatest    bool
		pullBatch, pullDepth  int
		lite                  bool
	)
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "long-polling pull from every queue of a topic",
		RunE: func(cmd *cobra.Command, args []string) error {
			loadGeneratorGC()
			if namesrv == "" {
				namesrv = os.Getenv("NAMESRV_ADDR")
			}
			if namesrv == "" || topic == "" {
				return errors.New("give -n NAMESRV_ADDR and --topic")
			}
			cli := benchClient(remoting.SerializeJSON)
			defer cli.Close()
			r, found, err := lookupRoute(cli, splitNamesrv(namesrv), topic)
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("topic %s has no route", topic)
			}
			qs := r.readQueues()
			offsets := make([]int64, len(qs))
			if fromLatest {
				for i, q := range qs {
					resp, err := call(cli, q.addr, remoting.NewRequest(remoting.GetMaxOffset,
						map[string]string{"topic": topic, "queueId": strconv.Itoa(q.queueID)}, nil))
					if err != nil {
						return err
					}
					offsets[i], _ = strconv.ParseInt(resp.Ext("offset"), 10, 64)
				}
			}
			m := newMeter()
			ctx, cancel := context.WithTimeout(context.Background(), duration)
			defer cancel()
			go m.progress(ctx, false)
			var last atomic.Int64
			last.Store(time.Now().UnixNano())
			if idleExit > 0 {
				go func() {
					t := time.NewTicker(100 * time.Millisecond)
					defer t.Stop()
					for {
						select {
						case <-ctx.Done():
							return
						case <-t.C:
							if l := last.Load(); m.ok.Load() > 0 && time.Since(time.Unix(0, l)) > idleExit {
								// The drain ended at the last receipt.
								m.end.Store(l)
								cancel()
								return
							}
						}
					}
				}()
			}
			spec := pullSpec{topic: topic, group: group, batch: pullBatch, lite: lite}
			var wg sync.WaitGroup
			if pullDepth <= 1 {
				// One pull in flight per queue: one goroutine and one
				// connection per broker (bench_drain.go).
				for _, b := range byBroker(qs, offsets) {
					wg.Add(1)
					go func() {
						defer wg.Done()
						consumeBroker(ctx, b.addr, b.qs, b.offsets, spec, m, &last)
					}()
				}
				wg.Wait()
				printSummary(m.summary(), asJSON)
				return nil
			}
			for i, q := range qs {
				wg.Add(1)
				go func(q queueRef) {
					defer wg.Done()
					offset := offsets[i]
					for ctx.Err() == nil {
						next, err := pullRound(ctx, cli, q, spec, offset, pullDepth, m, &last)
						if err != nil {
							if ctx.Err() == nil {
								m.failure(err)
								time.Sleep(100 * time.Millisecond)
							}
							continue
						}
						offset = next
					}
				}(q)
			}
			wg.Wait()
			printSummary(m.summary(), asJSON)
			return nil
		},
	}
	cmd.Flags().StringVarP(&namesrv, "namesrv", "n", "", "name server address(es), ';'-separated (default $NAMESRV_ADDR)")
	cmd.Flags().StringVar(&topic, "topic", "BenchmarkTest", "topic")
	cmd.Flags().StringVar(&group, "group", "spool-bench-consumer", "consumer group")
	cmd.Flags().DurationVar(&duration, "duration", 10*time.Second, "how long to consume")
	cmd.Flags().DurationVar(&idleExit, "idle-exit", 0, "stop once nothing arrived for this long after the first message (drain mode)")
	cmd.Flags().IntVar(&pullBatch, "pull-batch", 32, "maxMsgNums of each pull")
	cmd.Flags().IntVar(&pullDepth, "pull-depth", 1, "pulls in flight per queue (read-ahead at the offsets the earlier ones will end at; 1 = one long-polling pull at a time, as RocketMQ's consumers do)")
	cmd.Flags().BoolVar(&lite, "lite", false, "send LITE_PULL_MESSAGE with the lite pull flag, as RocketMQ's DefaultLitePullConsumer does, instead of PULL_MESSAGE")
	cmd.Flags().BoolVar(&fromLatest, "from-latest", false, "start at each queue's max offset instead of 0")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as one JSON object on the last line")
	return cmd
}

// pullSpec is what every pull of a consume run asks: the topic, the
// group, batch messages at most, and whether it is a lite pull.
type pullSpec struct {
	topic, group string
	batch        int
	lite         bool
}

// pullRequest sends one pull; suspend asks the broker to hold it while
// the queue has nothing new (long polling).
func pullRequest(ctx context.Context, cli *transport.Client, q queueRef, spec pullSpec, offset int64, suspend bool) (*remoting.Command, error) {
	rctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	return cli.Invoke(rctx, q.addr, spec.request(q, offset, suspend))
}

// request is a pull of spec.batch messages of q from offset, with the
// subscription "*" and no offset commit, suspended (held while the queue
// has nothing new) when suspend is set: a PULL_MESSAGE, or with spec.lite
// a LITE_PULL_MESSAGE carrying the lite pull flag (RocketMQ's clients send
// that code exactly when the flag is set).
func (spec pullSpec) request(q queueRef, offset int64, suspend bool) *remoting.Command {
	code, flag := remoting.PullMessage, datapath.PullFlagSubscription
	if suspend {
		flag |= datapath.PullFlagSuspend
	}
	if spec.lite {
		code, flag = remoting.LitePullMessage, flag|datapath.PullFlagLitePull
	}
	ext := map[string]string{
		"consumerGroup": spec.group, "topic": spec.topic, "queueId": strconv.Itoa(q.queueID),
		"queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": strconv.Itoa(spec.batch), "sysFlag": strconv.Itoa(flag),
		"commitOffset": "0", "suspendTimeoutMillis": "5000", "subscription": "*", "subVersion": "0",
		"expressionType": "TAG",
	}
	return remoting.NewRequest(code, ext, nil)
}

// accountPull checks a pull answer, counts its messages and returns the
// next offset and how many messages it carried.
func accountPull(resp *remoting.Command, m *meter, last *atomic.Int64) (int64, int, error) {
	switch resp.Code {
	case remoting.Success, remoting.PullNotFound, remoting.PullRetryImmediately, remoting.PullOffsetMoved:
	default:
		return 0, 0, fmt.Errorf("pull: code %d: %s", resp.Code, resp.Remark)
	}
	next, perr := strconv.ParseInt(resp.Ext("nextBeginOffset"), 10, 64)
	if perr != nil {
		return 0, 0, fmt.Errorf("pull answer %d without nextBeginOffset: %s", resp.Code, resp.Remark)
	}
	if resp.Code != remoting.Success {
		return next, 0, nil
	}
	now := time.Now()
	body := resp.Body
	n, bytes := 0, 0
	for len(body) > 0 {
		h, err := message.ParseRecordHeader(body)
		if err != nil {
			return next, 0, fmt.Errorf("pull body: %w", err)
		}
		m.hist.Record(now.Sub(time.UnixMilli(h.StoreTimestamp)))
		n++
		bytes += h.BodyLen
		body = body[h.TotalSize:]
	}
	m.ok.Add(int64(n))
	m.bytes.Add(int64(bytes))
	last.Store(now.UnixNano())
	return next, n, nil
}

// pullRound sends depth pulls of one queue at once, at offset, offset+batch,
// ... (read-ahead: queue offsets count messages, so the later ones are
// where the earlier ones will end when the queue holds that much). Only the
// first may be held by the broker. Answers are taken in order while each
// ends exactly where the next began; the first one that does not (fewer
// messages: the queue's end, or a filter) is counted and the rest are
// dropped uncounted. It returns the offset to continue from.
func pullRound(ctx context.Context, cli *transport.Client, q queueRef, spec pullSpec, offset int64, depth int, m *meter, last *atomic.Int64) (int64, error) {
	batch := spec.batch
	type answer struct {
		resp *remoting.Command
		err  error
	}
	answers := make([]chan answer, depth)
	for i := range answers {
		ch := make(chan answer, 1)
		answers[i] = ch
		off := offset + int64(i*batch)
		go func() {
			resp, err := pullRequest(ctx, cli, q, spec, off, off == offset)
			ch <- answer{resp, err}
		}()
	}
	next, stop := offset, false
	var firstErr error
	for i, ch := range answers {
		a := <-ch // every answer is awaited, so no pull outlives the round
		if stop {
			continue
		}
		err := a.err
		var n int64
		var cnt int
		if err == nil {
			n, cnt, err = accountPull(a.resp, m, last)
		}
		if err != nil {
			stop = true
			if i == 0 {
				firstErr = err // else: what was counted stands; the next round meets the error again
			}
			continue
		}
		want := offset + int64(i*batch)
		next = n
		if cnt != batch || n != want+int64(batch) {
			stop = true
		}
	}
	return next, firstErr
}

// brokerQueues is the queues one broker serves, and their offsets.
type brokerQueues struct {
	addr    string
	qs      []queueRef
	offsets []int64
}

// byBroker groups qs (and their offsets) by broker address, in the order
// the addresses first appear.
func byBroker(qs []queueRef, offsets []int64) []*brokerQueues {
	var out []*brokerQueues
	at := map[string]*brokerQueues{}
	for i, q := range qs {
		b := at[q.addr]
		if b == nil {
			b = &brokerQueues{addr: q.addr}
			at[q.addr] = b
			out = append(out, b)
		}
		b.qs = append(b.qs, q)
		b.offsets = append(b.offsets, offsets[i])
	}
	return out
}
