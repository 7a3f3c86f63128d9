package store

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

const allocKillChildEnv = "SPOOL_STORE_ALLOC_KILL_CHILD"

// allocKillConfig is a small ASYNC_FLUSH store whose spill holds a few
// dozen records.
func allocKillConfig(dir string) Config {
	cfg := killConfig(dir)
	cfg.FlushDiskType = AsyncFlush
	cfg.FlushIntervalCommitLog = 10
	cfg.PreallocateFiles = 1
	cfg.WriteSpillSize = 8 << 10
	cfg.CleanResourceInterval = 3600 * 1000
	return cfg
}

// TestAllocStateKillChild is the child side of TestKill9AtEachAllocatorState:
// it puts without waiting (64 puts in flight), prints every PUT_OK, puts the
// allocator into the state named by SPOOL_ALLOC_STATE once the store runs,
// and prints DONE after 200 refusals, then waits to be killed.
func TestAllocStateKillChild(t *testing.T) {
	if os.Getenv(allocKillChildEnv) == "" {
		t.Skip("child process of TestKill9AtEachAllocatorState")
	}
	fs := vfs.NewFaultFS(vfs.OS())
	cfg := allocKillConfig(os.Getenv("SPOOL_STORE_DIR"))
	st, err := Open(cfg, fs, nil)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	if err := st.Start(); err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	switch os.Getenv("SPOOL_ALLOC_STATE") {
	case "failed":
		fs.SetENOSPCOn(cfg.StorePathCommitLog, false, true) // CommitLog file creation only
	case "slow":
		fs.SetLatency(vfs.OpCreate, time.Hour)
	}
	var outMu sync.Mutex
	sem := make(chan struct{}, 64)
	var refused atomic.Int64
	for i := 0; ; i++ {
		sem <- struct{}{}
		body := fmt.Sprintf("a%d-%s", i, strings.Repeat("x", i%200))
		st.PutMessage(testMsg("AK", 0, body, ""), func(r PutResult) {
			<-sem
			outMu.Lock()
			defer outMu.Unlock()
			if r.Status == PutOK {
				fmt.Printf("ACK %d %d %s\n", r.QueueOffset, r.WroteOffset, body)
				return
			}
			if refused.Add(1) == 200 {
				fmt.Println("DONE", r.Status, r.Remark)
			}
		})
		if refused.Load() >= 200 {
			select {} // hold until killed
		}
	}
}

// TestKill9AtEachAllocatorState kills an ASYNC_FLUSH store (SIGKILL) while
// the next CommitLog file is ready, while its creation hangs and while its
// creation fails with ENOSPC, and checks that every put answered PUT_OK is
// readable after the restart.
func TestKill9AtEachAllocatorState(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	if os.Getenv(allocKillChildEnv) != "" {
		t.Skip("in the child")
	}
	for _, state := range []string{"ready", "slow", "failed"} {
		t.Run(state, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestAllocStateKillChild$", "-test.v=false")
			cmd.Env = append(os.Environ(), allocKillChildEnv+"=1", "SPOOL_STORE_DIR="+dir, "SPOOL_ALLOC_STATE="+state)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var acks []ack
			sc := bufio.NewScanner(out)
			done := ""
			for sc.Scan() {
				line := sc.Text()
				if strings.HasPrefix(line, "ERR") {
					t.Fatalf("child: %s", line)
				}
				if strings.HasPrefix(line, "DONE") {
					done = line
					break
				}
				var a ack
				if _, err := fmt.Sscanf(line, "ACK %d %d %s", &a.qo, &a.phy, &a.body); err == nil {
					acks = append(acks, a)
				}
				if state == "ready" && len(acks) >= 3000 {
					break // never refused: kill after 3000 acknowledgements
				}
			}
			cmd.Process.Kill() // SIGKILL
			cmd.Wait()
			if state != "ready" && done == "" {
				t.Fatal("the child stopped before it was refused")
			}
			t.Logf("%s: %d acknowledged before the kill; %s", state, len(acks), done)

			st, err := Open(allocKillConfig(dir), vfs.OS(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Start(); err != nil {
				t.Fatalf("restart: %v", err)
			}
			defer st.Shutdown()
			lost := 0
			for _, a := range acks {
				rec, err := st.LookMessageByOffset(a.phy)
				if err != nil {
					lost++
					continue
				}
				ext, err := message.DecodeRecord(rec)
				if err != nil || string(ext.Body) != a.body || ext.QueueOffset != a.qo {
					lost++
				}
			}
			if lost > 0 {
				t.Fatalf("%s: %d of %d acknowledged puts lost by kill -9 (CommitLog files: %v)", state, lost, len(acks), commitLogFiles(dir))
			}
		})
	}
}

func commitLogFiles(dir string) []string {
	names, _ := filepath.Glob(filepath.Join(dir, "commitlog", "*"))
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	return names
}
