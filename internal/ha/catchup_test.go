package ha

import (
	"fmt"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/internal/vfs"
)

// A new slave of a master that already holds catchUpBytes of CommitLog
// (64 MiB; 2 GiB with the soak build tag) over 64 MiB files catches up:
// it acknowledges the master's end, holds the same bytes, and its consume
// queues, built by its own dispatcher from the replicated bytes, equal
// the master's file for file.
func TestNewSlaveCatchesUpAndItsQueuesEqualTheMasters(t *testing.T) {
	ms := openStoreAt(t, testkit.StoreConfig(t.TempDir(), testkit.Large), vfs.OS())
	ss := openStoreAt(t, testkit.StoreConfig(t.TempDir(), testkit.Large), vfs.OS())
	const topics, queues = 2, 4
	body := make([]byte, 4096)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	var end int64
	for i := 0; end < catchUpBytes; i++ {
		// Sizes from 64 B to 4 KiB, so that consume-queue entries are
		// many and records end anywhere in a file.
		size := 64 + (i*977)%(len(body)-64)
		end = put(t, ms.st, testMsg(fmt.Sprintf("CatchUp%d", i%topics), int32((i/topics)%queues), body[:size]))
	}
	m, addr := startMaster(t, MasterConfig{Log: ms.log, Admit: admitAll})
	start := time.Now()
	startSlave(t, SlaveConfig{Log: ss.log, MasterAddr: addr})
	waitLong(t, "the new slave to acknowledge the master's end", func() bool { return ackOf(m) == end })
	t.Logf("a new slave copied %d MiB in %v", end>>20, time.Since(start).Round(time.Millisecond))
	sameLogs(t, ms.log, ss.log)
	waitLong(t, "the slave's dispatch", func() bool { return ss.st.DispatchBehindBytes() == 0 })
	waitLong(t, "the master's dispatch", func() bool { return ms.st.DispatchBehindBytes() == 0 })
	n := int64(0)
	for tp := 0; tp < topics; tp++ {
		topic := fmt.Sprintf("CatchUp%d", tp)
		for q := int32(0); q < queues; q++ {
			want, got := ms.st.MaxOffsetInQueue(topic, q), ss.st.MaxOffsetInQueue(topic, q)
			if got != want || want == 0 {
				t.Fatalf("%s/%d: the slave's queue ends at %d, the master's at %d", topic, q, got, want)
			}
			n += want
		}
	}
	t.Logf("%d consume-queue entries in %d queues", n, topics*queues)
	ms.st.Shutdown()
	ss.st.Shutdown()
	sameQueues(t, ms.dir, ss.dir)
}

// waitLong is eventually with room for a 2 GiB catch-up under load.
func waitLong(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
