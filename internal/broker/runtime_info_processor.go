package broker

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spoolmq/spool/internal/mempolicy"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/store/stats"
	"github.com/spoolmq/spool/internal/timer"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// versionDesc is the version string runtime info reports (Spool speaks
// RocketMQ V5_3_3's protocol).
const versionDesc = "V5_3_3"

// executorNames are the executors whose queue figures runtime info reports,
// under RocketMQ's "<name>ThreadPoolQueueSize" keys.
var executorNames = []string{"send", "pull", "litePull", "query", "heartbeat", "clientManage", "consumerManage", "admin", "endTransaction"}

// handleGetBrokerRuntimeInfo answers {"table":{...}} with RocketMQ's
// runtime figures, under the keys and in the formats of RocketMQ 5.3.3's
// AdminBrokerProcessor.prepareRuntimeInfo (the store's StoreStatsService
// and DefaultMessageStore figures, the delay levels' offsets, put/get day
// totals, executor queues, the timing wheel, disk capacity), and Spool's
// own (latency quantiles, fallbacks, busy answers by kind, transactions).
// testdata/rocketmq-runtime-keys.txt lists RocketMQ's keys with the tools
// that parse them; the README lists those that are always 0 in Spool.
func (b *Broker) handleGetBrokerRuntimeInfo(c *transport.Conn, req *remoting.Command) *remoting.Command {
	body, err := json.Marshal(map[string]map[string]string{"table": b.RuntimeInfo()})
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = body
	return resp
}

// RuntimeInfo returns the GET_BROKER_RUNTIME_INFO table.
func (b *Broker) RuntimeInfo() map[string]string {
	// The store's keys: bootTimestamp, runtime, put/get figures and TPS
	// windows, disk ratios, CommitLog bounds, flush and commit backlogs.
	t := b.store.RuntimeInfo()
	i64 := func(k string, v int64) { t[k] = strconv.FormatInt(v, 10) }
	micros := func(k string, d time.Duration) { i64(k, d.Microseconds()) }
	st := b.store.Stats()
	cfg := b.config()

	// RocketMQ's broker keys.
	b.schedule.RunningStats(t)
	t["brokerActive"] = strconv.FormatBool(b.state.Load() == stateRunning)
	t["brokerVersionDesc"] = versionDesc
	i64("brokerVersion", remoting.CurrentVersion)
	putMorning, putNow, getMorning, getNow, putYesterday, getYesterday := b.stats.today()
	i64("msgPutTotalYesterdayMorning", putYesterday)
	i64("msgPutTotalTodayMorning", putMorning)
	i64("msgPutTotalTodayNow", putNow)
	i64("msgGetTotalYesterdayMorning", getYesterday)
	i64("msgGetTotalTodayMorning", getMorning)
	i64("msgGetTotalTodayNow", getNow)
	var overload, timedOut, rejected, drained uint64
	for _, name := range executorNames {
		e := b.executors[name]
		if e == nil {
			continue
		}
		i64(name+"ThreadPoolQueueSize", int64(e.QueueLen()))
		i64(name+"ThreadPoolQueueHeadWaitTimeMills", e.HeadWait().Milliseconds())
		es := e.Stats()
		overload += es.Overload
		timedOut += es.TimedOut
		rejected += es.Rejected
		drained += es.Drained
	}
	if e := b.executors["endTransaction"]; e != nil {
		i64("EndTransactionQueueSize", int64(e.QueueLen()))
	}
	i64("sendThreadPoolQueueCapacity", int64(cfg.SendThreadPoolQueueCapacity))
	i64("pullThreadPoolQueueCapacity", int64(cfg.PullThreadPoolQueueCapacity))
	i64("litePullThreadPoolQueueCapacity", int64(cfg.LitePullThreadPoolQueueCapacity))
	i64("queryThreadPoolQueueCapacity", int64(cfg.QueryThreadPoolQueueCapacity))
	i64("EndTransactionThreadPoolQueueCapacity", int64(cfg.EndTransactionPoolQueueCapacity))
	// POP is not built: there is no ack executor.
	i64("ackThreadPoolQueueSize", 0)
	i64("ackThreadPoolQueueCapacity", 0)
	i64("ackThreadPoolQueueHeadWaitTimeMills", 0)
	i64("dispatchBehindBytes", b.store.DispatchBehindBytes())
	// The put lock's current hold, as RocketMQ's lockTimeMills (0 when free).
	held, _, _ := b.flow.PageCacheBusy()
	i64("pageCacheLockTimeMills", held.Milliseconds())
	i64("earliestMessageTimeStamp", b.earliestMessageTime())
	// startAcceptSendRequestTimeStamp is not built: sends are accepted
	// from start, as with RocketMQ's default 0.
	i64("startAcceptSendRequestTimeStamp", 0)
	b.timerRunningStats(t)
	i64("remainTransientStoreBufferNumbs", int64(b.flow.RemainTransientStoreBufferNumbs()))
	clDir := b.storeConfig().StorePathCommitLog
	if clDir == "" {
		clDir = filepath.Join(b.storeConfig().StorePathRootDir, "commitlog")
	}
	if u, err := vfs.Default.Statfs(clDir); err == nil {
		t["commitLogDirCapacity"] = fmt.Sprintf("Total : %s, Free : %s.",
			stats.HumanReadableByteCount(int64(u.Total)), stats.HumanReadableByteCount(int64(u.Free)))
	} else {
		t["commitLogDirCapacity"] = "unknown: " + err.Error()
	}

	// Spool's figures: latency quantiles in microseconds.
	if st.PutTPS != "" {
		t["storePutTps"] = st.PutTPS
	}
	micros("putLatencyP99Micros", st.Put.Quantile(0.99))
	micros("putLockHoldP99Micros", st.PutLockHold.Quantile(0.99))
	micros("putLockHoldMaxMicros", st.PutLockHold.Max)
	micros("fsyncP99Micros", st.Flush.Quantile(0.99))
	micros("fsyncMaxMicros", st.Flush.Max)
	t["syncMethod"] = vfs.SyncMethod()
	i64("ringSyncs", vfs.RingSyncs())
	micros("fileCreateP99Micros", st.FileCreate.Quantile(0.99))
	micros("dispatchPassP99Micros", st.Dispatch.Quantile(0.99))
	i64("indexBehindBytes", st.IndexLagBytes)
	i64("flushes", st.Flushes)
	i64("loopFlushes", st.LoopFlushes)
	i64("flushTimeouts", st.FlushTimeouts)
	i64("syncErrors", st.SyncErrors)
	i64("syncUnderPutLock", st.SyncUnderPutLock)
	// Fallbacks: rolls that found no file ready, and the spill behind them.
	i64("putWaitedOnCreate", st.PutWaitedOnCreate)
	i64("spills", st.Spills)
	i64("spillWrites", st.SpillWrites)
	i64("spillFull", st.SpillFull)
	i64("allocFailures", st.AllocFailures)
	i64("readyCommitLogFiles", int64(st.ReadyFiles))
	i64("diskFullRefusals", st.DiskFullRefusals)
	// A full disk: refusals, held spill answers, retries, forced deletions.
	i64("spillHeld", st.SpillHeld)
	i64("noSpaceRefusals", st.NoSpaceRefusals)
	i64("noSpaceEvents", st.NoSpaceEvents)
	i64("allocRetries", st.AllocRetries)
	if st.NoSpace != "" {
		t["storeNoSpace"] = st.NoSpace
	}
	t["commitLogStoredRatio"] = fmt.Sprintf("%.4f", st.DiskStoredRatio)
	i64("commitLogReservedBytes", st.DiskReservedBytes)
	i64("forcedDeletions", st.ForcedDeletions)
	i64("forcedDeletedBytes", st.ForcedDeletedBytes)
	i64("forcedDeletedOldestTimeStamp", st.ForcedDeletedOldestMs)
	t["storeReadOnly"] = strconv.FormatBool(st.ReadOnly)
	if st.ReadOnlyReason != "" {
		t["storeReadOnlyReason"] = st.ReadOnlyReason
	}
	// Busy answers by kind (totals since start).
	ss := b.server.Stats()
	f := b.flow
	i64("busyOverload", int64(overload))
	i64("busyTimeoutCleanQueue", int64(timedOut))
	i64("busyRejectRequest", int64(rejected)+int64(ss.RejectedInflight))
	i64("busyRejectRequestPageCache", f.RejectPageCache.Load())
	i64("busyRejectRequestTransientPool", f.RejectPool.Load())
	i64("busyRejectRequestInflight", int64(ss.RejectedInflight))
	i64("busyPcSynchronized", f.PCSynchronized.Load())
	i64("busyPcBusyCleanQueue", int64(drained))
	i64("coldReadBytesPerSecond", cfg.ColdReadBytesPerSecond)
	i64("coldReadBytes", f.ColdBytes.Load())
	i64("coldReadLimited", f.ColdLimited.Load())
	i64("coldReadHeld", f.ColdHeld.Load())
	i64("coldReadRetried", f.ColdRetried.Load())
	i64("pullsHandedOff", f.PullsHandedOff.Load())
	i64("queuedRequestBytes", ss.QueuedBodyBytes)
	i64("requestBodyBudgetPauses", int64(ss.BodyBudgetPauses))
	i64("requestBodyBudgetPausedMills", ss.BodyBudgetPaused.Milliseconds())
	i64("connections", int64(ss.Conns))
	i64("heldPullRequests", int64(b.longPoll.Held()))
	refused, refusedAuthn := b.authsrv.Refused()
	i64("accessRefused", int64(refused))
	i64("accessRefusedAuthentication", int64(refusedAuthn))
	i64("connectionsRefusedTotal", int64(ss.RefusedConnsTotal))
	i64("connectionsRefusedPerIp", int64(ss.RefusedConnsPerIP))
	i64("connectionsAuthenticationTimeout", int64(ss.AuthTimeouts))

	// The process's memory, in bytes: resident anonymous memory (0 where
	// /proc is missing), the Go heap, the soft limit in force and how
	// often free heap went back to the OS after a burst.
	mem := mempolicy.ReadFigures()
	i64("rssAnon", mem.RSSAnon)
	i64("heapInuse", int64(mem.HeapInuse))
	i64("heapIdle", int64(mem.HeapIdle))
	i64("heapReleased", int64(mem.HeapReleased))
	i64("heapSys", int64(mem.HeapSys))
	i64("goMemoryLimit", mem.MemoryLimit)
	i64("memoryReleases", mem.Releases)

	// Transactions: the check service's index and read budget.
	tx := b.TransactionStats()
	i64("transactionPendingHalves", tx.PendingHalves)
	i64("transactionChecksSent", tx.ChecksSent)
	i64("transactionCheckReads", tx.CheckReads)
	i64("transactionCheckReadBytes", tx.CheckReadBytes)
	i64("transactionCheckSkippedNoProducer", tx.SkippedNoProducer)
	i64("transactionCheckGivenUp", tx.GivenUp)
	i64("transactionRebuildReadBytes", tx.RebuildReadBytes)

	// Descriptors: the process's limit and use, the consume-queue cache.
	if ds, ok := b.store.(interface{ Descriptors() store.DescriptorStats }); ok {
		d := ds.Descriptors()
		t["openFileSoftLimit"] = strconv.FormatUint(d.NofileSoft, 10)
		t["openFileHardLimit"] = strconv.FormatUint(d.NofileHard, 10)
		i64("openFiles", int64(d.OpenFiles))
		i64("consumeQueueFileLimit", int64(d.CQFileLimit))
		i64("consumeQueueOpenFiles", int64(d.CQOpenFiles))
		i64("consumeQueueFileOpens", d.CQFileOpens)
		i64("consumeQueueFileEvictions", d.CQFileEvictions)
		i64("dispatchFailures", d.DispatchFailures)
		if d.DispatchError != "" {
			t["dispatchError"] = d.DispatchError
		}
	}

	// Timer messages.
	if ts, ok := b.TimerStats(); ok {
		i64("timerPending", ts.Pending)
		i64("timerDelivered", ts.Delivered)
		i64("timerRejected", ts.RejectedIllegal+ts.RejectedFlowControl)
		i64("timerLost", ts.Lost)
		micros("timerLatenessP99Micros", ts.Lateness.Quantile(0.99))
	}
	b.replicationRuntimeInfo(t)
	return t
}

// earliestMessageTime is the store time of the CommitLog's first record
// (RocketMQ's getEarliestMessageTime), or -1 when the log is empty.
func (b *Broker) earliestMessageTime() int64 {
	minOff := b.store.MinPhyOffset()
	if b.store.MaxPhyOffset() <= minOff {
		return -1
	}
	rec, err := b.store.LookMessageByOffset(minOff)
	if err != nil {
		return -1
	}
	h, err := message.ParseRecordHeader(rec)
	if err != nil {
		return -1
	}
	return h.StoreTimestamp
}

// timerRunningStats adds RocketMQ's timing-wheel figures: timerReadBehind
// (seconds the wheel's hand is behind the clock), timerOffsetBehind (timer
// messages stored but not yet linked into the wheel), timerCongestNum
// (timers in the wheel), timerEnqueueTps and timerDequeueTps (Java floats,
// over the last 10 s). With timerWheelEnable=false they are "0" and "0.0",
// as in RocketMQ.
func (b *Broker) timerRunningStats(t map[string]string) {
	var readBehind, offsetBehind, congest int64
	if ts, ok := b.TimerStats(); ok {
		if ts.Cursor > 0 {
			readBehind = max(b.clock.Now().Unix()-ts.Cursor, 0)
		}
		offsetBehind = max(b.store.MaxOffsetInQueue(timer.Topic, 0)-ts.EnqueueOffset, 0)
		congest = ts.Pending
	}
	enq, deq := b.stats.timerTPS()
	t["timerReadBehind"] = strconv.FormatInt(readBehind, 10)
	t["timerOffsetBehind"] = strconv.FormatInt(offsetBehind, 10)
	t["timerCongestNum"] = strconv.FormatInt(congest, 10)
	t["timerEnqueueTps"] = stats.JavaFloat(enq)
	t["timerDequeueTps"] = stats.JavaFloat(deq)
}

// timerTotals is what the stats ticker samples for timerEnqueueTps and
// timerDequeueTps: timers accepted and delivered (0 without the wheel).
func (b *Broker) timerTotals() (enq, deq int64) {
	if ts, ok := b.TimerStats(); ok {
		return ts.Scheduled, ts.Delivered
	}
	return 0, 0
}
