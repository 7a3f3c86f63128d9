package incidents

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/store/stats"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

const (
	// bucketWidth is the resolution of a load's timeline.
	bucketWidth = 100 * time.Millisecond
	// maxBehind is how far a paced request slot may fall behind its
	// schedule and still catch up; beyond it the schedule restarts.
	maxBehind = 50 * time.Millisecond
)

// sendLoad describes producers: conns connections, each with inflight
// requests outstanding, sending size-byte messages round robin over the
// queues of topic. rate > 0 paces the whole load at rate messages a second
// (open loop, each request slot on its own schedule); rate 0 sends as fast
// as the broker answers (closed loop).
type sendLoad struct {
	Addr     string        `json:"addr"`
	Topic    string        `json:"topic"`
	Queues   int           `json:"queues"`
	Conns    int           `json:"conns"`
	Inflight int           `json:"inflight"`
	Size     int           `json:"size"`
	Rate     float64       `json:"rate"`
	Timeout  time.Duration `json:"timeout"` // client timeout per request (3 s when 0)
}

// loadResult is what a load saw. Only counts and figures, so a child
// process can hand it back as JSON.
type loadResult struct {
	Sent        int64            `json:"sent"`
	OK          int64            `json:"ok"`
	FlushTO     int64            `json:"flush_disk_timeout"`  // FLUSH_DISK_TIMEOUT answers
	SlaveNA     int64            `json:"slave_not_available"` // SLAVE_NOT_AVAILABLE (11) answers
	SlaveTO     int64            `json:"flush_slave_timeout"` // FLUSH_SLAVE_TIMEOUT (12) answers
	Busy        int64            `json:"busy"`                // SYSTEM_BUSY answers with a well-formed remark
	BusyByTag   map[string]int64 `json:"busy_by_tag"`
	PageCache   int64            `json:"page_cache_busy"` // [PC_SYNCHRONIZED] [PCBUSY_CLEAN_QUEUE] [REJECTREQUEST]
	Malformed   int64            `json:"malformed"`       // answers that are neither OK, FLUSH_DISK_TIMEOUT nor a well-formed busy
	ClientTO    int64            `json:"client_timeouts"`
	OtherErrors int64            `json:"other_errors"`
	FirstBad    string           `json:"first_bad,omitempty"`
	Seconds     float64          `json:"seconds"`
	Bytes       int64            `json:"bytes"`
	Lat         latency          `json:"latency"`    // every answered request
	OKLat       latency          `json:"ok_latency"` // OK answers only
	Timeline    []int64          `json:"timeline"`   // OK answers per bucketWidth from the start
}

// latency is a histogram summary in microseconds.
type latency struct {
	Count int64 `json:"count"`
	P50   int64 `json:"p50_us"`
	P99   int64 `json:"p99_us"`
	P999  int64 `json:"p999_us"`
	Max   int64 `json:"max_us"`
}

func summarize(s stats.HistogramSnapshot) latency {
	us := func(d time.Duration) int64 { return d.Microseconds() }
	return latency{Count: int64(s.Count), P50: us(s.Quantile(0.5)), P99: us(s.Quantile(0.99)),
		P999: us(s.Quantile(0.999)), Max: us(s.Max)}
}

func (l latency) String() string {
	return fmt.Sprintf("n=%d p50=%dus p99=%dus p999=%dus max=%dus", l.Count, l.P50, l.P99, l.P999, l.Max)
}

// Throughput is OK messages a second over the whole load.
func (r *loadResult) Throughput() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.OK) / r.Seconds
}

// busyRemark matches the broker's flow-control remarks: a tag, and the
// measured value with its limit.
var (
	busyTag     = regexp.MustCompile(`^\[(TIMEOUT_CLEAN_QUEUE|OVERLOAD|PC_SYNCHRONIZED|PCBUSY_CLEAN_QUEUE|REJECTREQUEST)\]`)
	hasNumber   = regexp.MustCompile(`\d`)
	statesLimit = regexp.MustCompile(`(limit|capacity)`)
)

// classifyBusy returns the remark's tag and whether the remark is well
// formed (a known tag, a measured value and a limit).
func classifyBusy(remark string) (string, bool) {
	m := busyTag.FindStringSubmatch(remark)
	if m == nil {
		return "", false
	}
	return m[1], hasNumber.MatchString(remark) && statesLimit.MatchString(remark)
}

func isPageCacheBusy(tag string) bool {
	return tag == "PC_SYNCHRONIZED" || tag == "PCBUSY_CLEAN_QUEUE" || tag == "REJECTREQUEST"
}

// recorder accumulates a load's answers from many goroutines.
type recorder struct {
	start    time.Time
	sent     atomic.Int64
	ok       atomic.Int64
	flushTO  atomic.Int64
	slaveNA  atomic.Int64
	slaveTO  atomic.Int64
	busy     atomic.Int64
	pcBusy   atomic.Int64
	bad      atomic.Int64
	clientTO atomic.Int64
	otherErr atomic.Int64
	bytes    atomic.Int64
	lat      stats.Histogram
	okLat    stats.Histogram
	timeline []atomic.Int64

	mu       sync.Mutex
	byTag    map[string]int64
	firstBad string
}

func newRecorder(horizon time.Duration) *recorder {
	return &recorder{start: time.Now(), byTag: map[string]int64{},
		timeline: make([]atomic.Int64, int(horizon/bucketWidth)+2)}
}

func (r *recorder) noteBad(s string) {
	r.mu.Lock()
	if r.firstBad == "" {
		r.firstBad = s
	}
	r.mu.Unlock()
}

func (r *recorder) okAt(t time.Time, n int64) {
	r.ok.Add(n)
	if i := int(t.Sub(r.start) / bucketWidth); i >= 0 && i < len(r.timeline) {
		r.timeline[i].Add(n)
	}
}

// answer records one send's outcome.
func (r *recorder) answer(resp *remoting.Command, err error, sent time.Time, size int) {
	now := time.Now()
	lat := now.Sub(sent)
	if err != nil {
		if errors.Is(err, transport.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
			r.clientTO.Add(1)
		} else {
			r.otherErr.Add(1)
		}
		r.noteBad(err.Error())
		return
	}
	r.lat.Record(lat)
	switch resp.Code {
	case remoting.Success:
		r.okLat.Record(lat)
		r.okAt(now, 1)
		r.bytes.Add(int64(size))
	case remoting.FlushDiskTimeout:
		r.flushTO.Add(1)
	case remoting.SlaveNotAvailable:
		r.slaveNA.Add(1)
		r.noteBad(fmt.Sprintf("code %d: %s", resp.Code, resp.Remark))
	case remoting.FlushSlaveTimeout:
		r.slaveTO.Add(1)
		r.noteBad(fmt.Sprintf("code %d: %s", resp.Code, resp.Remark))
	case remoting.SystemBusy:
		tag, ok := classifyBusy(resp.Remark)
		if !ok {
			r.bad.Add(1)
			r.noteBad(fmt.Sprintf("code %d: %s", resp.Code, resp.Remark))
			return
		}
		r.busy.Add(1)
		if isPageCacheBusy(tag) {
			r.pcBusy.Add(1)
		}
		r.mu.Lock()
		r.byTag[tag]++
		r.mu.Unlock()
	default:
		r.bad.Add(1)
		r.noteBad(fmt.Sprintf("code %d: %s", resp.Code, resp.Remark))
	}
}

func (r *recorder) result(end time.Time) loadResult {
	out := loadResult{
		Sent: r.sent.Load(), OK: r.ok.Load(), FlushTO: r.flushTO.Load(), SlaveNA: r.slaveNA.Load(), SlaveTO: r.slaveTO.Load(), Busy: r.busy.Load(), PageCache: r.pcBusy.Load(),
		Malformed: r.bad.Load(), ClientTO: r.clientTO.Load(), OtherErrors: r.otherErr.Load(),
		Seconds: end.Sub(r.start).Seconds(), Bytes: r.bytes.Load(),
		Lat: summarize(r.lat.Snapshot()), OKLat: summarize(r.okLat.Snapshot()), BusyByTag: map[string]int64{},
	}
	r.mu.Lock()
	for k, v := range r.byTag {
		out.BusyByTag[k] = v
	}
	out.FirstBad = r.firstBad
	r.mu.Unlock()
	n := min(len(r.timeline), int(end.Sub(r.start)/bucketWidth)+1)
	for i := 0; i < n; i++ {
		out.Timeline = append(out.Timeline, r.timeline[i].Load())
	}
	return out
}

// runSends runs the load until ctx ends and returns what it saw. Requests
// still outstanding when ctx ends are awaited (they count).
func runSends(ctx context.Context, l sendLoad, horizon time.Duration) loadResult {
	rec := newRecorder(horizon)
	runSendsInto(ctx, l, rec)
	return rec.result(time.Now())
}

// runSendsInto runs the load, recording into rec.
func runSendsInto(ctx context.Context, l sendLoad, rec *recorder) {
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	body := make([]byte, l.Size)
	for i := range body {
		body[i] = byte('A' + i%26)
	}
	slots := max(l.Conns, 1) * max(l.Inflight, 1)
	var gap time.Duration
	if l.Rate > 0 {
		gap = time.Duration(float64(slots) / l.Rate * float64(time.Second))
	}
	var wg sync.WaitGroup
	var seq atomic.Int64
	for c := 0; c < max(l.Conns, 1); c++ {
		cli := transport.NewClient(transport.ClientConfig{DialTimeout: 10 * time.Second})
		defer cli.Close()
		for j := 0; j < max(l.Inflight, 1); j++ {
			slot := c*max(l.Inflight, 1) + j
			wg.Add(1)
			go func() {
				defer wg.Done()
				next := time.Now()
				if gap > 0 {
					next = next.Add(gap * time.Duration(slot) / time.Duration(slots))
				}
				for ctx.Err() == nil {
					if gap > 0 {
						if d := time.Until(next); d > 0 {
							t := time.NewTimer(d)
							select {
							case <-ctx.Done():
								t.Stop()
								return
							case <-t.C:
							}
						}
						next = next.Add(gap)
						if time.Since(next) > maxBehind {
							next = time.Now() // a stall is not made up for with a burst
						}
					}
					q := int(seq.Add(1)) % max(l.Queues, 1)
					req := sendRequest(l.Topic, q, body)
					rec.sent.Add(1)
					t0 := time.Now()
					rctx, cancel := context.WithTimeout(context.Background(), timeout)
					resp, err := cli.Invoke(rctx, l.Addr, req)
					cancel()
					rec.answer(resp, err, t0, len(body))
				}
			}()
		}
	}
	wg.Wait()
}

// sendRequest builds a SEND_MESSAGE_V2 request (short header names a..k).
func sendRequest(topic string, queueID int, body []byte) *remoting.Command {
	ext := map[string]string{
		"a": "incident-producer", "b": topic, "c": "TBW102", "d": "8", "e": strconv.Itoa(queueID),
		"f": "0", "g": strconv.FormatInt(time.Now().UnixMilli(), 10), "h": "0", "j": "0", "k": "false",
		"i": message.EncodeProperties(map[string]string{message.PropertyUniqClientMessageIDKeyIdx: message.NewUniqID()}),
	}
	return remoting.NewRequest(remoting.SendMessageV2, ext, body)
}

// pullLoad describes a consumer group pulling queues 0..Queues-1 of topic
// from the given start offsets without long polling; a pull that finds
// nothing waits Idle before the next one on that queue. StopAt, when set,
// ends a queue's reader once it reaches that offset.
type pullLoad struct {
	Addr    string
	Topic   string
	Group   string
	Queues  int
	From    []int64
	StopAt  []int64
	MaxMsgs int
	Idle    time.Duration
}

// pullResult is what a pull load saw.
type pullResult struct {
	Pulls     int64
	Msgs      int64
	Bytes     int64 // stored record bytes received
	Errors    int64
	FirstErr  string
	Seconds   float64
	Lat       latency // every pull request
	EndToEnd  latency // store time to receipt of each message (ms resolution)
	Completed bool    // every queue reached StopAt
}

// runPulls pulls until ctx ends (or every queue reached StopAt).
func runPulls(ctx context.Context, l pullLoad) pullResult {
	cli := transport.NewClient(transport.ClientConfig{DialTimeout: 10 * time.Second})
	defer cli.Close()
	var (
		lat, e2e                  stats.Histogram
		pulls, msgs, nbytes, errs atomic.Int64
		done                      atomic.Int64
		firstErr                  atomic.Value
		wg                        sync.WaitGroup
		start                     = time.Now()
		maxMsgs                   = max(l.MaxMsgs, 1)
	)
	for q := 0; q < l.Queues; q++ {
		wg.Add(1)
		go func(q int) {
			defer wg.Done()
			off := int64(0)
			if q < len(l.From) {
				off = l.From[q]
			}
			for ctx.Err() == nil {
				if q < len(l.StopAt) && off >= l.StopAt[q] {
					done.Add(1)
					return
				}
				ext := map[string]string{
					"consumerGroup": l.Group, "topic": l.Topic, "queueId": strconv.Itoa(q),
					"queueOffset": strconv.FormatInt(off, 10), "maxMsgNums": strconv.Itoa(maxMsgs), "sysFlag": "4",
					"commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0",
					"expressionType": "TAG",
				}
				t0 := time.Now()
				rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				resp, err := cli.Invoke(rctx, l.Addr, remoting.NewRequest(remoting.PullMessage, ext, nil))
				cancel()
				now := time.Now()
				pulls.Add(1)
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				lat.Record(now.Sub(t0))
				next, perr := strconv.ParseInt(resp.Ext("nextBeginOffset"), 10, 64)
				switch {
				case resp.Code == remoting.Success && perr == nil:
					body := resp.Body
					for len(body) > 0 {
						h, err := message.ParseRecordHeader(body)
						if err != nil {
							errs.Add(1)
							firstErr.CompareAndSwap(nil, "pull body: "+err.Error())
							break
						}
						e2e.Record(now.Sub(time.UnixMilli(h.StoreTimestamp)))
						msgs.Add(1)
						nbytes.Add(int64(h.TotalSize))
						body = body[h.TotalSize:]
					}
					off = next
				case (resp.Code == remoting.PullNotFound || resp.Code == remoting.PullRetryImmediately ||
					resp.Code == remoting.PullOffsetMoved) && perr == nil:
					moved := next != off
					off = next
					if !moved && l.Idle > 0 {
						t := time.NewTimer(l.Idle)
						select {
						case <-ctx.Done():
						case <-t.C:
						}
						t.Stop()
					}
				default:
					errs.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("pull: code %d: %s", resp.Code, resp.Remark))
				}
			}
		}(q)
	}
	wg.Wait()
	out := pullResult{Pulls: pulls.Load(), Msgs: msgs.Load(), Bytes: nbytes.Load(), Errors: errs.Load(),
		Seconds: time.Since(start).Seconds(), Lat: summarize(lat.Snapshot()), EndToEnd: summarize(e2e.Snapshot()),
		Completed: len(l.StopAt) > 0 && done.Load() == int64(l.Queues)}
	if s, ok := firstErr.Load().(string); ok {
		out.FirstErr = s
	}
	return out
}

// describe is a one-line account of a send load's answers.
func (r loadResult) describe() string {
	var tags []string
	for k, v := range r.BusyByTag {
		tags = append(tags, fmt.Sprintf("%s=%d", k, v))
	}
	return fmt.Sprintf("sent=%d ok=%d (%.0f/s) flushTimeout=%d slaveNotAvailable=%d flushSlaveTimeout=%d busy=%d [%s] pageCacheBusy=%d malformed=%d clientTimeouts=%d errors=%d lat{%s}",
		r.Sent, r.OK, r.Throughput(), r.FlushTO, r.SlaveNA, r.SlaveTO, r.Busy, strings.Join(tags, " "), r.PageCache, r.Malformed, r.ClientTO, r.OtherErrors, r.Lat)
}
