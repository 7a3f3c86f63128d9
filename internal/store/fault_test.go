package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

// goid is the current goroutine's id (tests only).
func goid() int64 {
	var b [64]byte
	s := string(b[:runtime.Stack(b[:], false)])
	s = strings.TrimPrefix(s, "goroutine ")
	if i := strings.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// ownerLock is a put lock that knows its holder, so a test can tell
// whether a sync runs inside the critical section.
type ownerLock struct {
	mu     sync.Mutex
	holder atomic.Int64
}

func (l *ownerLock) Lock()          { l.mu.Lock(); l.holder.Store(goid()) }
func (l *ownerLock) Unlock()        { l.holder.Store(0); l.mu.Unlock() }
func (l *ownerLock) heldByMe() bool { return l.holder.Load() == goid() }

// instrument installs an owner lock and counts syncs run under it.
func instrument(st *DefaultMessageStore, fs *vfs.FaultFS) *atomic.Int64 {
	return instrumentWith(st, fs, nil)
}

// instrumentWith is instrument that also runs then (when not nil) before
// every operation outside the put lock.
func instrumentWith(st *DefaultMessageStore, fs *vfs.FaultFS, then func(op vfs.Op, name string)) *atomic.Int64 {
	l := &ownerLock{}
	st.commitLog.lock = l
	var n atomic.Int64
	fs.SetHook(func(op vfs.Op, name string) {
		if l.heldByMe() {
			if op == vfs.OpSync || op == vfs.OpCreate || op == vfs.OpFallocate || op == vfs.OpTruncate || op == vfs.OpMmap {
				n.Add(1)
				st.stats.syncUnderLock.Add(1)
			}
			return
		}
		if then != nil {
			then(op, name)
		}
	})
	return &n
}

// creationGate holds every creation of a CommitLog file while it is shut,
// the way a stuck file system would, however long the test's puts take.
type creationGate struct {
	mu   sync.Mutex
	shut chan struct{} // nil: open
}

func (g *creationGate) close() {
	g.mu.Lock()
	g.shut = make(chan struct{})
	g.mu.Unlock()
}

func (g *creationGate) open() {
	g.mu.Lock()
	if g.shut != nil {
		close(g.shut)
		g.shut = nil
	}
	g.mu.Unlock()
}

func (g *creationGate) hook(op vfs.Op, name string) {
	if op != vfs.OpCreate || !strings.Contains(name, "commitlog") {
		return
	}
	g.mu.Lock()
	ch := g.shut
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

func TestSlowFsyncSyncPutsTimeOut(t *testing.T) {
	cfg := testConfig(t)
	cfg.FlushDiskType = SyncFlush
	cfg.SyncFlushTimeout = 1000
	fs := vfs.NewFaultFS(vfs.OS())
	st, err := Open(cfg, fs, nil)
	if err != nil {
		t.Fatal(err)
	}
	underLock := instrument(st, fs)
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	fs.SetLatency(vfs.OpSync, 2*time.Second)
	var wg sync.WaitGroup
	var ok, timeout, other, asyncOK atomic.Int64
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				m := testMsg("slow", int32(g%4), strings.Repeat("b", 100+i), "")
				async := i%2 == 1
				if async {
					m.Properties[message.PropertyWaitStoreMsgOK] = "false"
				}
				done := make(chan PutResult, 1)
				st.PutMessage(m, func(r PutResult) { done <- r })
				if async {
					// ASYNC-style puts complete without waiting for the
					// slow fsync.
					if r := <-done; r.Status == PutOK {
						asyncOK.Add(1)
					} else {
						other.Add(1)
					}
					continue
				}
				go func() {
					switch r := <-done; r.Status {
					case PutOK:
						ok.Add(1)
					case FlushDiskTimeout:
						timeout.Add(1)
					default:
						other.Add(1)
					}
					wg.Done()
				}()
				wg.Add(1)
			}
		}()
	}
	wg.Wait()
	fs.SetLatency(vfs.OpSync, 0)
	s := st.Stats()
	if err := st.Shutdown(); err != nil {
		t.Fatal(err)
	}
	t.Logf("sync OK %d, FLUSH_DISK_TIMEOUT %d, other %d, async OK %d; put-lock hold p99 %v max %v",
		ok.Load(), timeout.Load(), other.Load(), asyncOK.Load(), s.PutLockHold.Quantile(0.99), s.PutLockHold.Max)
	if ok.Load() != 0 || timeout.Load() != 160 || other.Load() != 0 || asyncOK.Load() != 160 {
		t.Fatalf("want 160 timeouts, 0 OK, 160 async OK")
	}
	if underLock.Load() != 0 || s.SyncUnderPutLock != 0 {
		t.Fatalf("%d syncs ran inside the put lock", underLock.Load())
	}
	if s.FlushTimeouts != 160 {
		t.Fatalf("FlushTimeouts counter %d", s.FlushTimeouts)
	}
}

func TestFsyncErrorMakesReadOnly(t *testing.T) {
	cfg := testConfig(t)
	cfg.FlushDiskType = SyncFlush
	fs := vfs.NewFaultFS(vfs.OS())
	st := openStarted(t, cfg, fs)
	defer st.Shutdown()
	mustPut(t, st, testMsg("E", 0, "before", ""))
	fs.FailSyncOn(st.commitLog.mfq.first().path, 1, syscall.EIO, false)
	r := putSync(t, st, testMsg("E", 0, "failing", ""))
	if r.Status == PutOK || !strings.Contains(r.Remark, "read-only") {
		t.Fatalf("put during failing fsync: %v %q", r.Status, r.Remark)
	}
	for i := 0; i < 5; i++ {
		r := putSync(t, st, testMsg("E", 0, "after", ""))
		if r.Status != ServiceNotAvailable || !strings.Contains(r.Remark, "input/output error") {
			t.Fatalf("put after fsync error: %v %q", r.Status, r.Remark)
		}
	}
	var clSyncs atomic.Int64
	failedFile := st.commitLog.mfq.first().path
	fs.SetHook(func(op vfs.Op, name string) {
		if op == vfs.OpSync && name == failedFile {
			clSyncs.Add(1)
		}
	})
	if s := st.Stats(); !s.ReadOnly || s.SyncErrors != 1 {
		t.Fatalf("stats: %+v", s)
	}
	// Reads continue.
	waitDispatched(t, st, "E", 0, 1)
	g := st.GetMessage("g", "E", 0, 0, 8, 0, nil)
	if g.Status != Found {
		t.Fatalf("read after fsync error: %v", g.Status)
	}
	g.Release()
	if err := st.Shutdown(); err != nil {
		t.Logf("shutdown: %v", err)
	}
	if n := clSyncs.Load(); n != 0 {
		t.Fatalf("%d CommitLog syncs after the failure (the failed range must not be retried)", n)
	}
}

func TestENOSPCAtCreation(t *testing.T) {
	cfg := testConfig(t)
	fs := vfs.NewFaultFS(vfs.OS())
	fs.SetENOSPC(false, true)
	st, err := Open(cfg, fs, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Start()
	if err == nil || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "00000000000000000000") {
		t.Fatalf("start on a full disk: %v", err)
	}
	// A running store whose allocator hits ENOSPC: a roll refuses with
	// SERVICE_NOT_AVAILABLE naming the disk instead of filling memory.
	fs.SetENOSPC(false, false)
	cfg.WriteSpillSize = 4096
	st = openFastRetry(t, cfg, fs)
	fs.SetENOSPCOn(cfg.StorePathCommitLog, false, true)
	want := map[int64]string{}
	var refused PutResult
	var held sync.WaitGroup
	var heldMu sync.Mutex
	for i := 0; i < 5000 && refused.Status == PutOK; i++ {
		body := fmt.Sprint("n", i, strings.Repeat("z", 200))
		held.Add(1)
		st.PutMessage(testMsg("N", 0, body, ""), func(r PutResult) {
			defer held.Done()
			heldMu.Lock()
			defer heldMu.Unlock()
			switch r.Status {
			case PutOK:
				want[r.QueueOffset] = body
			case OSPageCacheBusy: // a full spill while the first attempt runs
			default:
				refused = r
			}
		})
		heldMu.Lock()
		r := refused
		heldMu.Unlock()
		if r.Status != PutOK {
			break
		}
		runtime.Gosched()
	}
	heldMu.Lock()
	r := refused
	heldMu.Unlock()
	if r.Status != ServiceNotAvailable || !strings.Contains(r.Remark, "no space left") || !strings.Contains(r.Remark, cfg.StorePathCommitLog) {
		t.Fatalf("refusal on a full disk: %v %q", r.Status, r.Remark)
	}
	if s := st.Stats(); s.AllocFailures == 0 || s.NoSpaceRefusals == 0 || s.PutWaitedOnCreate != 0 || s.NoSpace == "" {
		t.Fatalf("counters: alloc failures %d, refusals %d, waited %d, NoSpace %q", s.AllocFailures, s.NoSpaceRefusals, s.PutWaitedOnCreate, s.NoSpace)
	}
	// The allocator retries by itself while the disk is full (a put's
	// kick may also be what finds the space again, so the retry is
	// looked for before the space returns).
	for deadline := time.Now().Add(10 * time.Second); st.Stats().AllocRetries == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no allocation retry counted while the disk was full")
		}
	}
	// Space returns: held answers go out, and puts are accepted again.
	fs.SetENOSPC(false, false)
	var last PutResult
	for i := 0; i < 1000000; i++ {
		if last = putSync(t, st, testMsg("N", 0, "after", "")); last.Status == PutOK {
			break
		}
		runtime.Gosched()
	}
	if last.Status != PutOK {
		t.Fatalf("after space returned: %v %q", last.Status, last.Remark)
	}
	held.Wait()
	want[last.QueueOffset] = "after"
	waitDispatched(t, st, "N", 0, last.QueueOffset+1)
	checkAll(t, st, "N", 0, want)
	if err := st.Shutdown(); err != nil {
		t.Fatal(err)
	}
}

func TestSlowCreationAtRollSpills(t *testing.T) {
	cfg := testConfig(t)
	cfg.FlushDiskType = SyncFlush
	cfg.SyncFlushTimeout = 20000
	cfg.PreallocateFiles = 1
	fs := vfs.NewFaultFS(vfs.OS())
	st, err := Open(cfg, fs, nil)
	if err != nil {
		t.Fatal(err)
	}
	gate := &creationGate{}
	underLock := instrumentWith(st, fs, gate.hook)
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	defer st.Shutdown()
	defer gate.open()
	// The preallocated file is made first; every creation after it hangs
	// until the gate opens, so the roll after that file has nothing ready.
	deadline := time.Now().Add(10 * time.Second)
	for st.Stats().ReadyFiles < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the preallocated CommitLog file was not made within 10s")
		}
		time.Sleep(time.Millisecond)
	}
	gate.close()
	// Puts written into the spill are answered once the spill has its
	// file, so they are issued without waiting for their answers.
	type answer struct {
		body string
		r    PutResult
	}
	answers := make(chan answer, 20001)
	start := st.Stats()
	issued := 0
	for ; ; issued++ {
		s := st.Stats()
		if s.Spills > start.Spills && s.SpillWrites-start.SpillWrites >= 50 {
			break
		}
		if issued == 20000 {
			t.Fatalf("no spill after %d puts with file creation held: spills %d, spill writes %d", issued, s.Spills, s.SpillWrites)
		}
		body := fmt.Sprint("w", issued)
		m := testMsg("W", 0, body, "")
		m.Properties[message.PropertyWaitStoreMsgOK] = "false"
		st.PutMessage(m, func(r PutResult) { answers <- answer{body, r} })
	}
	gate.open()
	want := map[int64]string{}
	for i := 0; i < issued; i++ {
		a := <-answers
		if a.r.Status == OSPageCacheBusy {
			continue // the spill covers one file; the second roll waits
		}
		if a.r.Status != PutOK {
			t.Fatalf("put %s: %v %q", a.body, a.r.Status, a.r.Remark)
		}
		want[a.r.QueueOffset] = a.body
	}
	// A waiting put completes once the spill has its file and is flushed.
	var last PutResult
	for {
		last = putSync(t, st, testMsg("W", 0, "final", ""))
		if last.Status != OSPageCacheBusy {
			break
		}
		runtime.Gosched()
	}
	if last.Status != PutOK {
		t.Fatalf("final put: %v %q", last.Status, last.Remark)
	}
	want[last.QueueOffset] = "final"
	s := st.Stats()
	t.Logf("spills %d, spill writes %d, spill full %d, waited on create %d", s.Spills, s.SpillWrites, s.SpillFull, s.PutWaitedOnCreate)
	if s.PutWaitedOnCreate != start.PutWaitedOnCreate {
		t.Fatalf("%d puts waited on file creation", s.PutWaitedOnCreate-start.PutWaitedOnCreate)
	}
	if underLock.Load() != 0 {
		t.Fatalf("%d file operations inside the put lock", underLock.Load())
	}
	waitDispatched(t, st, "W", 0, last.QueueOffset+1)
	checkAll(t, st, "W", 0, want)
}

func TestTruncatedUnderReader(t *testing.T) {
	cfg := testConfig(t)
	cfg.WriteWithoutMmap = false // the mapped read path is under test
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	var offs []int64
	for i := 0; i < 800; i++ {
		offs = append(offs, mustPut(t, st, testMsg("X", 0, fmt.Sprint("x", i), "")).WroteOffset)
	}
	first := st.commitLog.mfq.first()
	// Truncate the first file behind the store's back.
	if err := os.Truncate(first.path, 0); err != nil {
		t.Fatal(err)
	}
	// pread path: a short read is an error.
	if _, err := first.acquireAndRead(t, offs[0]); !errors.Is(err, ErrFileGone) {
		t.Fatalf("pread of a truncated file: %v", err)
	}
	// Mapped path: the fault (SIGBUS) becomes an error.
	buf := make([]byte, 16)
	if err := first.copyMapped(buf, 0); !errors.Is(err, ErrFault) {
		t.Fatalf("mapped read of a truncated file: %v", err)
	}
	if _, err := st.LookMessageByOffset(offs[1]); err == nil {
		t.Fatal("look-up in a truncated file succeeded")
	}
	_ = bytes.MinRead
	_ = filepath.Base
}

func (mf *MappedFile) acquireAndRead(t *testing.T, phy int64) ([]byte, error) {
	if !mf.acquire() {
		t.Fatal("acquire")
	}
	defer mf.release()
	b := make([]byte, 64)
	return b, mf.readAt(b, phy-mf.from)
}

func TestTransientPoolExhaustedAnswersBusy(t *testing.T) {
	cfg := testConfig(t)
	cfg.TransientStorePoolEnable = true
	cfg.TransientStorePoolSize = 1
	cfg.CommitIntervalCommitLog = 1 << 30 // the committer never runs on its own
	cfg.CommitCommitLogThoroughInterval = 1 << 30
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	var busy PutResult
	for i := 0; i < 2000; i++ {
		r := putSync(t, st, testMsg("TP", 0, strings.Repeat("t", 300), ""))
		if r.Status != PutOK {
			busy = r
			break
		}
	}
	if busy.Status != OSPageCacheBusy || !strings.Contains(busy.Remark, "transient store pool exhausted") {
		t.Fatalf("exhausted pool: %v %q", busy.Status, busy.Remark)
	}
	if st.MaxPhyOffset() != 0 {
		t.Fatalf("uncommitted bytes readable: max %d", st.MaxPhyOffset())
	}
	// Once the committer writes the full file out, its buffer returns.
	st.commitLog.committer.commit(true)
	mustPut(t, st, testMsg("TP", 0, "after commit", ""))
	if st.Stats().PoolExhausted == 0 {
		t.Fatal("counter")
	}
}

// A put whose bytes did not reach the file (ENOSPC on pwrite) is not
// answered PUT_OK, later puts are refused while the write cannot be done,
// and the store resumes by itself once the retried write goes through.
func TestWriteErrorIsNeverAcknowledged(t *testing.T) {
	cfg := testConfig(t)
	cfg.WriteWithoutMmap = true
	cfg.TransientStorePoolEnable = false
	fs := vfs.NewFaultFS(vfs.OS())
	st := openFastRetry(t, cfg, fs)
	defer st.Shutdown()
	mustPut(t, st, testMsg("W", 0, "before", ""))
	fs.SetENOSPCOn(cfg.StorePathCommitLog, true, false)
	r := putSync(t, st, testMsg("W", 0, "failing", ""))
	if r.Status == PutOK || !strings.Contains(r.Remark, "no space left") {
		t.Fatalf("put whose write failed: %v %q", r.Status, r.Remark)
	}
	if r := putSync(t, st, testMsg("W", 0, "while full", "")); r.Status != ServiceNotAvailable || !strings.Contains(r.Remark, "[NO_SPACE]") {
		t.Fatalf("put while the disk is full: %v %q", r.Status, r.Remark)
	}
	if st.Stats().ReadOnly {
		t.Fatal("ENOSPC made the store read-only")
	}
	fs.SetENOSPCOn("", false, false)
	var after PutResult
	for i := 0; i < 1000000; i++ {
		if after = putSync(t, st, testMsg("W", 0, "after", "")); after.Status == PutOK {
			break
		}
		runtime.Gosched()
	}
	if after.Status != PutOK {
		t.Fatalf("after space returned: %v %q", after.Status, after.Remark)
	}
	waitDispatched(t, st, "W", 0, after.QueueOffset+1)
	checkAll(t, st, "W", 0, map[int64]string{0: "before", after.QueueOffset: "after"})
}
