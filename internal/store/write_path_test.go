package store

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

// writePaths are the configurations of the three write paths.
var writePaths = []struct {
	name string
	set  func(*Config)
}{
	{"mmap", func(c *Config) { c.WriteWithoutMmap = false }},
	{"pwrite", func(c *Config) { c.WriteWithoutMmap = true }},
	{"transient", func(c *Config) { c.TransientStorePoolEnable = true; c.CommitIntervalCommitLog = 5 }},
}

// TestWritePaths runs concurrent puts of mixed sizes (small inline copies,
// large out-of-lock copies, batches) on every write path, with a restart
// and a crash in between, and reads everything back.
func TestWritePaths(t *testing.T) {
	for _, wp := range writePaths {
		t.Run(wp.name, func(t *testing.T) {
			cfg := testConfig(t)
			wp.set(&cfg)
			if cfg.TransientStorePoolEnable {
				cfg.FlushDiskType = AsyncFlush
			} else {
				cfg.FlushDiskType = SyncFlush
			}
			st := openStarted(t, cfg, vfs.OS())
			var mu sync.Mutex
			want := map[int32]map[int64]string{}
			put := func(g int, i int) {
				size := 10 + (i*37)%200
				if i%50 == 7 {
					size = 20 << 10 // out-of-lock copy
				}
				body := fmt.Sprintf("%d-%d-%s", g, i, strings.Repeat("b", size))
				r := mustPut(t, st, testMsg("WP", int32(g%3), body, "t"))
				mu.Lock()
				if want[int32(g%3)] == nil {
					want[int32(g%3)] = map[int64]string{}
				}
				want[int32(g%3)][r.QueueOffset] = body
				mu.Unlock()
			}
			var wg sync.WaitGroup
			for g := 0; g < 6; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 150; i++ {
						put(g, i)
					}
				}()
			}
			wg.Wait()
			for q := int32(0); q < 3; q++ {
				waitDispatched(t, st, "WP", q, int64(len(want[q])))
				checkAll(t, st, "WP", q, want[q])
			}
			if err := st.Shutdown(); err != nil {
				t.Fatal(err)
			}
			st = openStarted(t, cfg, vfs.OS())
			for i := 0; i < 100; i++ {
				put(rand.IntN(6), i)
			}
			if !cfg.TransientStorePoolEnable {
				// SYNC acknowledgements survive a kill.
				crash(st)
				st = openStarted(t, cfg, vfs.OS())
			}
			for q := int32(0); q < 3; q++ {
				var top int64
				for qo := range want[q] {
					top = max(top, qo+1)
				}
				waitDispatched(t, st, "WP", q, top)
				checkAll(t, st, "WP", q, want[q])
			}
			if err := st.Shutdown(); err != nil {
				t.Fatal(err)
			}
		})
	}
	_ = message.PropertyKeys
}
