package broker

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

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
	t["putMessageDistributeTime"] = st.PageCacheRT.DistributionString()
	if st.PutTPS != "" {
		t["storePutTps"] = st.PutTPS
	}
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

func runtimeString(d time.Duration) string {
	s := int64(d.Seconds())
	return fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]", s/86400, s%86400/3600, s%3600/60, s%60)
}

func humanBytes(n uint64) string {
	const gib = 1 << 30
	return fmt.Sprintf("%.2f GiB", float64(n)/gib)
}
