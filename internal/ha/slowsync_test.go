package ha

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/internal/vfs"
)

// The HA stream reads the CommitLog without any lock a flush holds and
// never waits for an fsync: with the master's CommitLog fsync hung, the
// slave still copies and acknowledges everything written, and a
// SYNC_MASTER wait still answers PUT_OK.
func TestReplicationIsImmuneToAHungFsync(t *testing.T) {
	inj := vfs.NewInjector(vfs.OS())
	release := make(chan struct{})
	var once sync.Once
	var armed atomic.Bool
	hung := make(chan struct{})
	inj.SetHook(func(op vfs.Op, name string) {
		if armed.Load() && op == vfs.OpSync && strings.Contains(name, "commitlog") {
			once.Do(func() { close(hung) })
			<-release
		}
	})
	// 16 MiB files with one made ahead: once that one exists, the only
	// CommitLog syncs left for the data below are the flusher's.
	mdir := t.TempDir()
	ms := openStoreAt(t, testkit.StoreConfig(mdir, testkit.Medium), inj)
	ss := openStoreAt(t, testkit.StoreConfig(t.TempDir(), testkit.Medium), vfs.OS())
	defer close(release) // before the stores shut down (cleanups run later)
	eventually(t, "the preallocated CommitLog file", func() bool {
		names, _ := os.ReadDir(filepath.Join(mdir, "commitlog"))
		return len(names) >= 2
	})
	armed.Store(true)
	m, addr := startMaster(t, MasterConfig{Log: ms.log, Admit: admitAll})
	startSlave(t, SlaveConfig{Log: ss.log, MasterAddr: addr})

	fill(t, ms.st, 200) // enough unflushed pages for the flusher to sync
	<-hung              // the flusher is now stuck in an fsync
	end := fill(t, ms.st, 300)
	m.Notify()
	eventually(t, "the slave to acknowledge the end while the fsync hangs", func() bool { return ackOf(m) == end })
	res := make(chan Outcome, 1)
	m.WaitReplicated(end, func(o Outcome) { res <- o })
	if o := <-res; o != ReplicaOK {
		t.Fatalf("wait answered %v while an fsync hangs, want PUT_OK", o)
	}
	select {
	case <-release:
		t.Fatal("the fsync was released early")
	default:
	}
	if ms.st.Stats().CommitLogFlushed >= end {
		t.Fatalf("the master flushed to %d: the fsync did not hang", ms.st.Stats().CommitLogFlushed)
	}
}
