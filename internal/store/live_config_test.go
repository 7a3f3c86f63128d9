package store

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/vfs"
)

const hour = 3600 * 1000 // ms

// setLive changes live keys through UpdateConfig, as the broker does.
func setLive(t *testing.T, st *DefaultMessageStore, change func(c *Config)) {
	t.Helper()
	c := st.Config()
	change(&c)
	if err := st.UpdateConfig(c); err != nil {
		t.Fatalf("UpdateConfig: %v", err)
	}
}

// eventually fails the test when cond does not hold within 10 s. It is a
// bound on a failing run, not a timing assertion.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen", what)
		}
		<-tick.C
	}
}

// putEnd puts one message and returns the CommitLog offset after it.
func putEnd(t *testing.T, st *DefaultMessageStore, body string) int64 {
	t.Helper()
	r := mustPut(t, st, testMsg("LIVE", 0, body, ""))
	return r.WroteOffset + int64(r.WroteBytes)
}

// flushCase starts an ASYNC_FLUSH store whose flusher would not flush a
// small put for an hour, applies change, puts, and waits for the flush.
func flushCase(cfgChange, change func(c *Config)) func(t *testing.T) {
	return func(t *testing.T) {
		cfg := testConfig(t)
		cfg.FlushIntervalCommitLog = hour
		cfg.FlushCommitLogLeastPages = 0
		cfg.FlushCommitLogThoroughInterval = hour
		cfg.FlushCommitLogTimed = true
		cfgChange(&cfg)
		st := openStarted(t, cfg, nil)
		defer st.Shutdown()
		setLive(t, st, change)
		end := putEnd(t, st, "flush me")
		eventually(t, "flush after the change", func() bool { return st.commitLog.flushedWhere.Load() >= end })
	}
}

// commitCase is flushCase for the transient pool's committer: a put
// becomes visible (readable) only when it is committed.
func commitCase(cfgChange, change func(c *Config)) func(t *testing.T) {
	return func(t *testing.T) {
		cfg := testConfig(t)
		cfg.TransientStorePoolEnable = true
		cfg.CommitIntervalCommitLog = hour
		cfg.CommitCommitLogLeastPages = 0
		cfg.CommitCommitLogThoroughInterval = hour
		cfgChange(&cfg)
		st := openStarted(t, cfg, nil)
		defer st.Shutdown()
		setLive(t, st, change)
		end := putEnd(t, st, "commit me")
		eventually(t, "commit after the change", func() bool { return st.commitLog.visible.Load() >= end })
	}
}

// getCount puts n messages and returns how many one GetMessage of 32
// returns.
func getCount(t *testing.T, st *DefaultMessageStore) int {
	t.Helper()
	r := st.GetMessage("g", "GET", 0, 0, 32, 0, nil)
	defer r.Release()
	if r.Status != Found {
		t.Fatalf("get: %v", r.Status)
	}
	return len(r.Buffers)
}

// transferCase puts 20 messages, checks a pull of 32 returns before, then
// applies change and checks it returns after.
func transferCase(before, after int, change func(c *Config)) func(t *testing.T) {
	return func(t *testing.T) {
		st := openStarted(t, testConfig(t), nil)
		defer st.Shutdown()
		var last PutResult
		for i := 0; i < 20; i++ {
			last = mustPut(t, st, testMsg("GET", 0, fmt.Sprint("m", i), ""))
		}
		waitDispatched(t, st, "GET", 0, last.QueueOffset+1)
		if got := getCount(t, st); got != before {
			t.Fatalf("before the change: %d messages, want %d", got, before)
		}
		setLive(t, st, change)
		if got := getCount(t, st); got != after {
			t.Fatalf("after the change: %d messages, want %d", got, after)
		}
	}
}

// retentionEnv is a store with several CommitLog files written at 10:00 on
// day 1, a settable clock and disk usage; the test drives cleanOnce.
type retentionEnv struct {
	st    *DefaultMessageStore
	fs    *vfs.FaultFS
	clock *clock.Manual
	files int
}

func newRetentionEnv(t *testing.T, change func(c *Config)) *retentionEnv {
	cfg := testConfig(t)
	cfg.FlushDiskType = SyncFlush
	cfg.CleanResourceInterval = 1 << 30
	change(&cfg)
	fs := vfs.NewFaultFS(vfs.OS())
	fs.SkipRealSync(true)
	clk := clock.NewManual(time.Date(2026, 1, 1, 10, 0, 0, 0, time.Local))
	fs.SetClock(clk)
	fs.SetUsage(0.5)
	st := openStarted(t, cfg, fs)
	t.Cleanup(func() { st.Shutdown() })
	var last PutResult
	for i := 0; i < 1200; i++ {
		last = mustPut(t, st, testMsg("RT", 0, fmt.Sprint("r", i, strings.Repeat("-", 200)), ""))
	}
	waitDispatched(t, st, "RT", 0, last.QueueOffset+1)
	e := &retentionEnv{st: st, fs: fs, clock: clk, files: st.commitLog.mfq.count()}
	if e.files < 4 {
		t.Fatalf("only %d files", e.files)
	}
	return e
}

// deletedBy runs a cleaning pass and returns how many CommitLog files went.
func (e *retentionEnv) deletedBy() int {
	before := e.st.commitLog.mfq.count()
	e.st.cleanOnce()
	return before - e.st.commitLog.mfq.count()
}

// retentionCase checks a cleaning pass deletes nothing before change and
// some files after it.
func retentionCase(cfgChange func(c *Config), setup func(e *retentionEnv), change func(c *Config)) func(t *testing.T) {
	return func(t *testing.T) {
		e := newRetentionEnv(t, cfgChange)
		setup(e)
		if n := e.deletedBy(); n != 0 {
			t.Fatalf("deleted %d files before the change", n)
		}
		setLive(t, e.st, change)
		if n := e.deletedBy(); n == 0 {
			t.Fatal("no file deleted after the change")
		}
	}
}

func at(day, h int) time.Time { return time.Date(2026, 1, day, h, 30, 0, 0, time.Local) }

// liveKeyTests has one test per live store key; each observes the key's
// effect on the running store after UpdateConfig. defaultQueryMaxNum is
// read by the broker and tested there (TestUpdateBrokerConfigStoreKeys).
var liveKeyTests = map[string]func(t *testing.T){
	"maxMessageSize": func(t *testing.T) {
		st := openStarted(t, testConfig(t), nil)
		defer st.Shutdown()
		body := strings.Repeat("x", 200)
		mustPut(t, st, testMsg("T", 0, body, ""))
		setLive(t, st, func(c *Config) { c.MaxMessageSize = 100 })
		if r := putSync(t, st, testMsg("T", 0, body, "")); r.Status != MessageIllegal || !strings.Contains(r.Remark, "maxMessageSize is 100") {
			t.Fatalf("put over the new limit: %v %q", r.Status, r.Remark)
		}
	},
	"osPageCacheBusyTimeOutMills": func(t *testing.T) {
		st := openStarted(t, testConfig(t), nil)
		defer st.Shutdown()
		c := st.commitLog
		c.lockBeginNs.Store(c.monoNs() - int64(2*time.Second)) // the put lock "held" for 2 s
		defer c.lockBeginNs.Store(0)
		if s, _ := st.writable(); s != OSPageCacheBusy {
			t.Fatalf("2 s over the 1000 ms default: %v", s)
		}
		setLive(t, st, func(c *Config) { c.OSPageCacheBusyTimeOutMills = 60000 })
		if s, r := st.writable(); s != PutOK {
			t.Fatalf("2 s under a 60 s limit: %v %q", s, r)
		}
	},
	"syncFlushTimeout": func(t *testing.T) {
		cfg := testConfig(t)
		cfg.FlushDiskType = SyncFlush
		fs := vfs.NewFaultFS(vfs.OS())
		var block atomic.Bool
		release := make(chan struct{})
		fs.SetHook(func(op vfs.Op, name string) {
			if op == vfs.OpSync && block.Load() && strings.Contains(name, "commitlog") {
				<-release
			}
		})
		st := openStarted(t, cfg, fs)
		defer st.Shutdown()
		defer close(release)
		mustPut(t, st, testMsg("T", 0, "flushed", ""))
		setLive(t, st, func(c *Config) { c.SyncFlushTimeout = 1 })
		block.Store(true) // every CommitLog fsync now hangs
		if r := putSync(t, st, testMsg("T", 0, "times out", "")); r.Status != FlushDiskTimeout || !strings.Contains(r.Remark, "syncFlushTimeout=1ms") {
			t.Fatalf("put with a hung fsync: %v %q", r.Status, r.Remark)
		}
	},
	"flushIntervalCommitLog": flushCase(func(c *Config) {}, func(c *Config) { c.FlushIntervalCommitLog = 1 }),
	"flushCommitLogLeastPages": flushCase(func(c *Config) {
		c.FlushIntervalCommitLog = 1
		c.FlushCommitLogLeastPages = 1 << 20
	}, func(c *Config) { c.FlushCommitLogLeastPages = 0 }),
	"flushCommitLogThoroughInterval": flushCase(func(c *Config) {
		c.FlushIntervalCommitLog = 1
		c.FlushCommitLogLeastPages = 1 << 20
	}, func(c *Config) { c.FlushCommitLogThoroughInterval = 0 }),
	"flushCommitLogTimed": flushCase(func(c *Config) {}, func(c *Config) { c.FlushCommitLogTimed = false }),
	"flushIntervalConsumeQueue": func(t *testing.T) {
		cfg := testConfig(t)
		cfg.FlushIntervalConsumeQueue = hour
		st, written := openSignallingCheckpoints(t, cfg, nil)
		defer st.Shutdown()
		select { // a checkpoint written by the start-up itself
		case <-written:
		default:
		}
		setLive(t, st, func(c *Config) { c.FlushIntervalConsumeQueue = 10 })
		select {
		case <-written:
		case <-time.After(10 * time.Second):
			t.Fatal("no checkpoint after flushIntervalConsumeQueue went from 1 h to 10 ms")
		}
	},
	"flushConsumeQueueLeastPages":       cqSyncCase(func(c *Config) { c.FlushConsumeQueueLeastPages = 0 }),
	"flushConsumeQueueThoroughInterval": cqSyncCase(func(c *Config) { c.FlushConsumeQueueThoroughInterval = 0 }),
	"commitIntervalCommitLog":           commitCase(func(c *Config) {}, func(c *Config) { c.CommitIntervalCommitLog = 1 }),
	"commitCommitLogLeastPages": commitCase(func(c *Config) {
		c.CommitIntervalCommitLog = 1
		c.CommitCommitLogLeastPages = 1 << 20
	}, func(c *Config) { c.CommitCommitLogLeastPages = 0 }),
	"commitCommitLogThoroughInterval": commitCase(func(c *Config) {
		c.CommitIntervalCommitLog = 1
		c.CommitCommitLogLeastPages = 1 << 20
	}, func(c *Config) { c.CommitCommitLogThoroughInterval = 0 }),
	"maxTransferCountOnMessageInMemory": transferCase(20, 3, func(c *Config) { c.MaxTransferCountOnMessageInMemory = 3 }),
	"maxTransferBytesOnMessageInMemory": transferCase(20, 1, func(c *Config) { c.MaxTransferBytesOnMessageInMemory = 1 }),
	// With no in-memory window every message counts as on disk (8 at most).
	"accessMessageInMemoryMaxRatio": transferCase(20, 8, func(c *Config) { c.AccessMessageInMemoryMaxRatio = 0 }),
	"maxTransferCountOnMessageInDisk": transferCase(20, 2, func(c *Config) {
		c.AccessMessageInMemoryMaxRatio = 0
		c.MaxTransferCountOnMessageInDisk = 2
	}),
	"maxTransferBytesOnMessageInDisk": transferCase(20, 1, func(c *Config) {
		c.AccessMessageInMemoryMaxRatio = 0
		c.MaxTransferBytesOnMessageInDisk = 1
	}),
	// Files from day 1, 10:00; the deleteWhen hour (04) of day 3: 44 h old.
	"fileReservedTime": retentionCase(func(c *Config) { c.FileReservedTime = 72 },
		func(e *retentionEnv) { e.clock.Set(at(3, 4)) },
		func(c *Config) { c.FileReservedTime = 1 }),
	"deleteWhen": retentionCase(func(c *Config) { c.FileReservedTime = 1 },
		func(e *retentionEnv) { e.clock.Set(at(2, 12)) },
		func(c *Config) { c.DeleteWhen = "04;12" }),
	"diskMaxUsedSpaceRatio": retentionCase(func(c *Config) { c.FileReservedTime = 1 },
		func(e *retentionEnv) { e.clock.Set(at(2, 12)); e.fs.SetUsage(0.5) },
		func(c *Config) { c.DiskMaxUsedSpaceRatio = 40 }),
	// Unexpired files at 80 % used: only forced cleaning takes them.
	"diskSpaceCleanForciblyRatio": retentionCase(func(c *Config) {},
		func(e *retentionEnv) { e.fs.SetUsage(0.8) },
		func(c *Config) { c.DiskSpaceCleanForciblyRatio = 70 }),
	"cleanFileForciblyEnable": retentionCase(func(c *Config) { c.CleanFileForciblyEnable = false },
		func(e *retentionEnv) { e.fs.SetUsage(0.88) },
		func(c *Config) { c.CleanFileForciblyEnable = true }),
	"deleteFileBatchMax": func(t *testing.T) {
		e := newRetentionEnv(t, func(c *Config) { c.DeleteFileBatchMax = 1 })
		e.fs.SetUsage(0.88) // forced: every file but the current one may go
		if n := e.deletedBy(); n != 1 {
			t.Fatalf("deleteFileBatchMax=1 deleted %d files in a pass", n)
		}
		setLive(t, e.st, func(c *Config) { c.DeleteFileBatchMax = 2 })
		if n := e.deletedBy(); n != 2 {
			t.Fatalf("deleteFileBatchMax=2 deleted %d files in a pass", n)
		}
	},
	"diskSpaceWarningLevelRatio": func(t *testing.T) {
		e := newRetentionEnv(t, func(c *Config) {})
		e.st.cleanOnce()
		mustPut(t, e.st, testMsg("RT", 0, "at 50 %", ""))
		setLive(t, e.st, func(c *Config) { c.DiskSpaceWarningLevelRatio = 40 })
		e.st.cleanOnce()
		if r := putSync(t, e.st, testMsg("RT", 0, "refused", "")); r.Status != ServiceNotAvailable || !strings.Contains(r.Remark, "diskSpaceWarningLevelRatio=40%") {
			t.Fatalf("put above the new warning level: %v %q", r.Status, r.Remark)
		}
	},
	"destroyMapedFileIntervalForcibly": func(t *testing.T) {
		e := newRetentionEnv(t, func(c *Config) { c.DestroyMapedFileIntervalForcibly = hour })
		held := e.st.commitLog.mfq.find(0) // a reader of the first file
		if held == nil {
			t.Fatal("no first file")
		}
		defer held.release()
		e.fs.SetUsage(0.88)
		e.st.cleanOnce()
		doomed := func() int {
			e.st.doomedMu.Lock()
			defer e.st.doomedMu.Unlock()
			return len(e.st.doomed)
		}
		// Another file may wait too, held for a moment by a background
		// reader (the dispatcher, the flusher) when the pass ran.
		waits := func() bool {
			e.st.doomedMu.Lock()
			defer e.st.doomedMu.Unlock()
			return slices.Contains(e.st.doomed, held)
		}
		if !waits() {
			t.Fatalf("a held file should wait for its reader: %d waiting, not it", doomed())
		}
		setLive(t, e.st, func(c *Config) { c.DestroyMapedFileIntervalForcibly = 0 })
		e.st.cleanOnce()
		if doomed() != 0 {
			t.Fatalf("forced destruction did not happen: %d waiting", doomed())
		}
	},
}

func TestLiveKeys(t *testing.T) {
	for _, key := range liveKeys() {
		if key == "defaultQueryMaxNum" {
			continue // read by the broker: tested there
		}
		test, ok := liveKeyTests[key]
		if !ok {
			t.Errorf("live key %s has no test in liveKeyTests", key)
			continue
		}
		t.Run(key, test)
	}
	for key := range liveKeyTests {
		if !contains(liveKeys(), key) {
			t.Errorf("liveKeyTests has %s, which is not a live key", key)
		}
	}
}

func liveKeys() []string {
	var out []string
	t := reflect.TypeOf(Config{})
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.Tag.Get("live") == "true" {
			out = append(out, f.Tag.Get("prop"))
		}
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestUpdateConfigRefusesFixedKeys(t *testing.T) {
	st := openStarted(t, testConfig(t), nil)
	defer st.Shutdown()
	c := st.Config()
	c.MappedFileSizeCommitLog *= 2
	c.FlushDiskType = SyncFlush
	c.FlushIntervalCommitLog = 7 // live, but the update is all or nothing
	err := st.UpdateConfig(c)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "mappedFileSizeCommitLog, flushDiskType") {
		t.Fatalf("err = %v", err)
	}
	if st.Config().FlushIntervalCommitLog == 7 {
		t.Fatal("a refused update changed a live key")
	}
	c = st.Config()
	c.MaxMessageSize = 0
	if err := st.UpdateConfig(c); !errors.Is(err, ErrConfig) {
		t.Fatalf("maxMessageSize=0: %v", err)
	}
}

// TestLiveKeysReadThroughLive keeps the live keys live: a read of one
// through the start-up copy (x.cfg.Key) would never see a change.
func TestLiveKeysReadThroughLive(t *testing.T) {
	live := map[string]bool{}
	rt := reflect.TypeOf(Config{})
	for i := 0; i < rt.NumField(); i++ {
		if f := rt.Field(i); f.Tag.Get("live") == "true" {
			live[f.Name] = true
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || !live[sel.Sel.Name] {
				return true
			}
			if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "cfg" {
				t.Errorf("%s: live key %s read through .cfg; use live()", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}

// cqSyncCase: with flushConsumeQueueLeastPages far above what one entry
// fills and an hour between thorough flushes, a queue's single entry is
// not synced at the interval's flushes, so the checkpoint does not claim
// it as dispatched; after change it is synced and claimed.
func cqSyncCase(change func(c *Config)) func(t *testing.T) {
	return func(t *testing.T) {
		cfg := testConfig(t)
		cfg.FlushIntervalConsumeQueue = 10
		cfg.FlushConsumeQueueLeastPages = 1 << 20
		cfg.FlushConsumeQueueThoroughInterval = hour
		st, written := openSignallingCheckpoints(t, cfg, nil)
		defer st.Shutdown()
		r := mustPut(t, st, testMsg("L", 0, "x", ""))
		waitDispatched(t, st, "L", 0, 1)
		claimed := func() int64 {
			t.Helper()
			cp, ok, err := readCheckpoint(st.fs, st.cfg.checkpointPath())
			if err != nil || !ok {
				t.Fatalf("checkpoint: %v (present %v)", err, ok)
			}
			return cp.LogicsDispatchedOffset
		}
		waitCheckpoint := func() {
			t.Helper()
			select {
			case <-written:
			case <-time.After(10 * time.Second):
				t.Fatal("no checkpoint within 10 s at a 10 ms interval")
			}
		}
		for range 3 { // the one in progress, then two that began after dispatch
			waitCheckpoint()
		}
		if got := claimed(); got > r.WroteOffset {
			t.Fatalf("checkpoint claims %d as dispatched, past the unsynced entry of the record at %d", got, r.WroteOffset)
		}
		setLive(t, st, change)
		deadline := time.Now().Add(10 * time.Second)
		for claimed() <= r.WroteOffset {
			if time.Now().After(deadline) {
				t.Fatalf("the entry of the record at %d is still not claimed (checkpoint at %d)", r.WroteOffset, claimed())
			}
			waitCheckpoint()
		}
	}
}

// openSignallingCheckpoints starts a store (on fs; nil: the OS) whose every written checkpoint
// leaves a token on the returned channel (one at most waiting).
func openSignallingCheckpoints(t *testing.T, cfg Config, fs vfs.FS) (*DefaultMessageStore, <-chan struct{}) {
	t.Helper()
	st, err := Open(cfg, fs, nil)
	if err != nil {
		t.Fatal(err)
	}
	written := make(chan struct{}, 1)
	st.Failpoint = func(name string) {
		if name == "checkpoint-written" {
			select {
			case written <- struct{}{}:
			default:
			}
		}
	}
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	return st, written
}
