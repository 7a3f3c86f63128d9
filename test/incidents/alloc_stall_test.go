package incidents

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/vfs"
)

// slowCreate is the injected delay on creating a CommitLog file (seed 000:
// the allocation service stuck warming the next mapped file).
const slowCreate = 2 * time.Second

// createStaller delays the creation of files in one directory while on.
type createStaller struct {
	dir    string
	on     atomic.Bool
	slowed atomic.Int64
}

func (s *createStaller) hook(op vfs.Op, name string) {
	if op != vfs.OpCreate || !s.on.Load() || filepath.Dir(name) != s.dir || strings.Contains(filepath.Base(name), ".") {
		return
	}
	s.slowed.Add(1)
	time.Sleep(slowCreate)
}

// TestAllocationStall replays seed 000's allocation stall: around a
// CommitLog roll every creation of a new CommitLog file takes 2 s longer.
// The writer must never wait for the allocator (files are allocated ahead;
// when none is ready the writer continues into the in-memory spill).
func TestAllocationStall(t *testing.T) {
	var longest, p99Ratio []float64
	runReps(t, func(t *testing.T) {
		l, r := allocationStallOnce(t)
		longest = append(longest, l)
		p99Ratio = append(p99Ratio, r)
	})
	t.Logf("medians over %d run(s): longest put during the stall %.2f ms, send p99 ratio %.2f", prof.reps, median(longest), median(p99Ratio))
	if prof.timed {
		if m := median(longest); m > 10 {
			t.Errorf("longest put during the allocation stall is %.2f ms (median), target <= 10 ms", m)
		}
	}
}

// allocationStallOnce returns the longest put (ms) during the stall and the
// send p99 ratio against the baseline.
func allocationStallOnce(t *testing.T) (float64, float64) {
	const topic, queues = "AllocStallTopic", 8
	const fileSize = 4 << 20
	dir := t.TempDir()
	staller := &createStaller{dir: filepath.Join(dir, "commitlog")}
	fs := vfs.NewFaultFS(vfs.Default)
	fs.SkipRealSync(true) // this scenario is about creation, not durability
	fs.SetHook(staller.hook)
	r := startRig(t, rigOptions{fs: fs, dir: dir, store: func(c *store.Config) {
		c.MappedFileSizeCommitLog = fileSize
	}})
	r.createTopic(topic, queues)
	load := sendLoad{Addr: r.addr(), Topic: topic, Queues: queues, Conns: 8, Inflight: 1, Size: 1024, Rate: prof.allocRate}

	ctx, cancel := context.WithTimeout(context.Background(), prof.allocBaseline)
	base := runSends(ctx, load, prof.allocBaseline+5*time.Second)
	cancel()
	s0 := r.st.Stats()
	staller.on.Store(true)
	ctx, cancel = context.WithTimeout(context.Background(), prof.allocWindow)
	stall := runSends(ctx, load, prof.allocWindow+5*time.Second)
	cancel()
	staller.on.Store(false)
	s1 := r.st.Stats()
	during := s1.Put.Sub(s0.Put)
	baseLongest := s0.Put.Max

	rolls := (s1.CommitLogMax / fileSize) - (s0.CommitLogMax / fileSize)
	t.Logf("baseline %s", base.describe())
	t.Logf("stall    %s", stall.describe())
	t.Logf("store: rolls during the stall %d, slowed creations %d, files created %d -> %d, file create max %v, ready files now %d",
		rolls, staller.slowed.Load(), s0.FilesCreated, s1.FilesCreated, s1.FileCreate.Max, s1.ReadyFiles)
	t.Logf("store: spills %d, spill writes %d, spill full %d, put waited on create %d, alloc failures %d",
		s1.Spills, s1.SpillWrites, s1.SpillFull, s1.PutWaitedOnCreate, s1.AllocFailures)
	t.Logf("store: longest put baseline %v, during the stall %v (bucket bound), put lock hold max %v",
		baseLongest, during.Max, s1.PutLockHold.Max)
	p99 := ratio(stall.OKLat.P99, base.OKLat.P99)
	t.Logf("send p99 %dus -> %dus (x%.2f); client max %dus -> %dus", base.OKLat.P99, stall.OKLat.P99, p99, base.Lat.Max, stall.Lat.Max)

	storeInvariants(t, s1)
	answerInvariants(t, "baseline", base)
	answerInvariants(t, "stall", stall)
	if rolls < 1 {
		t.Errorf("no CommitLog roll happened during the stall window (offset %d -> %d, file size %d)", s0.CommitLogMax, s1.CommitLogMax, fileSize)
	}
	if staller.slowed.Load() < 1 {
		t.Errorf("no CommitLog file creation was slowed: the scenario did not exercise the allocator")
	}
	if got, want := r.stored(topic, queues), base.OK+stall.OK; got != want {
		t.Errorf("nothing lost: consume queues hold %d messages, %d sends were answered OK", got, want)
	}
	return float64(during.Max) / float64(time.Millisecond), p99
}
