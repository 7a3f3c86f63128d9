package store

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

const killChildEnv = "SPOOL_STORE_KILL_CHILD"

func killConfig(dir string) Config {
	cfg := DefaultConfig()
	cfg.StorePathRootDir = dir
	cfg.StorePathCommitLog = filepath.Join(dir, "commitlog")
	cfg.MappedFileSizeCommitLog = 32 << 10
	cfg.MappedFileSizeConsumeQueue = 64 * CQEntrySize
	cfg.FlushDiskType = SyncFlush
	cfg.FlushIntervalConsumeQueue = 5
	cfg.MaxHashSlotNum = 1000
	cfg.MaxIndexNum = 4000
	cfg.SyncFlushTimeout = 10000
	return cfg
}

// TestKill9Child is the child side of TestKill9Loop: it appends under
// SYNC_FLUSH and prints every acknowledged put, and stops dead at the
// failpoint named by the environment.
func TestKill9Child(t *testing.T) {
	if os.Getenv(killChildEnv) == "" {
		t.Skip("child process of TestKill9Loop")
	}
	cfg := killConfig(os.Getenv("SPOOL_STORE_DIR"))
	st, err := Open(cfg, vfs.OS(), nil)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	var outMu sync.Mutex
	fpName := os.Getenv("SPOOL_FAILPOINT")
	fpAfter, _ := strconv.Atoi(os.Getenv("SPOOL_FAILPOINT_AFTER"))
	var fpHits atomic.Int64
	st.Failpoint = func(name string) {
		if !strings.HasPrefix(name, fpName) || fpName == "" {
			return
		}
		if fpHits.Add(1) == int64(fpAfter) {
			outMu.Lock()
			fmt.Println("FAILPOINT", name)
			os.Stdout.Sync()
			select {} // hold here until killed (the lock stays held)
		}
	}
	if err := st.Start(); err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	run := os.Getenv("SPOOL_RUN")
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				body := fmt.Sprintf("run%s-g%d-%d-%s", run, g, i, strings.Repeat("p", (i*7)%300))
				m := testMsg("KT", int32(g%2), body, "tag"+strconv.Itoa(g))
				r := putSync(t, st, m)
				if r.Status != PutOK {
					continue
				}
				outMu.Lock()
				fmt.Printf("ACK %d %d %d %s\n", g%2, r.QueueOffset, r.WroteOffset, body)
				outMu.Unlock()
			}
		}()
	}
	wg.Wait()
}

type ack struct {
	qid  int32
	qo   int64
	phy  int64
	body string
}

func TestKill9Loop(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	if os.Getenv(killChildEnv) != "" {
		t.Skip("in the child")
	}
	dir := t.TempDir()
	rnd := rand.New(rand.NewPCG(42, 1))
	var acks []ack
	kinds := []string{"roll", "dispatch", "checkpoint-written", "checkpoint-renamed", ""}
	failpointKills := 0
	for run := 0; run < 24; run++ {
		fp := kinds[run%len(kinds)]
		cmd := exec.Command(os.Args[0], "-test.run=^TestKill9Child$", "-test.v=false")
		cmd.Env = append(os.Environ(), killChildEnv+"=1", "SPOOL_STORE_DIR="+dir, "SPOOL_RUN="+strconv.Itoa(run),
			"SPOOL_FAILPOINT="+fp, "SPOOL_FAILPOINT_AFTER="+strconv.Itoa(1+rnd.IntN(3)))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		limit := 20 + rnd.IntN(300)
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "FAILPOINT") {
				failpointKills++
				break
			}
			if strings.HasPrefix(line, "ERR") {
				t.Fatalf("run %d: child: %s", run, line)
			}
			var a ack
			if _, err := fmt.Sscanf(line, "ACK %d %d %d %s", &a.qid, &a.qo, &a.phy, &a.body); err != nil {
				continue
			}
			acks = append(acks, a)
			if n++; n >= limit {
				break
			}
		}
		cmd.Process.Kill() // SIGKILL
		cmd.Wait()

		st, err := Open(killConfig(dir), vfs.OS(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Start(); err != nil {
			t.Fatalf("run %d (failpoint %q): restart: %v", run, fp, err)
		}
		want := map[int32]map[int64]string{0: {}, 1: {}}
		for _, a := range acks {
			rec, err := st.LookMessageByOffset(a.phy)
			if err != nil {
				t.Fatalf("run %d: acknowledged record at %d: %v", run, a.phy, err)
			}
			ext, err := message.DecodeRecord(rec)
			if err != nil || string(ext.Body) != a.body || ext.QueueOffset != a.qo || ext.QueueID != a.qid {
				t.Fatalf("run %d: record at %d: %v body %q", run, a.phy, err, ext.Body)
			}
			want[a.qid][a.qo] = a.body
		}
		for q := int32(0); q < 2; q++ {
			checkAll(t, st, "KT", q, want[q])
		}
		if err := st.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d kills (%d at failpoints), %d acknowledged puts verified", 24, failpointKills, len(acks))
	if failpointKills < 8 {
		t.Fatalf("only %d kills at failpoints", failpointKills)
	}
}
