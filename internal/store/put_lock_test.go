package store

import (
	"fmt"
	"sync"
	"testing"

	"github.com/spoolmq/spool/internal/vfs"
)

func TestSpinThenParkLockExcludes(t *testing.T) {
	l := newPutLock(false)
	var wg sync.WaitGroup
	n := 0
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				l.Lock()
				n++
				l.Unlock()
			}
		}()
	}
	wg.Wait()
	if n != 16000 {
		t.Fatalf("lost updates: %d", n)
	}
}

func TestPutsWithSpinLock(t *testing.T) {
	cfg := testConfig(t)
	cfg.UseReentrantLockWhenPutMessage = false
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				mustPut(t, st, testMsg("SL", int32(g), fmt.Sprint(i), ""))
			}
		}()
	}
	wg.Wait()
	for g := int32(0); g < 8; g++ {
		waitDispatched(t, st, "SL", g, 100)
	}
	s := st.Stats()
	if s.Puts != 800 || s.PutLockHold.Count != 800 || s.PutTPS == "" {
		t.Fatalf("stats: puts %d lock samples %d tps %q", s.Puts, s.PutLockHold.Count, s.PutTPS)
	}
	var pc int64
	for _, c := range s.PageCacheRT {
		pc += c
	}
	if pc != 800 {
		t.Fatalf("PAGECACHERT counts %d", pc)
	}
}
