package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolmq/spool/internal/store/stats"
	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

func benchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "load generator speaking the remoting protocol"}
	cmd.AddCommand(benchProduceCmd(), benchConsumeCmd(), benchCeilingCmd())
	addBenchSecurityFlags(cmd)
	return cmd
}

// loadGeneratorGC sets the load generator's garbage-collection target to
// 400 % unless GOGC says otherwise: answers arrive in fresh buffers (a
// 32 KiB pull answer each), and at 400 % the drain's consumer used 22–36 %
// less CPU per message than at the default 100 %, CPU the broker it
// shares the machine with then has. The generator's memory is not what is
// measured.
func loadGeneratorGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

// benchSummary is the --json summary line; its keys are a stable contract.
type benchSummary struct {
	OK         int64   `json:"ok"`
	Errors     int64   `json:"errors"`
	Seconds    float64 `json:"seconds"`
	MsgsPerSec float64 `json:"msgs_per_sec"`
	MBPerSec   float64 `json:"mb_per_sec"`
	P50us      int64   `json:"p50_us"`
	P99us      int64   `json:"p99_us"`
	P999us     int64   `json:"p999_us"`
	MaxUs      int64   `json:"max_us"`
	CPUSeconds float64 `json:"cpu_seconds"`
	FirstError string  `json:"first_error,omitempty"`
	// BrokerMemory holds the brokers' memory right after the load and,
	// with --memory-after, that long later (produce only).
	BrokerMemory []brokerMemory `json:"broker_memory,omitempty"`
}

// meter counts operations and latencies and prints a line each second.
type meter struct {
	ok, errs, bytes atomic.Int64
	hist            stats.Histogram
	firstErr        atomic.Value
	start           time.Time
	cpuStart        float64
	// end, when set (unix ns), closes the measured interval instead of the
	// time of the summary (drain mode ends at the last receipt).
	end atomic.Int64
}

func newMeter() *meter { return &meter{start: time.Now(), cpuStart: cpuSeconds()} }

func (m *meter) success(n int, bytes int, lat time.Duration) {
	m.ok.Add(int64(n))
	m.bytes.Add(int64(bytes))
	m.hist.Record(lat)
}

func (m *meter) failure(err error) {
	m.errs.Add(1)
	m.firstErr.CompareAndSwap(nil, err.Error())
}

// progress prints one line a second until ctx ends.
func (m *meter) progress(ctx context.Context, quiet bool) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	prevOK, prevBytes, prevHist := int64(0), int64(0), m.hist.Snapshot()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ok, b, h := m.ok.Load(), m.bytes.Load(), m.hist.Snapshot()
			if !quiet {
				d := h.Sub(prevHist)
				fmt.Fprintf(os.Stderr, "%6.1fs  %9d msg/s  %8.1f MB/s  p99 %8dus  errors %d\n",
					time.Since(m.start).Seconds(), ok-prevOK, float64(b-prevBytes)/1e6, d.Quantile(0.99).Microseconds(), m.errs.Load())
			}
			prevOK, prevBytes, prevHist = ok, b, h
		}
	}
}

func (m *meter) summary() benchSummary {
	secs := time.Since(m.start).Seconds()
	if e := m.end.Load(); e != 0 {
		secs = time.Unix(0, e).Sub(m.start).Seconds()
	}
	h := m.hist.Snapshot()
	s := benchSummary{
		OK: m.ok.Load(), Errors: m.errs.Load(), Seconds: secs,
		P50us: h.Quantile(0.5).Microseconds(), P99us: h.Quantile(0.99).Microseconds(),
		P999us: h.Quantile(0.999).Microseconds(), MaxUs: h.Quantile(1).Microseconds(),
		CPUSeconds: cpuSeconds() - m.cpuStart,
	}
	if secs > 0 {
		s.MsgsPerSec = float64(s.OK) / secs
		s.MBPerSec = float64(m.bytes.Load()) / secs / 1e6
	}
	if e, ok := m.firstErr.Load().(string); ok {
		s.FirstError = e
	}
	return s
}

func printSummary(s benchSummary, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(s)
		fmt.Println(string(b))
		return
	}
	fmt.Printf("ok %d  errors %d  %.1fs  %.0f msg/s  %.1f MB/s  p50 %dus  p99 %dus  p999 %dus  max %dus  cpu %.2fs\n",
		s.OK, s.Errors, s.Seconds, s.MsgsPerSec, s.MBPerSec, s.P50us, s.P99us, s.P999us, s.MaxUs, s.CPUSeconds)
	if s.FirstError != "" {
		fmt.Println("first error:", s.FirstError)
	}
	printMemory(s.BrokerMemory)
}

// cpuSeconds is this process's user+system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// produceQueues lists the queues a produce run sends to: the topic's
// writable queues from the name servers (the topic created with queues
// queues when missing), or with direct queues 0..queues-1 of that one
// broker address.
func produceQueues(admin *transport.Client, namesrv, direct, topic string, queues int) ([]queueRef, error) {
	if direct != "" {
		if queues < 1 {
			return nil, errors.New("--queues must be >= 1")
		}
		qs := make([]queueRef, queues)
		for i := range qs {
			qs[i] = queueRef{brokerName: direct, addr: direct, queueID: i}
		}
		return qs, nil
	}
	ns := splitNamesrv(namesrv)
	r, found, err := lookupRoute(admin, ns, topic)
	if err != nil {
		return nil, err
	}
	if !found {
		if err := createTopic(admin, ns, topic, queues, 6); err != nil {
			return nil, fmt.Errorf("creating %s: %w", topic, err)
		}
		for i := 0; i < 50 && !found; i++ {
			time.Sleep(100 * time.Millisecond)
			r, found, err = lookupRoute(admin, ns, topic)
			if err != nil {
				return nil, err
			}
		}
		if !found {
			return nil, fmt.Errorf("topic %s has no route after creating it", topic)
		}
	}
	qs := r.writeQueues()
	if len(qs) == 0 {
		return nil, fmt.Errorf("topic %s has no writable queue", topic)
	}
	return qs, nil
}

func benchProduceCmd() *cobra.Command {
	var (
		namesrv, topic, serialize string
		direct                    string
		size, producers, inflight int
		batch, queues             int
		duration, memoryAfter     time.Duration
		asJSON                    bool
	)
	cmd := &cobra.Command{
		Use:   "produce",
		Short: "send messages as fast as the broker answers",
		RunE: func(cmd *cobra.Command, args []string) error {
			loadGeneratorGC()
			if namesrv == "" && direct == "" {
				namesrv = os.Getenv("NAMESRV_ADDR")
			}
			if namesrv == "" && direct == "" {
				return errors.New("give -n NAMESRV_ADDR (or --broker ADDR)")
			}
			if namesrv != "" && direct != "" {
				return errors.New("give -n or --broker, not both")
			}
			if size < 0 || producers < 1 || inflight < 1 || batch < 1 {
				return errors.New("--size must be >= 0 and --producers, --inflight, --batch >= 1")
			}
			ser := remoting.SerializeJSON
			switch serialize {
			case "json":
			case "rocketmq":
				ser = remoting.SerializeRocketMQ
			default:
				return fmt.Errorf("--serialize %q: want json or rocketmq", serialize)
			}
			admin := benchClient(remoting.SerializeJSON)
			defer admin.Close()
			qs, err := produceQueues(admin, namesrv, direct, topic, queues)
			if err != nil {
				return err
			}
			body := make([]byte, size)
			for i := range body {
				body[i] = byte('a' + i%26)
			}
			m := newMeter()
			ctx, cancel := context.WithTimeout(context.Background(), duration)
			defer cancel()
			go m.progress(ctx, false)
			build := func(sb *sendBuilder, q queueRef, now time.Time) (*remoting.Command, int, int) {
				return sb.build(topic, q.queueID, body, batch, ser, now), batch, batch * size
			}
			// Each producer has a connection to every broker of the
			// route, with --inflight requests outstanding on it.
			byAddr := map[string][]queueRef{}
			var addrs []string
			for _, q := range qs {
				if byAddr[q.addr] == nil {
					addrs = append(addrs, q.addr)
				}
				byAddr[q.addr] = append(byAddr[q.addr], q)
			}
			var targets []epollTarget
			for p := 0; p < producers; p++ {
				for _, a := range addrs {
					// Producers start on different queues.
					qs := byAddr[a]
					rot := append(append([]queueRef(nil), qs[p%len(qs):]...), qs[:p%len(qs)]...)
					targets = append(targets, epollTarget{addr: a, qs: rot})
				}
			}
			var wg sync.WaitGroup
			if inflight == 1 && !benchTLS {
				epollProducers(ctx, targets, build, m)
			} else {
				for _, t := range targets {
					wg.Add(1)
					go func() {
						defer wg.Done()
						produceConn(ctx, t.addr, t.qs, inflight, build, m)
					}()
				}
			}
			wg.Wait()
			sum := m.summary()
			if direct == "" {
				sum.BrokerMemory = benchMemory(admin, brokerAddrs(qs), memoryAfter)
			}
			printSummary(sum, asJSON)
			return nil
		},
	}
	cmd.Flags().StringVarP(&namesrv, "namesrv", "n", "", "name server address(es), ';'-separated (default $NAMESRV_ADDR)")
	cmd.Flags().DurationVar(&memoryAfter, "memory-after", 0, "read the brokers' memory (rssAnon, heapInuse) again this long after the load (0: right after only)")
	cmd.Flags().StringVar(&direct, "broker", "", "send to this broker address directly, to --queues queues of the topic, without a name server (no topic creation, no memory reading; `spool bench ceiling` answers there)")
	cmd.Flags().StringVar(&topic, "topic", "BenchmarkTest", "topic (created with --queues queues when missing)")
	cmd.Flags().IntVar(&size, "size", 128, "message body size in bytes")
	cmd.Flags().IntVar(&producers, "producers", 64, "connections")
	cmd.Flags().IntVar(&inflight, "inflight", 1, "requests outstanding per connection")
	cmd.Flags().IntVar(&batch, "batch", 1, "messages per request (>1 uses SEND_BATCH_MESSAGE; msg/s counts messages, latencies are per request)")
	cmd.Flags().IntVar(&queues, "queues", 8, "queues when the topic has to be created")
	cmd.Flags().StringVar(&serialize, "serialize", "json", "header serialization: json or rocketmq")
	cmd.Flags().DurationVar(&duration, "duration", 10*time.Second, "how long to send")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as one JSON object on the last line")
	return cmd
}

// sendBuilder makes SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE) requests for
// one sending goroutine. It reuses its command and header map (a request
// is built only after the previous one was answered) and the born-time
// text within a millisecond, so the generator spends its CPU on the wire
// rather than on allocation.
type sendBuilder struct {
	req   remoting.Command
	ext   map[string]string
	topic string
	qid   int
	qidS  string
	ms    int64
	msS   string
	// batchBuf holds the last batch body (framed before the next build).
	batchBuf []byte
}

func (b *sendBuilder) build(topic string, queueID int, body []byte, batch int, ser remoting.SerializeType, now time.Time) *remoting.Command {
	if b.ext == nil || b.topic != topic {
		b.ext = map[string]string{"a": "spool-bench", "b": topic, "c": systopic.AutoCreate, "d": "4",
			"f": "0", "h": "0", "j": "0", "k": "false"}
		b.topic, b.qidS, b.msS = topic, "", ""
	}
	if b.qidS == "" || b.qid != queueID {
		b.qid, b.qidS = queueID, strconv.Itoa(queueID)
		b.ext["e"] = b.qidS
	}
	if ms := now.UnixMilli(); b.msS == "" || ms != b.ms {
		b.ms, b.msS = ms, strconv.FormatInt(ms, 10)
		b.ext["g"] = b.msS
	}
	b.req = remoting.Command{Code: remoting.SendMessageV2, Language: "JAVA", Version: remoting.CurrentVersion,
		ExtFields: b.ext, Body: body, Serialize: ser}
	if batch > 1 {
		b.req.Code = remoting.SendBatchMessage
		b.ext["m"] = "true"
		b.batchBuf = encodeBatch(b.batchBuf[:0], body, batch)
		b.req.Body = b.batchBuf
		return &b.req
	}
	// The properties of a message with only a UNIQ_KEY, as
	// message.EncodeProperties writes them.
	b.ext["i"] = message.PropertyUniqClientMessageIDKeyIdx + "\x01" + message.NewUniqID() + "\x02"
	return &b.req
}

// encodeBatch appends to dst a SEND_BATCH_MESSAGE body of n copies of
// body, each with its own UNIQ_KEY as its only property. The caller may
// reuse dst once the request is framed.
func encodeBatch(dst, body []byte, n int) []byte {
	key := message.PropertyUniqClientMessageIDKeyIdx
	for i := 0; i < n; i++ {
		id := message.NewUniqID()
		props := len(key) + 1 + len(id) + 1
		total := 4 + 4 + 4 + 4 + 4 + len(body) + 2 + props
		if i == 0 {
			dst = slices.Grow(dst, n*total)
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(total))
		dst = binary.BigEndian.AppendUint32(dst, 0) // magic
		dst = binary.BigEndian.AppendUint32(dst, 0) // body crc
		dst = binary.BigEndian.AppendUint32(dst, 0) // flag
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
		dst = append(dst, body...)
		dst = binary.BigEndian.AppendUint16(dst, uint16(props))
		dst = message.AppendProperty(dst, key, id)
	}
	return dst
}
