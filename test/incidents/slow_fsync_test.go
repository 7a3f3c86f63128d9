package incidents

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/remoting"
)

// slowSync is the injected fsync/msync latency (seed 002: a checkpoint
// fsync stuck for seconds on a saturated disk).
const slowSync = 2 * time.Second

// syncCensus counts, by file class, the syncs that ran while the fault was
// on, so a test can show the background writers (checkpoint, consume
// queues) really hit the slow path.
type syncCensus struct {
	on     atomic.Bool
	mu     sync.Mutex
	byKind map[string]int
}

func (c *syncCensus) hook(root string) func(op vfs.Op, name string) {
	return func(op vfs.Op, name string) {
		if !c.on.Load() || (op != vfs.OpSync && op != vfs.OpSyncDir) {
			return
		}
		kind := "other"
		rel, err := filepath.Rel(root, name)
		if err == nil {
			switch {
			case rel == "." || !strings.Contains(rel, string(filepath.Separator)) && op == vfs.OpSyncDir:
				kind = "rootdir"
			case strings.HasPrefix(rel, "commitlog"):
				kind = "commitlog"
			case strings.HasPrefix(rel, "consumequeue"):
				kind = "consumequeue"
			case strings.HasPrefix(rel, "checkpoint"):
				kind = "checkpoint"
			case strings.HasPrefix(rel, "index"):
				kind = "index"
			case strings.HasPrefix(rel, "config"):
				kind = "config"
			}
		}
		c.mu.Lock()
		if c.byKind == nil {
			c.byKind = map[string]int{}
		}
		c.byKind[kind+"/"+op.String()]++
		c.mu.Unlock()
	}
}

func (c *syncCensus) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.byKind {
		out[k] = v
	}
	return out
}

func (c *syncCensus) count(prefix string) int {
	n := 0
	for k, v := range c.snapshot() {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

func setSlowSync(fs *vfs.FaultFS, d time.Duration) {
	fs.SetLatency(vfs.OpSync, d)
	fs.SetLatency(vfs.OpSyncDir, d)
}

// waitFlushed waits until the CommitLog is flushed up to its end, so a
// fault switched on afterwards slows every later flush.
func waitFlushed(t testing.TB, st *store.DefaultMessageStore) {
	t.Helper()
	waitFlushedTo(t, st, -1)
}

// waitFlushedTo waits until the CommitLog is flushed up to target (its end
// when target < 0).
func waitFlushedTo(t testing.TB, st *store.DefaultMessageStore, target int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := st.Stats()
		want := target
		if want < 0 {
			want = s.CommitLogMax
		}
		if s.CommitLogFlushed >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CommitLog not flushed after 20s: flushed %d, max %d", s.CommitLogFlushed, s.CommitLogMax)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type phaseFigures struct {
	send loadResult
	pull pullResult
}

// sendAndPull runs the paced producers and a caught-up consumer for d.
func sendAndPull(r *rig, topic string, queues int, rate float64, d time.Duration) phaseFigures {
	from := r.maxOffsets(topic, queues)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out phaseFigures
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		out.pull = runPulls(ctx, pullLoad{Addr: r.addr(), Topic: topic, Group: "incident-fsync-consumer", Queues: queues,
			From: from, MaxMsgs: 32, Idle: time.Millisecond})
	}()
	out.send = runSends(ctx, sendLoad{Addr: r.addr(), Topic: topic, Queues: queues, Conns: 16, Inflight: 1, Size: 1024, Rate: rate}, d+5*time.Second)
	wg.Wait()
	return out
}

// TestSlowFsyncUnderTheLog replays seed 002 (KAFKA-15046): every fsync,
// fdatasync, msync and directory sync is slowed to 2 s through the fault
// file system. With ASYNC_FLUSH, sends and pulls must not notice (the
// flusher, the consume-queue flush and the checkpoint writer all sync off
// the request path); with SYNC_FLUSH and syncFlushTimeout=1000 every send
// must end FLUSH_DISK_TIMEOUT, never OK.
func TestSlowFsyncUnderTheLog(t *testing.T) {
	var sendRatios, pullRatios, syncMax []float64
	runReps(t, func(t *testing.T) {
		a := slowFsyncAsync(t)
		sendRatios = append(sendRatios, a.sendRatio)
		pullRatios = append(pullRatios, a.pullRatio)
		syncMax = append(syncMax, slowFsyncSync(t))
	})
	t.Logf("medians over %d run(s): ASYNC send p99 ratio %.2f, pull p99 ratio %.2f; SYNC longest answer %.0f ms",
		prof.reps, median(sendRatios), median(pullRatios), median(syncMax))
	if prof.timed {
		if m := median(sendRatios); m > 2 {
			t.Errorf("ASYNC_FLUSH send p99 under slow fsync is %.2fx the baseline (median), target <= 2x", m)
		}
		if m := median(pullRatios); m > 2 {
			t.Errorf("pull p99 under slow fsync is %.2fx the baseline (median), target <= 2x", m)
		}
		if m := median(syncMax); m > 1100 {
			t.Errorf("SYNC_FLUSH sends answered FLUSH_DISK_TIMEOUT after up to %.0f ms (median of the longest), target <= 1100 ms", m)
		}
	}
}

type asyncFigures struct{ sendRatio, pullRatio float64 }

func slowFsyncAsync(t *testing.T) asyncFigures {
	const topic, queues = "FsyncAsyncTopic", 8
	fs := vfs.NewFaultFS(vfs.Default)
	dir := t.TempDir()
	census := &syncCensus{}
	fs.SetHook(census.hook(dir))
	r := startRig(t, rigOptions{fs: fs, dir: dir, store: func(c *store.Config) {
		c.MappedFileSizeCommitLog = 16 << 20
		c.FlushDiskType = store.AsyncFlush
		c.SyncFlushTimeout = 1000
		// Every interval syncs every consume queue with new entries, as
		// many background syncs as the fault can slow.
		c.FlushConsumeQueueLeastPages = 0
	}})
	r.createTopic(topic, queues)

	base := sendAndPull(r, topic, queues, prof.fsyncRate, prof.fsyncBaseline)
	// The fault starts on a caught-up store: on a loaded machine dispatch
	// may still be behind the baseline, and the consume-queue files it
	// would then create under the fault cost 4 s each (a file and a
	// directory sync), longer than the phase's wait for eight queues.
	r.waitDispatched()
	before := r.st.Stats()
	ckBefore := fs.Count(vfs.OpSync) + fs.Count(vfs.OpSyncDir)
	census.on.Store(true)
	setSlowSync(fs, slowSync)
	slow := sendAndPull(r, topic, queues, prof.fsyncRate, prof.fsyncWindow)
	setSlowSync(fs, 0)
	census.on.Store(false)
	after := r.st.Stats()

	t.Logf("baseline  send %s", base.send.describe())
	t.Logf("baseline  pull pulls=%d msgs=%d lat{%s} e2e{%s} errors=%d", base.pull.Pulls, base.pull.Msgs, base.pull.Lat, base.pull.EndToEnd, base.pull.Errors)
	t.Logf("slow sync send %s", slow.send.describe())
	t.Logf("slow sync pull pulls=%d msgs=%d lat{%s} e2e{%s} errors=%d", slow.pull.Pulls, slow.pull.Msgs, slow.pull.Lat, slow.pull.EndToEnd, slow.pull.Errors)
	t.Logf("syncs during the fault (%d in all): %v", fs.Count(vfs.OpSync)+fs.Count(vfs.OpSyncDir)-ckBefore, census.snapshot())
	t.Logf("store: flushes %d->%d, flush max %v, put lock hold max %v, put max %v, dispatch behind now %d",
		before.Flushes, after.Flushes, after.Flush.Max, after.PutLockHold.Max, after.Put.Max, after.DispatchBehind)

	fig := asyncFigures{
		sendRatio: ratio(slow.send.OKLat.P99, base.send.OKLat.P99),
		pullRatio: ratio(slow.pull.Lat.P99, base.pull.Lat.P99),
	}
	t.Logf("ASYNC_FLUSH: send p99 %dus -> %dus (x%.2f), pull p99 %dus -> %dus (x%.2f)",
		base.send.OKLat.P99, slow.send.OKLat.P99, fig.sendRatio, base.pull.Lat.P99, slow.pull.Lat.P99, fig.pullRatio)

	// Invariants: counters and answer codes only.
	storeInvariants(t, after)
	for name, res := range map[string]loadResult{"baseline": base.send, "slow sync": slow.send} {
		answerInvariants(t, name, res)
		if res.OK != res.Sent {
			t.Errorf("%s: %d of %d ASYNC_FLUSH sends answered OK, want all (%s)", name, res.OK, res.Sent, res.describe())
		}
	}
	if base.pull.Errors+slow.pull.Errors != 0 {
		t.Errorf("pull errors: baseline %d, slow %d; first: %s %s", base.pull.Errors, slow.pull.Errors, base.pull.FirstErr, slow.pull.FirstErr)
	}
	// The background writer flushes every consume queue, then writes the
	// checkpoint; with 2 s syncs a short window only reaches the queues.
	if n := census.count("consumequeue/") + census.count("checkpoint/"); n == 0 {
		t.Errorf("no consume-queue or checkpoint sync ran during the %v fault window: the background writer was not exercised", prof.fsyncWindow)
	}
	if n := census.count("checkpoint/"); prof.timed && n == 0 {
		t.Errorf("no checkpoint sync ran during the %v fault window: the scenario did not exercise the checkpoint writer", prof.fsyncWindow)
	}
	if n := census.count("commitlog/"); n == 0 {
		t.Errorf("no CommitLog sync ran during the fault window")
	}
	if got, want := r.stored(topic, queues), base.send.OK+slow.send.OK; got != want {
		t.Errorf("nothing lost: consume queues hold %d messages, %d sends were answered OK", got, want)
	}
	return fig
}

// slowFsyncSync returns the longest FLUSH_DISK_TIMEOUT answer in ms.
func slowFsyncSync(t *testing.T) float64 {
	const topic, queues = "FsyncSyncTopic", 8
	fs := vfs.NewFaultFS(vfs.Default)
	// The injected latency is the only slow sync: a real fsync on a busy
	// disk can outlast syncFlushTimeout=1000 by itself, which would time
	// out baseline sends this scenario expects to succeed.
	fs.SkipRealSync(true)
	r := startRig(t, rigOptions{fs: fs, store: func(c *store.Config) {
		c.MappedFileSizeCommitLog = 16 << 20
		c.FlushDiskType = store.SyncFlush
		c.SyncFlushTimeout = 1000
	}})
	r.createTopic(topic, queues)
	load := sendLoad{Addr: r.addr(), Topic: topic, Queues: queues, Conns: 8, Inflight: 2, Size: 1024}

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	base := runSends(ctx, load, 10*time.Second)
	cancel()
	waitFlushed(t, r.st)
	before := r.st.Stats()
	setSlowSync(fs, slowSync)
	ctx, cancel = context.WithTimeout(context.Background(), prof.syncWindow)
	slow := runSends(ctx, load, prof.syncWindow+10*time.Second)
	cancel()
	setSlowSync(fs, 0)
	after := r.st.Stats()

	t.Logf("SYNC_FLUSH baseline  %s", base.describe())
	t.Logf("SYNC_FLUSH slow sync %s", slow.describe())
	t.Logf("store FlushTimeouts %d -> %d", before.FlushTimeouts, after.FlushTimeouts)

	storeInvariants(t, after)
	answerInvariants(t, "SYNC_FLUSH baseline", base)
	answerInvariants(t, "SYNC_FLUSH slow sync", slow)
	if base.OK != base.Sent {
		t.Errorf("SYNC_FLUSH baseline: %d of %d sends OK, want all", base.OK, base.Sent)
	}
	if slow.Sent == 0 || slow.FlushTO != slow.Sent || slow.OK != 0 {
		t.Errorf("SYNC_FLUSH with 2 s syncs: %d sends, %d FLUSH_DISK_TIMEOUT (%d), %d OK; want every send FLUSH_DISK_TIMEOUT and none OK",
			slow.Sent, slow.FlushTO, remoting.FlushDiskTimeout, slow.OK)
	}
	if d := after.FlushTimeouts - before.FlushTimeouts; d != slow.FlushTO {
		t.Errorf("store counted %d flush timeouts, clients saw %d FLUSH_DISK_TIMEOUT answers", d, slow.FlushTO)
	}
	// A FLUSH_DISK_TIMEOUT message is written, only not yet durable.
	if got, want := r.stored(topic, queues), base.OK+base.FlushTO+slow.OK+slow.FlushTO; got != want {
		t.Errorf("nothing lost: consume queues hold %d messages, clients saw %d OK + FLUSH_DISK_TIMEOUT", got, want)
	}
	return float64(slow.Lat.Max) / 1000
}
