package store

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

// openFastRetry opens and starts a store whose allocator retries after
// a millisecond (the back-off is not what these tests are about).
func openFastRetry(t testing.TB, cfg Config, fs vfs.FS) *DefaultMessageStore {
	t.Helper()
	st, err := Open(cfg, fs, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.commitLog.alloc.retryMin, st.commitLog.alloc.retryMax = time.Millisecond, 2*time.Millisecond
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	return st
}

// asyncPuts records the answers of puts that are not waited for.
type asyncPuts struct {
	mu      sync.Mutex
	wg      sync.WaitGroup
	acked   map[int64]string // queue offset -> body
	ackPhy  map[int64]string // CommitLog offset -> body
	refused []PutResult
	pending int
}

func newAsyncPuts() *asyncPuts {
	return &asyncPuts{acked: map[int64]string{}, ackPhy: map[int64]string{}}
}

func (a *asyncPuts) put(st *DefaultMessageStore, m *message.Inner) {
	a.mu.Lock()
	a.pending++
	a.mu.Unlock()
	a.wg.Add(1)
	body := string(m.Body)
	st.PutMessage(m, func(r PutResult) {
		defer a.wg.Done()
		a.mu.Lock()
		defer a.mu.Unlock()
		a.pending--
		if r.Status == PutOK {
			a.acked[r.QueueOffset] = body
			a.ackPhy[r.WroteOffset] = body
		} else {
			a.refused = append(a.refused, r)
		}
	})
}

func (a *asyncPuts) snapshot() (acked map[int64]string, phys map[int64]string, refused []PutResult, pending int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	acked, phys = map[int64]string{}, map[int64]string{}
	for k, v := range a.acked {
		acked[k] = v
	}
	for k, v := range a.ackPhy {
		phys[k] = v
	}
	return acked, phys, append([]PutResult(nil), a.refused...), a.pending
}

// checkPhys checks that every acknowledged record is at its offset.
func checkPhys(t *testing.T, st *DefaultMessageStore, phys map[int64]string) {
	t.Helper()
	lost := 0
	for phy, body := range phys {
		rec, err := st.LookMessageByOffset(phy)
		if err != nil {
			lost++
			continue
		}
		if ext, err := message.DecodeRecord(rec); err != nil || string(ext.Body) != body {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged puts lost", lost, len(phys))
	}
}

// TestSpilledPutAnsweredOnlyInFile: under ASYNC_FLUSH a put that went into
// the in-memory spill (creation of the next file lags) is answered only
// once its bytes are in the file. A copy of the store directory taken
// while creation hangs is what a kill -9 would leave; every put answered
// PUT_OK by then must be in it.
func TestSpilledPutAnsweredOnlyInFile(t *testing.T) {
	cfg := testConfig(t)
	cfg.PreallocateFiles = 1
	cfg.WriteSpillSize = 16 << 10
	fs := vfs.NewFaultFS(vfs.OS())
	release := make(chan struct{})
	var blocked sync.Once
	blockedCh := make(chan struct{})
	st := openFastRetry(t, cfg, fs)
	fs.SetHook(func(op vfs.Op, name string) {
		if op == vfs.OpCreate && strings.Contains(name, "commitlog") {
			blocked.Do(func() { close(blockedCh) })
			<-release
		}
	})
	ap := newAsyncPuts()
	for i := 0; st.Stats().SpillWrites < 20; i++ {
		ap.put(st, testMsg("S", 0, fmt.Sprint("s", i, strings.Repeat("y", 100)), ""))
		if i > 100000 {
			t.Fatal("never spilled")
		}
	}
	<-blockedCh
	_, phys, _, pending := ap.snapshot()
	if pending == 0 {
		t.Fatal("no put is waiting for the spill's file")
	}
	// The process-crash image: the files as they are now.
	img := filepath.Join(t.TempDir(), "img")
	copyLiveDir(t, cfg.StorePathRootDir, img)
	close(release)
	ap.wg.Wait()
	acked, physAll, refused, _ := ap.snapshot()
	for _, r := range refused {
		if r.Status != OSPageCacheBusy {
			t.Fatalf("refused: %v %q", r.Status, r.Remark)
		}
	}
	if s := st.Stats(); s.SpillHeld == 0 {
		t.Fatal("no put was held")
	}
	var maxQO int64
	for qo := range acked {
		maxQO = max(maxQO, qo)
	}
	waitDispatched(t, st, "S", 0, maxQO+1)
	checkAll(t, st, "S", 0, acked)
	checkPhys(t, st, physAll)
	if err := st.Shutdown(); err != nil {
		t.Fatal(err)
	}

	icfg := cfg
	icfg.StorePathRootDir = img
	icfg.StorePathCommitLog = filepath.Join(img, "commitlog")
	ist := openStarted(t, icfg, vfs.OS())
	defer ist.Shutdown()
	checkPhys(t, ist, phys)
	t.Logf("%d acknowledged at the crash image, %d in the end, %d held", len(phys), len(physAll), st.Stats().SpillHeld)
}

// TestSpilledPutRefusedWhenItsFileFindsNoSpace: a put held for the spill's
// file is refused with the disk named when that file's creation finds no
// space, instead of waiting for space to return (a synchronous sender on
// a full disk was stuck for good). Its records stay in the spill and are
// written once space returns, unacknowledged.
func TestSpilledPutRefusedWhenItsFileFindsNoSpace(t *testing.T) {
	cfg := testConfig(t)
	cfg.PreallocateFiles = 1
	cfg.WriteSpillSize = 16 << 10
	fs := vfs.NewFaultFS(vfs.OS())
	fs.SkipRealSync(true)
	st := openFastRetry(t, cfg, fs)
	defer st.Shutdown()
	release := make(chan struct{})
	fs.SetHook(func(op vfs.Op, name string) {
		if op == vfs.OpCreate && strings.Contains(name, "commitlog") {
			<-release
		}
	})
	ap := newAsyncPuts()
	for i := 0; st.Stats().SpillHeld == 0; i++ {
		ap.put(st, testMsg("N", 0, fmt.Sprint("n", i, strings.Repeat("n", 100)), ""))
		if i > 100000 {
			t.Fatal("no put was held for the spill's file")
		}
	}
	// The creation under way finds the disk full.
	fs.SetENOSPCOn(cfg.StorePathCommitLog, false, true)
	close(release)
	ap.wg.Wait() // hangs (test timeout) when a held put is never answered
	acked, _, refused, _ := ap.snapshot()
	noSpace := 0
	for _, r := range refused {
		switch {
		case r.Status == ServiceNotAvailable && strings.Contains(r.Remark, "no space left"):
			noSpace++
		case r.Status != OSPageCacheBusy:
			t.Fatalf("refused: %v %q", r.Status, r.Remark)
		}
	}
	if noSpace == 0 {
		t.Fatalf("no put refused for want of space (%d acknowledged, %d refused)", len(acked), len(refused))
	}
	// Space returns: the spill gets its file, new puts are stored and
	// every acknowledged one is readable.
	fs.SetENOSPCOn("", false, false)
	var ok PutResult
	for i := 0; i < 1000000 && ok.Status != PutOK; i++ {
		ok = putSync(t, st, testMsg("N", 0, "after", ""))
		runtime.Gosched()
	}
	if ok.Status != PutOK {
		t.Fatalf("after space returned: %v %q", ok.Status, ok.Remark)
	}
	var maxQO int64
	for qo := range acked {
		maxQO = max(maxQO, qo)
	}
	waitDispatched(t, st, "N", 0, maxQO+1)
	checkAll(t, st, "N", 0, acked)
}

// TestCrashModelAtEachAllocatorState: SYNC_FLUSH acknowledgements survive a
// power loss (FaultFS.Crash) with the next file ready, its creation slow,
// or its creation failing with ENOSPC.
func TestCrashModelAtEachAllocatorState(t *testing.T) {
	for _, state := range []string{"ready", "slow", "failed"} {
		t.Run(state, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.FlushDiskType = SyncFlush
			cfg.PreallocateFiles = 1
			cfg.WriteSpillSize = 8 << 10
			fs := vfs.NewFaultFS(vfs.OS())
			fs.SkipRealSync(true)
			st := openFastRetry(t, cfg, fs)
			release := make(chan struct{})
			switch state {
			case "failed":
				fs.SetENOSPC(false, true)
			case "slow":
				fs.SetHook(func(op vfs.Op, name string) {
					if op == vfs.OpCreate && strings.Contains(name, "commitlog") {
						<-release
					}
				})
			}
			ap := newAsyncPuts()
			for i := 0; i < 600; i++ {
				ap.put(st, testMsg("C", 0, fmt.Sprint(state, i, strings.Repeat("c", 150)), ""))
				if i%16 == 15 {
					runtime.Gosched()
				}
			}
			// Answered so far: what the crash must keep. Waiters still
			// open are answered by the crash (never PUT_OK).
			acked, phys, _, _ := ap.snapshot()
			close(release)
			crash(st)
			ap.wg.Wait()
			_, physAfter, _, _ := ap.snapshot()
			if err := fs.Crash(cfg.StorePathRootDir, vfs.CrashOptions{Garbage: true, Rand: rand.New(rand.NewPCG(3, 4))}); err != nil {
				t.Fatal(err)
			}
			fs.SetENOSPC(false, false)
			st = openStarted(t, cfg, vfs.NewFaultFS(vfs.OS()))
			defer st.Shutdown()
			checkPhys(t, st, physAfter)
			checkAll(t, st, "C", 0, acked)
			t.Logf("%s: %d acknowledged before the crash", state, len(phys))
		})
	}
}

// TestENOSPCOnEveryWritePath fills the disk for one kind of file at a
// time and checks: a clear refusal (SERVICE_NOT_AVAILABLE naming the
// disk) while it lasts, nothing acknowledged lost, resumption by itself
// when space returns, and a clean shutdown while the disk is full.
func TestENOSPCOnEveryWritePath(t *testing.T) {
	paths := []struct {
		name, match  string
		write, alloc bool
		pwrite       bool // CommitLog written with pwrite
	}{
		{"commitlog pwrite", "commitlog", true, false, true},
		{"commitlog fallocate", "commitlog", false, true, false},
		{"consume queue", "consumequeue", true, true, false},
		{"index", "index", true, true, false},
		{"checkpoint", "checkpoint.tmp", true, false, false},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.WriteWithoutMmap = p.pwrite
			cfg.WriteSpillSize = 4096
			cfg.MaxIndexNum = 200 // index files roll often
			cfg.MaxHashSlotNum = 50
			cfg.MappedFileSizeConsumeQueue = 20 * CQEntrySize
			fs := vfs.NewFaultFS(vfs.OS())
			fs.SkipRealSync(true)
			st := openFastRetry(t, cfg, fs)
			match := filepath.Join(cfg.StorePathRootDir, p.match) // under the store only
			want := map[int64]string{}
			put := func(body string) PutResult {
				m := testMsg("E", 0, body, "")
				m.Properties[message.PropertyKeys] = body
				r := putSync(t, st, m)
				if r.Status == PutOK {
					want[r.QueueOffset] = body
				}
				return r
			}
			for i := 0; i < 50; i++ {
				if r := put(fmt.Sprint("pre", i)); r.Status != PutOK {
					t.Fatalf("put: %v %q", r.Status, r.Remark)
				}
			}
			fs.SetENOSPCOn(match, p.write, p.alloc)
			var refused PutResult
			for i := 0; i < 200000 && refused.Status == PutOK; i++ {
				r := put(fmt.Sprint("full", i, strings.Repeat("f", i%300)))
				if r.Status != PutOK && r.Status != OSPageCacheBusy {
					refused = r
				}
				runtime.Gosched()
			}
			if refused.Status != ServiceNotAvailable || !strings.Contains(refused.Remark, "no space left") || !strings.Contains(refused.Remark, cfg.StorePathCommitLog) {
				t.Fatalf("refusal: %v %q", refused.Status, refused.Remark)
			}
			if st.Stats().ReadOnly {
				t.Fatal("ENOSPC made the store read-only")
			}
			// Space returns: puts are accepted again without a restart.
			fs.SetENOSPCOn("", false, false)
			var ok PutResult
			for i := 0; i < 1000000 && ok.Status != PutOK; i++ {
				ok = put(fmt.Sprint("back", i))
				runtime.Gosched()
			}
			if ok.Status != PutOK {
				t.Fatalf("after space returned: %v %q", ok.Status, ok.Remark)
			}
			// Full again, and shut down meanwhile: cleanly.
			fs.SetENOSPCOn(match, p.write, p.alloc)
			for i := 0; i < 20; i++ {
				put(fmt.Sprint("again", i))
			}
			if err := st.Shutdown(); err != nil {
				t.Fatalf("shutdown on a full disk: %v", err)
			}
			if _, err := os.Stat(cfg.abortPath()); err == nil {
				t.Fatal("abort file left: the next start would run crash recovery")
			}
			fs.SetENOSPCOn("", false, false)
			st = openStarted(t, cfg, vfs.NewFaultFS(vfs.OS()))
			defer st.Shutdown()
			var maxQO int64
			for qo := range want {
				maxQO = max(maxQO, qo)
			}
			waitDispatched(t, st, "E", 0, maxQO+1)
			checkAll(t, st, "E", 0, want)
		})
	}
}

// TestDiskAccountingCountsStoredBytes: CommitLog files allocated ahead are
// reserved space, not data: a disk that is 91 % allocated, almost all of
// it by empty preallocated files, is not full.
func TestDiskAccountingCountsStoredBytes(t *testing.T) {
	cfg := testConfig(t)
	cfg.CleanResourceInterval = 3600 * 1000
	fs := vfs.NewFaultFS(vfs.OS())
	fs.SetDiskSize(1<<40, 1<<39) // roomy, whatever the real disk holds
	st := openStarted(t, cfg, fs)
	defer st.Shutdown()
	mustPut(t, st, testMsg("A", 0, "one", ""))
	for st.commitLog.alloc.readyCount() < cfg.PreallocateFiles {
		runtime.Gosched()
	}
	reserved := st.commitLog.reservedBytes()
	if reserved < int64(cfg.PreallocateFiles)*cfg.MappedFileSizeCommitLog {
		t.Fatalf("reserved %d", reserved)
	}
	// The disk holds the reserved files and 8 KiB of data: 91 % of it.
	data := int64(8 << 10)
	total := uint64(float64(reserved+data) / 0.91)
	fs.SetDiskSize(total, total-uint64(reserved+data))
	st.cleanOnce()
	if r := putSync(t, st, testMsg("A", 0, "two", "")); r.Status != PutOK {
		t.Fatalf("put on a disk holding mostly preallocated files: %v %q", r.Status, r.Remark)
	}
	if got := st.Stats().DiskStoredRatio; got > 0.1 {
		t.Fatalf("stored ratio %.3f", got)
	}
	// A disk whose bytes are really stored is full.
	big := uint64(reserved) * 100
	fs.SetDiskSize(big, big/25)
	st.cleanOnce()
	if r := putSync(t, st, testMsg("A", 0, "three", "")); r.Status != ServiceNotAvailable || !strings.Contains(r.Remark, "disk full") {
		t.Fatalf("put on a full disk: %v %q", r.Status, r.Remark)
	}
}

// TestDiskCheckedAtRollAndShortSpaceAllocatesOne: the disk is looked at on
// every roll (not only on the retention timer), and when space is short
// only one file is kept ahead.
func TestDiskCheckedAtRollAndShortSpaceAllocatesOne(t *testing.T) {
	cfg := testConfig(t)
	cfg.CleanResourceInterval = 3600 * 1000 // the timer never runs here
	cfg.PreallocateFiles = 3
	fs := vfs.NewFaultFS(vfs.OS())
	fs.SetDiskSize(1<<40, 1<<39) // roomy, whatever the real disk holds
	st := openStarted(t, cfg, fs)
	defer st.Shutdown()
	for st.commitLog.alloc.readyCount() < 3 {
		runtime.Gosched()
	}
	// Space short: free space holds less than the files ahead twice over
	// (the disk is not full: about 60 % stored).
	fs.SetDiskSize(1<<20, 200<<10)
	body := strings.Repeat("r", 1000)
	files := st.commitLog.mfq.count()
	for st.commitLog.mfq.count() < files+4 {
		mustPut(t, st, testMsg("R", 0, body, ""))
	}
	for i := 0; i < 200; i++ {
		mustPut(t, st, testMsg("R", 0, body, ""))
		if n := st.commitLog.alloc.readyCount(); n > 1 && st.spaceShort() {
			t.Fatalf("%d files ahead with space short", n)
		}
	}
	if !st.spaceShort() {
		t.Fatal("space short not noticed at a roll")
	}
	// Past diskSpaceWarningLevelRatio: refused from the next roll on.
	fs.SetDiskSize(0, 0)
	fs.SetUsage(0.95)
	var r PutResult
	for i := 0; i < 1000; i++ {
		if r = putSync(t, st, testMsg("R", 0, body, "")); r.Status == ServiceNotAvailable {
			break
		}
	}
	if r.Status != ServiceNotAvailable || !strings.Contains(r.Remark, "disk full") {
		t.Fatalf("after rolls on a full disk: %v %q", r.Status, r.Remark)
	}
}

// TestForcedDeletionIsLoud: deleting unexpired CommitLog files because the
// disk is past diskSpaceCleanForciblyRatio is logged as an error and
// counted with its bytes and the oldest message time.
func TestForcedDeletionIsLoud(t *testing.T) {
	cfg := testConfig(t)
	cfg.CleanResourceInterval = 3600 * 1000
	cfg.DiskSpaceWarningLevelRatio = 99
	fs := vfs.NewFaultFS(vfs.OS())
	var logBuf bytes.Buffer
	var logMu sync.Mutex
	st, err := Open(cfg, fs, slog.New(slog.NewTextHandler(&lockedWriter{w: &logBuf, mu: &logMu}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	defer st.Shutdown()
	first := mustPut(t, st, testMsg("F", 0, "first", ""))
	for st.commitLog.mfq.count() < 4 {
		mustPut(t, st, testMsg("F", 0, strings.Repeat("d", 2000), ""))
	}
	for st.commitLog.flushedWhere.Load() < st.commitLog.mfq.snapshot()[1].from || st.disp.reputFrom.Load() < st.commitLog.mfq.snapshot()[1].from {
		st.commitLog.flusher.kick()
		runtime.Gosched()
	}
	fs.SetUsage(0.9) // above diskSpaceCleanForciblyRatio=85
	st.cleanOnce()
	s := st.Stats()
	if s.ForcedDeletions == 0 || s.ForcedDeletedBytes < cfg.MappedFileSizeCommitLog || s.ForcedDeletedOldestMs != first.StoreTimestamp {
		t.Fatalf("forced deletions %d, bytes %d, oldest %d (first message stored at %d)", s.ForcedDeletions, s.ForcedDeletedBytes, s.ForcedDeletedOldestMs, first.StoreTimestamp)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logBuf.String(), "level=ERROR") || !strings.Contains(logBuf.String(), "forced deletion of unexpired CommitLog data") {
		t.Fatalf("log: %s", logBuf.String())
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// copyLiveDir copies a running store's directory; files that vanish
// meanwhile (a checkpoint's temporary file) are skipped.
func copyLiveDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPutBehindAnUnfinishedWriteWaits: with pwrite, records are copied
// after the put lock; a put whose copy finished before an earlier put's
// is answered only when the earlier one is in the file too. Otherwise a
// kill -9 in between leaves a hole before an acknowledged record, and
// recovery cuts the log at the hole.
func TestPutBehindAnUnfinishedWriteWaits(t *testing.T) {
	cfg := testConfig(t)
	cfg.WriteWithoutMmap = true
	fs := vfs.NewFaultFS(vfs.OS())
	st := openStarted(t, cfg, fs)
	mustPut(t, st, testMsg("V", 0, "first", ""))
	var on, taken atomic.Bool
	blocked, release := make(chan struct{}), make(chan struct{})
	fs.SetHook(func(op vfs.Op, name string) {
		// Only the first CommitLog write after arming is held.
		if on.Load() && op == vfs.OpWrite && strings.HasPrefix(name, cfg.StorePathCommitLog) && taken.CompareAndSwap(false, true) {
			close(blocked)
			<-release
		}
	})
	on.Store(true)
	aCh, bCh := make(chan PutResult, 1), make(chan PutResult, 1)
	go st.PutMessage(testMsg("V", 0, "slow copy", ""), func(r PutResult) { aCh <- r })
	<-blocked // A has its range and is copying it
	st.PutMessage(testMsg("V", 0, "fast copy", ""), func(r PutResult) { bCh <- r })
	var early *PutResult
	select {
	case r := <-bCh:
		early = &r
	default:
	}
	img := filepath.Join(t.TempDir(), "img")
	copyLiveDir(t, cfg.StorePathRootDir, img)
	close(release)
	a := <-aCh
	var b PutResult
	if early != nil {
		b = *early
	} else {
		b = <-bCh
	}
	if a.Status != PutOK || b.Status != PutOK {
		t.Fatalf("answers: %v %q, %v %q", a.Status, a.Remark, b.Status, b.Remark)
	}
	waitDispatched(t, st, "V", 0, 3)
	checkAll(t, st, "V", 0, map[int64]string{0: "first", a.QueueOffset: "slow copy", b.QueueOffset: "fast copy"})
	if err := st.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if early != nil {
		// Acknowledged while the earlier range was a hole: it must survive
		// the process crash the image stands for.
		icfg := cfg
		icfg.StorePathRootDir = img
		icfg.StorePathCommitLog = filepath.Join(img, "commitlog")
		ist := openStarted(t, icfg, vfs.OS())
		defer ist.Shutdown()
		checkPhys(t, ist, map[int64]string{b.WroteOffset: "fast copy"})
	}
}
