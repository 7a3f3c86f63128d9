package store

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/spoolmq/spool/internal/vfs"
)

// putN puts n messages alternating over queues 0 and 1 of topic and
// returns the CommitLog offset of each.
func putN(t *testing.T, st *DefaultMessageStore, topic string, n int, tag string) []int64 {
	t.Helper()
	var offs []int64
	for i := 0; i < n; i++ {
		r := mustPut(t, st, testMsg(topic, int32(i%2), fmt.Sprintf("%s-%d", tag, i), "A"))
		offs = append(offs, r.WroteOffset)
	}
	return offs
}

// checkCut checks the store after a cut at the start of message k of
// putN's sequence: the log ends there and each queue holds its share.
func checkCut(t *testing.T, st *DefaultMessageStore, topic string, cut int64, k int) {
	t.Helper()
	if got := st.MaxPhyOffset(); got != cut {
		t.Fatalf("CommitLog ends at %d, want the cut %d", got, cut)
	}
	waitFor(t, "dispatch up to the cut", func() bool { return st.DispatchedOffset() == cut })
	for q := int32(0); q < 2; q++ {
		want := int64((k + 1 - int(q)) / 2)
		if got := st.MaxOffsetInQueue(topic, q); got != want {
			t.Fatalf("queue %d max %d, want %d", q, got, want)
		}
		r := st.GetMessage("g", topic, q, want, 32, 1<<20, nil)
		if n := r.MessageCount(); n != 0 {
			t.Fatalf("queue %d serves %d messages past the cut", q, n)
		}
		r.Release()
	}
}

func TestTruncateToCutsQueuesAndEpochs(t *testing.T) {
	cfg := testConfig(t)
	st := openStarted(t, cfg, vfs.OS())
	defer func() { st.Shutdown() }()
	offs := putN(t, st, "T", 40, "a")
	waitDispatched(t, st, "T", 1, 20)
	if err := st.Epochs().Append(EpochEntry{1, 0}); err != nil {
		t.Fatal(err)
	}
	if err := st.Epochs().Append(EpochEntry{2, offs[25]}); err != nil {
		t.Fatal(err)
	}
	var hooked int64 = -1
	st.OnTruncate(func(off int64) { hooked = off })
	if _, err := st.TruncateTo(offs[17] + 1); err == nil {
		t.Fatal("a cut inside a record was accepted")
	}
	cut, err := st.TruncateTo(offs[17])
	if err != nil || cut != offs[17] {
		t.Fatalf("TruncateTo: %d %v", cut, err)
	}
	if hooked != cut {
		t.Fatalf("OnTruncate saw %d", hooked)
	}
	checkCut(t, st, "T", cut, 17)
	if es := st.Epochs().Entries(); len(es) != 1 || es[0].Epoch != 1 {
		t.Fatalf("epochs after the cut: %v", es)
	}
	// New puts continue the queues at the cut.
	r := mustPut(t, st, testMsg("T", 1, "after", "A"))
	if r.WroteOffset != cut || r.QueueOffset != 8 {
		t.Fatalf("put after the cut at %d, queue offset %d", r.WroteOffset, r.QueueOffset)
	}
	st.Shutdown()
	st = openStarted(t, cfg, vfs.OS())
	if got := st.MaxOffsetInQueue("T", 1); got != 9 {
		t.Fatalf("after restart queue 1 max %d", got)
	}
}

// TestTruncateCrashNeverResurrects crashes the store (kill -9 and the
// loss of everything not synced) at each step of a truncation and checks
// that the next start, with the handshake run again from the epoch file,
// ends at the cut with the queues cut: the truncated tail never comes
// back (apache/rocketmq#10666), and neither do queue entries past it
// (#7689, #4771).
func TestTruncateCrashNeverResurrects(t *testing.T) {
	type crashAt struct{}
	for _, stage := range []string{"truncate-checkpoint", "truncate-commitlog", "truncate-queues", "truncate-epochs"} {
		t.Run(stage, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.FlushDiskType = SyncFlush
			fs := vfs.NewFaultFS(vfs.OS())
			st, err := Open(cfg, fs, nil)
			if err != nil {
				t.Fatal(err)
			}
			var armed atomic.Bool
			st.Failpoint = func(name string) {
				if name == stage && armed.Load() {
					panic(crashAt{})
				}
			}
			if err := st.Start(); err != nil {
				t.Fatal(err)
			}
			offs := putN(t, st, "T", 40, "a")
			waitDispatched(t, st, "T", 1, 20)
			// This replica wrote epoch 2 from message 25 on; the new
			// master never had epoch 2: its epoch 3 starts at message 25.
			mustEpoch := func(e *EpochFile, es ...EpochEntry) {
				for _, x := range es {
					if err := e.Append(x); err != nil {
						t.Fatal(err)
					}
				}
			}
			mustEpoch(st.Epochs(), EpochEntry{1, 0}, EpochEntry{2, offs[25]})
			master := []EpochEntry{{1, 0}, {3, offs[25]}}
			masterEnd := offs[39] + 4096
			cut, ok := ConsistentPoint(st.Epochs().Entries(), st.MaxPhyOffset(), master, masterEnd)
			if !ok || cut != offs[25] {
				t.Fatalf("consistent point %d %v", cut, ok)
			}
			armed.Store(true)
			func() {
				defer func() {
					if r := recover(); r != nil {
						if _, ok := r.(crashAt); !ok {
							panic(r)
						}
					}
				}()
				st.TruncateTo(cut)
				t.Fatalf("no crash at %s", stage)
			}()
			armed.Store(false)
			crash(st)
			if err := fs.Crash(cfg.StorePathRootDir, vfs.CrashOptions{}); err != nil {
				t.Fatal(err)
			}
			st2 := openStarted(t, cfg, vfs.NewFaultFS(vfs.OS()))
			defer st2.Shutdown()
			local := st2.Epochs().Entries()
			if end := st2.MaxPhyOffset(); end > cut && (len(local) < 2 || local[1] != (EpochEntry{2, offs[25]})) {
				t.Fatalf("the log ends at %d past the cut %d but the epoch file forgot epoch 2: %v", end, cut, local)
			}
			again, ok := ConsistentPoint(local, st2.MaxPhyOffset(), master, masterEnd)
			if !ok || again != cut {
				t.Fatalf("the handshake after the restart finds %d (%v), want %d", again, ok, cut)
			}
			if _, err := st2.TruncateTo(again); err != nil {
				t.Fatal(err)
			}
			checkCut(t, st2, "T", cut, 25)
			if es := st2.Epochs().Entries(); len(es) != 1 {
				t.Fatalf("epochs %v", es)
			}
		})
	}
}
