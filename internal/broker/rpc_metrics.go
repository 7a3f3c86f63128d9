package broker

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/metrics"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// rpcBoundsMs are the upper bounds (ms) of rocketmq_rpc_latency, as
// RocketMQ 5's RemotingMetricsManager buckets it.
var rpcBoundsMs = [...]float64{1, 3, 5, 10, 30, 100, 300, 1000, 3000}

// rpcKey names one series of rocketmq_rpc_latency.
type rpcKey struct {
	request, response int32
	longPolling       bool // is_long_polling: a pull held for data
	unsent            bool // result write_channel_failed, not success
}

// rpcHist is one series' histogram: lock-free adds.
type rpcHist struct {
	counts [len(rpcBoundsMs) + 1]atomic.Uint64
	sumUs  atomic.Uint64
}

// rpcStats observes every answer of the broker's remoting server
// (transport.Server.OnReply): a look-up in a map that is replaced, never
// changed, when a series is added (series are few and added once; a
// sync.Map's hashing of an interface key cost more than the two atomic
// adds), and two atomic adds.
type rpcStats struct {
	series atomic.Pointer[map[rpcKey]*rpcHist]
	mu     sync.Mutex // serializes additions
}

// maxRPCSeries bounds the series: request codes times response codes.
const maxRPCSeries = 2048

func (s *rpcStats) observe(req *remoting.Command, a transport.Answer) {
	k := rpcKey{req.Code, a.Code, a.LongPolled, a.Unsent}
	var h *rpcHist
	m := s.series.Load()
	if m != nil {
		h = (*m)[k]
	}
	if h == nil {
		if m != nil && len(*m) >= maxRPCSeries {
			return // full: a new series is not added
		}
		if h = s.add(k); h == nil {
			return
		}
	}
	elapsed := a.Elapsed
	ms := float64(elapsed) / float64(time.Millisecond)
	i := 0
	for i < len(rpcBoundsMs) && ms > rpcBoundsMs[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumUs.Add(uint64(max(elapsed.Microseconds(), 0)))
}

// add returns the series of k, adding it unless the bound is reached
// (nil then).
func (s *rpcStats) add(k rpcKey) *rpcHist {
	s.mu.Lock()
	defer s.mu.Unlock()
	var old map[rpcKey]*rpcHist
	if m := s.series.Load(); m != nil {
		old = *m
	}
	if h := old[k]; h != nil {
		return h
	}
	if len(old) >= maxRPCSeries {
		return nil
	}
	m := make(map[rpcKey]*rpcHist, len(old)+1)
	for key, h := range old {
		m[key] = h
	}
	h := &rpcHist{}
	m[k] = h
	s.series.Store(&m)
	return h
}

// figures are the series for a scrape.
func (s *rpcStats) figures() []metrics.RPCLatency {
	var out []metrics.RPCLatency
	var series map[rpcKey]*rpcHist
	if m := s.series.Load(); m != nil {
		series = *m
	}
	for k, h := range series {
		r := metrics.RPCLatency{RequestCode: codeLabel(remoting.RequestName(k.request)), ResponseCode: responseLabel(k.response),
			Result: rpcResult(k), IsLongPolling: k.longPolling}
		var cum uint64
		for i, b := range rpcBoundsMs {
			cum += h.counts[i].Load()
			r.Latency.Bounds = append(r.Latency.Bounds, b)
			r.Latency.Counts = append(r.Latency.Counts, cum)
		}
		r.Latency.Count = cum + h.counts[len(rpcBoundsMs)].Load()
		r.Latency.Sum = float64(h.sumUs.Load()) / 1000
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.RequestCode != b.RequestCode {
			return a.RequestCode < b.RequestCode
		}
		if a.ResponseCode != b.ResponseCode {
			return a.ResponseCode < b.ResponseCode
		}
		if a.IsLongPolling != b.IsLongPolling {
			return !a.IsLongPolling
		}
		return a.Result < b.Result
	})
	return out
}

// rpcResult is the result label as RocketMQ's remoting server writes it:
// it tells how the answer's write went, whatever the response code (an
// error answer that is written is "success"). The broker sees answers at
// their hand-off to the connection's writer: one given after its
// connection closed is "write_channel_failed". Oneway requests, which
// RocketMQ counts as "oneway", are not observed.
func rpcResult(k rpcKey) string {
	if k.unsent {
		return resultWriteChannelFailed
	}
	return resultSuccess
}

// RocketMQ's RemotingMetricsConstant result values the broker writes.
const (
	resultSuccess            = "success"
	resultWriteChannelFailed = "write_channel_failed"
)

// codeLabel writes a request code's name as RocketMQ's labels do
// (lower case).
func codeLabel(name string) string { return strings.ToLower(name) }

// responseNames are RocketMQ's ResponseCode names of the answers the
// broker gives.
var responseNames = map[int32]string{
	remoting.Success: "success", remoting.SystemError: "system_error", remoting.SystemBusy: "system_busy",
	remoting.RequestCodeNotSupported: "request_code_not_supported", remoting.TransactionFailed: "transaction_failed",
	remoting.FlushDiskTimeout: "flush_disk_timeout", remoting.SlaveNotAvailable: "slave_not_available",
	remoting.FlushSlaveTimeout: "flush_slave_timeout", remoting.MessageIllegal: "message_illegal",
	remoting.ServiceNotAvailable: "service_not_available", remoting.VersionNotSupported: "version_not_supported",
	remoting.NoPermission: "no_permission", remoting.TopicNotExist: "topic_not_exist",
	remoting.TopicExistAlready: "topic_exist_already", remoting.PullNotFound: "pull_not_found",
	remoting.PullRetryImmediately: "pull_retry_immediately", remoting.PullOffsetMoved: "pull_offset_moved",
	remoting.QueryNotFound: "query_not_found", remoting.SubscriptionParseFailed: "subscription_parse_failed",
	remoting.SubscriptionNotExist: "subscription_not_exist", remoting.SubscriptionNotLatest: "subscription_not_latest",
	remoting.SubscriptionGroupNotExist: "subscription_group_not_exist", remoting.FilterDataNotExist: "filter_data_not_exist",
	remoting.InvalidParameter: "invalid_parameter", remoting.IllegalOperation: "illegal_operation",
}

func responseLabel(code int32) string {
	if n, ok := responseNames[code]; ok {
		return n
	}
	return strconv.Itoa(int(code))
}
