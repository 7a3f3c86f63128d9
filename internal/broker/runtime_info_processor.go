package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spoolmq/spool/internal/config"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// versionDesc is the version string runtime info reports (Spool speaks
// RocketMQ V5_3_3's protocol).
const versionDesc = "V5_3_3"

// handleGetBrokerRuntimeInfo answers {"table":{...}} with RocketMQ's
// runtime figures: put/get totals and rates, executor queue sizes and head
// waits, dispatch lag, CommitLog bounds and disk capacity, and the store's
// latency figures.
func (b *Broker) handleGetBrokerRuntimeInfo(c *transport.Conn, req *remoting.Command) *remoting.Command {
	body, err := json.Marshal(map[string]map[string]string{"table": b.RuntimeInfo()})
	if err != nil {
		return response(req, remoting.SystemError, err.Error())
	}
	resp := response(req, remoting.Success, "")
	resp.Body = body
	return resp
}

// RuntimeInfo returns the GET_BROKER_RUNTIME_INFO table.
func (b *Broker) RuntimeInfo() map[string]string {
	t := make(map[string]string, 64)
	i64 := func(k string, v int64) { t[k] = strconv.FormatInt(v, 10) }
	st := b.store.Stats()
	t["brokerVersionDesc"] = versionDesc
	i64("brokerVersion", remoting.CurrentVersion)
	putMorning, putNow, getMorning, getNow, putYesterday, getYesterday := b.stats.today()
	i64("msgPutTotalYesterdayMorning", putYesterday)
	i64("msgPutTotalTodayMorning", putMorning)
	i64("msgPutTotalTodayNow", putNow)
	i64("msgGetTotalYesterdayMorning", getYesterday)
	i64("msgGetTotalTodayMorning", getMorning)
	i64("msgGetTotalTodayNow", getNow)
	t["putTps"] = fmt.Sprintf("%.2f %.2f %.2f", b.stats.rate(0, 10), b.stats.rate(0, 60), b.stats.rate(0, 600))
	t["getTotalTps"] = fmt.Sprintf("%.2f %.2f %.2f", b.stats.rate(1, 10), b.stats.rate(1, 60), b.stats.rate(1, 600))
	for _, name := range []string{"send", "pull", "litePull", "query", "heartbeat", "clientManage", "consumerManage", "admin", "endTransaction"} {
		e := b.executors[name]
		if e == nil {
			continue
		}
		i64(name+"ThreadPoolQueueSize", int64(e.QueueLen()))
		i64(name+"ThreadPoolQueueHeadWaitTimeMills", e.HeadWait().Milliseconds())
	}
	cfg := b.config()
	i64("sendThreadPoolQueueCapacity", int64(cfg.SendThreadPoolQueueCapacity))
	i64("pullThreadPoolQueueCapacity", int64(cfg.PullThreadPoolQueueCapacity))
	i64("dispatchBehindBytes", b.store.DispatchBehindBytes())
	// The longest put-lock hold seen: Spool measures holds rather than
	// sampling the lock's current age.
	i64("pageCacheLockTimeMills", st.PutLockHold.Max.Milliseconds())
	i64("putMessageEntireTimeMax", st.Put.Max.Milliseconds())
	i64("putMessageTimesTotal", st.Puts)
	i64("putMessageSizeTotal", st.PutBytes)
	if st.Puts > 0 {
		i64("putMessageAverageSize", st.PutBytes/st.Puts)
	} else {
		i64("putMessageAverageSize", 0)
	}
	t["putMessageDistributeTime"] = pageCacheRTLine(st.PageCacheRTBuckets)
	t["putLatencyP99Micros"] = strconv.FormatInt(st.Put.Quantile(0.99).Microseconds(), 10)
	t["putLockHoldP99Micros"] = strconv.FormatInt(st.PutLockHold.Quantile(0.99).Microseconds(), 10)
	i64("commitLogMinOffset", b.store.MinPhyOffset())
	i64("commitLogMaxOffset", b.store.MaxPhyOffset())
	i64("remainHowManyDataToFlush", max(st.CommitLogMax-st.CommitLogFlushed, 0))
	i64("flushTimeouts", st.FlushTimeouts)
	i64("putWaitedOnCreate", st.PutWaitedOnCreate)
	i64("spillWrites", st.SpillWrites)
	i64("spillFull", st.SpillFull)
	i64("readyCommitLogFiles", int64(st.ReadyFiles))
	t["storeReadOnly"] = strconv.FormatBool(st.ReadOnly)
	if st.ReadOnlyReason != "" {
		t["storeReadOnlyReason"] = st.ReadOnlyReason
	}
	i64("heldPullRequests", int64(b.longPoll.held()))
	i64("bootTimestamp", b.stats.boot.UnixMilli())
	t["runtime"] = runtimeString(time.Since(b.stats.boot))
	i64("startAcceptSendRequestTimeStamp", 0)
	clDir := b.storeCfg.StorePathCommitLog
	if clDir == "" {
		clDir = filepath.Join(b.storeCfg.StorePathRootDir, "commitlog")
	}
	if u, err := vfs.Default.Statfs(clDir); err == nil {
		t["commitLogDirCapacity"] = fmt.Sprintf("Total : %s, Free : %s.", humanBytes(u.Total), humanBytes(u.Free))
		t["commitLogDiskRatio"] = fmt.Sprintf("%.4f", u.UsedRatio())
	} else {
		t["commitLogDirCapacity"] = "unknown: " + err.Error()
	}
	return t
}

var pageCacheRTLabels = [13]string{"[<=0ms]", "[0~10ms]", "[10~50ms]", "[50~100ms]", "[100~200ms]", "[200~500ms]",
	"[500ms~1s]", "[1~2s]", "[2~3s]", "[3~4s]", "[4~5s]", "[5~10s]", "[10s~]"}

func pageCacheRTLine(b [13]int64) string {
	var sb strings.Builder
	for i, n := range b {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(pageCacheRTLabels[i])
		sb.WriteByte(':')
		sb.WriteString(strconv.FormatInt(n, 10))
	}
	return sb.String()
}

func runtimeString(d time.Duration) string {
	s := int64(d.Seconds())
	return fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]", s/86400, s%86400/3600, s%3600/60, s%60)
}

func humanBytes(n uint64) string {
	const gib = 1 << 30
	return fmt.Sprintf("%.2f GiB", float64(n)/gib)
}

// handleGetBrokerConfig answers every broker and store key as a
// .properties body, with the topic table's data version in ext "version".
func (b *Broker) handleGetBrokerConfig(c *transport.Conn, req *remoting.Command) *remoting.Command {
	cfg := b.Config()
	storeCfg := b.storeCfg
	kv := config.Dump(&cfg, &storeCfg)
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	for _, k := range keys {
		buf.WriteString(k)
		buf.WriteByte('=')
		buf.WriteString(kv[k])
		buf.WriteByte('\n')
	}
	resp := response(req, remoting.Success, "")
	resp.Body = buf.Bytes()
	if v, err := json.Marshal(b.topics.Version()); err == nil {
		resp.SetExt("version", string(v))
	}
	return resp
}

// handleUpdateBrokerConfig applies a .properties body to the broker keys
// tagged live; anything else is refused by name and nothing is applied.
func (b *Broker) handleUpdateBrokerConfig(c *transport.Conn, req *remoting.Command) *remoting.Command {
	props, err := config.ParseProperties(bytes.NewReader(req.Body))
	if err != nil {
		return response(req, remoting.InvalidParameter, fmt.Sprintf("%v: broker config properties: %v", ErrBadBody, err))
	}
	if len(props) == 0 {
		return response(req, remoting.InvalidParameter, "no properties to update")
	}
	storeCfg := b.storeCfg
	storeKeys := config.Dump(&storeCfg)
	var refused []string
	for k := range props {
		if _, ok := storeKeys[k]; ok {
			refused = append(refused, k)
		}
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return response(req, remoting.InvalidParameter, fmt.Sprintf(
			"store keys cannot be changed at run time (restart with the new value): %s", strings.Join(refused, ", ")))
	}
	b.cfgMu.Lock()
	defer b.cfgMu.Unlock()
	next := b.Config()
	if err := config.UpdateLive(props, &next); err != nil {
		return response(req, remoting.InvalidParameter, err.Error())
	}
	b.cfg.Store(&next)
	b.logger.Info("broker config updated", "keys", len(props))
	return response(req, remoting.Success, "")
}
