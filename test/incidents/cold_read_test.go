package incidents

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/store"
)

// TestColdReadStorm replays seed 000's read storm: under steady load at
// half of capacity, a consumer group catches up on old data evicted from
// the page cache. Sends must keep their latency and never be refused for a
// busy page cache.
func TestColdReadStorm(t *testing.T) {
	var ratios []float64
	runReps(t, func(t *testing.T) { ratios = append(ratios, coldReadStormOnce(t)) })
	t.Logf("median over %d run(s): send p99 ratio %.2f", prof.reps, median(ratios))
	if prof.timed {
		if m := median(ratios); m > 2 {
			t.Errorf("send p99 during the cold-read storm is %.2fx the baseline (median), target <= 2x", m)
		}
	}
}

// evictor drops the CommitLog's pages from memory right before the storm:
// through the store's hook when it is built, else by posix_fadvise(DONTNEED)
// on files the store has not touched through a mapping since it started.
type evictor struct {
	hook  bool
	files []string
}

// prepareEvict runs after the old data is written. Without the store's
// hook it restarts the broker, so no mapping holds the old pages any more
// (fadvise cannot drop mapped pages), and waits for recovery, dispatch and
// the index builder to stop reading them.
func prepareEvict(t *testing.T, r *rig) *evictor {
	t.Helper()
	if _, err := r.st.EvictPageCache(""); err == nil {
		return &evictor{hook: true}
	} else if !errors.Is(err, store.ErrNotBuilt) {
		t.Fatalf("EvictPageCache: %v", err)
	} else {
		t.Logf("store.EvictPageCache is not built (%v); evicting by restart + posix_fadvise(DONTNEED)", err)
	}
	r.restartBroker()
	r.waitDispatched()
	deadline := time.Now().Add(30 * time.Second)
	for r.st.Stats().IndexLagBytes > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return &evictor{files: r.commitLogFiles()}
}

func (e *evictor) method() string {
	if e.hook {
		return "store.EvictPageCache"
	}
	return "restart + posix_fadvise(DONTNEED)"
}

func (e *evictor) evict(t *testing.T, r *rig, oldEnd int64) {
	t.Helper()
	if e.hook {
		// The hook drops only flushed pages.
		waitFlushedTo(t, r.st, oldEnd)
		rep, err := r.st.EvictPageCache("")
		if err != nil {
			t.Fatalf("EvictPageCache: %v", err)
		}
		t.Logf("EvictPageCache: %d files, %s, resident %s -> %s", rep.Files, mib(rep.Bytes), mib(rep.ResidentBefore), mib(rep.ResidentAfter))
		return
	}
	if err := dropCache(e.files); err != nil {
		t.Fatal(err)
	}
}

func coldReadStormOnce(t *testing.T) float64 {
	const cold, hot, queues = "ColdTopic", "HotTopic", 8
	r := startRig(t, rigOptions{store: func(c *store.Config) {
		c.MappedFileSizeCommitLog = prof.coldFileSize
	}})
	r.createTopic(cold, queues)
	r.createTopic(hot, queues)
	t0 := time.Now()
	n := r.fill(cold, queues, 4096, prof.coldOldBytes)
	coldEnd := r.st.MaxPhyOffset()
	t.Logf("old data: %d messages, %s of CommitLog in %v", n, mib(coldEnd), time.Since(t0).Round(time.Millisecond))
	stopAt := r.maxOffsets(cold, queues)
	ev := prepareEvict(t, r)

	addr := r.addr()
	capLoad := sendLoad{Addr: addr, Topic: hot, Queues: queues, Conns: 16, Inflight: 4, Size: 1024}
	ctx, cancel := context.WithTimeout(context.Background(), prof.coldCapacity)
	capRes := runSends(ctx, capLoad, prof.coldCapacity+5*time.Second)
	cancel()
	capacity := capRes.Throughput()
	steady := capLoad
	steady.Rate = capacity / 2

	ctx, cancel = context.WithTimeout(context.Background(), prof.coldPhase)
	base := runSends(ctx, steady, prof.coldPhase+5*time.Second)
	cancel()

	ev.evict(t, r, coldEnd)
	res, total, err := residency(r.commitLogFiles(), coldEnd)
	if err != nil {
		t.Fatal(err)
	}
	resPct := 100 * ratio(res, total)
	s0 := r.st.Stats()
	ctx, cancel = context.WithTimeout(context.Background(), prof.coldPhase)
	var storm loadResult
	var reads pullResult
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		reads = runPulls(ctx, pullLoad{Addr: addr, Topic: cold, Group: "incident-catch-up", Queues: queues,
			StopAt: stopAt, MaxMsgs: 32})
	}()
	storm = runSends(ctx, steady, prof.coldPhase+5*time.Second)
	cancel()
	wg.Wait()
	s1 := r.st.Stats()
	resAfter, _, _ := residency(r.commitLogFiles(), coldEnd)

	t.Logf("eviction by %s: old data %.1f%% resident before the storm (%s of %s), %.1f%% after",
		ev.method(), resPct, mib(res), mib(total), 100*ratio(resAfter, total))
	t.Logf("capacity (closed loop 16x4, 1 KiB) %.0f msg/s; steady load paced at %.0f msg/s", capacity, steady.Rate)
	t.Logf("baseline %s", base.describe())
	t.Logf("storm    %s", storm.describe())
	t.Logf("catch-up reads: %d pulls, %d msgs, %s in %.1fs (%.1f MB/s), completed=%v, pull lat{%s}, errors=%d %s",
		reads.Pulls, reads.Msgs, mib(reads.Bytes), reads.Seconds, float64(reads.Bytes)/reads.Seconds/1e6, reads.Completed,
		reads.Lat, reads.Errors, reads.FirstErr)
	during := s1.Put.Sub(s0.Put)
	t.Logf("store: put during the storm {%s}, put lock hold max %v", during, s1.PutLockHold.Max)
	p99 := ratio(storm.OKLat.P99, base.OKLat.P99)
	t.Logf("send p99 %dus -> %dus (x%.2f)", base.OKLat.P99, storm.OKLat.P99, p99)

	storeInvariants(t, s1)
	answerInvariants(t, "capacity", capRes)
	answerInvariants(t, "baseline", base)
	answerInvariants(t, "storm", storm)
	if reads.Errors != 0 {
		t.Errorf("catch-up reads: %d errors, first: %s", reads.Errors, reads.FirstErr)
	}
	if reads.Msgs == 0 {
		t.Errorf("the catch-up consumer read nothing: no storm happened")
	}
	if prof.timed && resPct >= 5 {
		t.Errorf("old data was %.1f%% resident before the storm, want < 5%%", resPct)
	}
	if got, want := r.stored(hot, queues), capRes.OK+base.OK+storm.OK; got != want {
		t.Errorf("nothing lost: %s holds %d messages, %d sends were answered OK", hot, got, want)
	}
	return p99
}
