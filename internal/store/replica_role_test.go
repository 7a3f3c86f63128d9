package store

import (
	"math/rand"
	"sync"
	"testing"

	"github.com/spoolmq/spool/internal/vfs"
)

// A replica that followed a master, then served as master itself, then
// follows again a master holding everything it wrote: the appending of
// replicated bytes restarts at the log's end, not where it stopped as a
// slave (it failed with "the transfer is at X, the CommitLog ends at Y",
// Y the end of the first slave phase, and replication stopped for good).
func TestReplicaLogFollowsAgainAfterServingAsMaster(t *testing.T) {
	a := openStarted(t, testConfig(t), vfs.OS())
	b := openStarted(t, testConfig(t), vfs.OS())
	c := openStarted(t, testConfig(t), vfs.OS())
	for _, st := range []*DefaultMessageStore{a, b, c} {
		t.Cleanup(func() { st.Shutdown() })
	}
	rng := rand.New(rand.NewSource(7))
	la, lb, lc := NewReplicaLog(a), NewReplicaLog(b), NewReplicaLog(c)

	fillMaster(t, a, 200) // a masters, b and c follow
	replicate(t, la, lb, rng, la.MaxOffset())
	replicate(t, la, lc, rng, la.MaxOffset())

	fillMaster(t, b, 1) // b masters (one record, as a short term does), c follows
	replicate(t, lb, lc, rng, lb.MaxOffset())

	// c masters and b follows it from b's end: nothing to cut.
	b.RefusePuts("slave")
	end := lb.MaxOffset()
	cut, err := lb.Truncate(end)
	if err != nil || cut != end {
		t.Fatalf("Truncate(%d) = %d, %v", end, cut, err)
	}
	fillMaster(t, c, 100)
	replicate(t, lc, lb, rng, lc.MaxOffset())
	sameLog(t, lc, lb)
}

// gateLock lets a test hold the put lock and learn when a put waits on it.
type gateLock struct {
	putLock
	waiting chan struct{}
	once    sync.Once
}

func (g *gateLock) Lock() {
	g.once.Do(func() { close(g.waiting) })
	g.putLock.Lock()
}

// A put that passed the store's writable check before a role change set
// the refusal, and takes the put lock after it, is refused rather than
// appended behind the truncation's back.
func TestPutRefusedUnderTheLockAfterARoleChange(t *testing.T) {
	st := openStarted(t, testConfig(t), vfs.OS())
	t.Cleanup(func() { st.Shutdown() })
	mustPut(t, st, testMsg("T", 0, "before", ""))
	end := st.commitLog.visible.Load()
	g := &gateLock{putLock: st.commitLog.lock, waiting: make(chan struct{})}
	g.putLock.Lock()
	st.commitLog.lock = g
	res := make(chan PutResult, 1)
	go func() { res <- putSync(t, st, testMsg("T", 0, "late", "")) }()
	<-g.waiting // past writable(), at the lock
	st.RefusePuts("this broker is a slave now")
	g.putLock.Unlock()
	r := <-res
	if r.Status != ServiceNotAvailable || r.Remark != "this broker is a slave now" {
		t.Fatalf("late put: %v %q; want SERVICE_NOT_AVAILABLE with the refusal", r.Status, r.Remark)
	}
	if got := st.commitLog.visible.Load(); got != end {
		t.Fatalf("the log moved from %d to %d after the refusal", end, got)
	}
}

// SyncTo leaves the checkpoint claiming every byte below end as durable
// (what a new master was elected holding survives a power cut), where the
// ASYNC_FLUSH timer alone had not got to it.
func TestSyncToMakesTheLogDurable(t *testing.T) {
	cfg := testConfig(t)
	cfg.FlushIntervalCommitLog = 3600 * 1000
	cfg.FlushCommitLogThoroughInterval = 3600 * 1000
	cfg.FlushIntervalConsumeQueue = 3600 * 1000
	st := openStarted(t, cfg, vfs.OS())
	t.Cleanup(func() { st.Shutdown() })
	fillMaster(t, st, 50)
	end := st.commitLog.visible.Load()
	cp, _, err := readCheckpoint(st.fs, cfg.checkpointPath())
	if err != nil {
		t.Fatal(err)
	}
	if cp.PhysicFlushedOffset >= end {
		t.Fatalf("the checkpoint already claims %d of %d: the test shows nothing", cp.PhysicFlushedOffset, end)
	}
	if err := st.SyncTo(end); err != nil {
		t.Fatal(err)
	}
	cp, _, err = readCheckpoint(st.fs, cfg.checkpointPath())
	if err != nil {
		t.Fatal(err)
	}
	if cp.PhysicFlushedOffset < end || st.commitLog.flushedWhere.Load() < end {
		t.Fatalf("after SyncTo(%d): checkpoint claims %d, flushed %d", end, cp.PhysicFlushedOffset, st.commitLog.flushedWhere.Load())
	}
}
