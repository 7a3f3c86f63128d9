package ha

import (
	"fmt"
	"testing"

	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/internal/vfs"
)

// BenchmarkCatchUp measures a new slave catching up with a master that
// holds 64 MiB (4 KiB messages, 64 MiB CommitLog files) on loopback; the
// figure is MB/s of CommitLog copied from the master's pread to the
// slave's acknowledgement (the slave's dispatch runs alongside, not
// waited for; opening the slave's store is not timed).
func BenchmarkCatchUp(b *testing.B) {
	for _, batch := range []int{DefaultTransferBatchSize, 256 << 10} {
		b.Run(fmt.Sprintf("batch=%dKiB", batch>>10), func(b *testing.B) {
			ms := openStoreAt(b, testkit.StoreConfig(b.TempDir(), testkit.Large), vfs.OS())
			body := make([]byte, 4000)
			var end int64
			for end < 64<<20 {
				end = put(b, ms.st, testMsg("T", int32(end%4), body))
			}
			m, addr := startMaster(b, MasterConfig{Log: ms.log, Admit: admitAll, TransferBatchSize: batch})
			b.SetBytes(end)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ss := openStoreAt(b, testkit.StoreConfig(b.TempDir(), testkit.Large), vfs.OS())
				b.StartTimer()
				s := NewSlave(SlaveConfig{Log: ss.log, MasterAddr: addr, Logger: quietLogger()})
				s.Start()
				eventually(b, "the catch-up", func() bool { return ackOf(m) == end })
				b.StopTimer()
				s.Close()
				eventually(b, "the connection to close", func() bool { return m.ConnectionCount() == 0 })
				ss.st.Shutdown()
				b.StartTimer()
			}
		})
	}
}
