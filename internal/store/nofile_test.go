package store

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
)

// restartChildEnv names the store directory a re-executed test binary
// restarts under a low descriptor limit (see TestRestartManyConsumeQueueFiles).
const restartChildEnv = "SPOOL_TEST_CQ_RESTART_DIR"

// restartReport is what the child prints for the parent.
type restartReport struct {
	Queues      int   `json:"queues"`
	StartMillis int64 `json:"startMillis"`
	Descriptors DescriptorStats
	Err         string `json:"err"`
}

const (
	manyCQQueuesPer   = 100 // queues per topic
	restartNofile     = 1024
	manyCQTopicPrefix = "C"
)

// manyCQFiles is 100,000, or 10,000 in a race-detector build (ten times
// the descriptor limit still; the race-built child is several times
// slower per file).
var manyCQFiles = map[bool]int{false: 100000, true: 10000}[raceEnabled]

// A store with 100,000 consume-queue files (sparse, one entry each)
// restarts in a process whose descriptor limit is 1,024, every queue is
// loaded with its entry, and the queues stay writable and readable.
func TestRestartManyConsumeQueueFiles(t *testing.T) {
	if dir := os.Getenv(restartChildEnv); dir != "" {
		restartChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("creates 100,000 files")
	}
	cfg := testConfig(t)
	cfg.MappedFileSizeConsumeQueue = DefaultConfig().MappedFileSizeConsumeQueue
	cfg.MessageIndexEnable = false
	st := openStarted(t, cfg, vfs.OS())
	mustPut(t, st, testMsg("T0", 0, "the record every queue points at", ""))
	waitDispatched(t, st, "T0", 0, 1)
	if err := st.Shutdown(); err != nil {
		t.Fatal(err)
	}
	// Every generated queue holds one entry pointing at T0's record (queue
	// offset 0), in a sparse file of the full consume-queue size.
	entry, err := os.ReadFile(filepath.Join(cfg.consumeQueueDir(), "T0", "0", fileName(0)))
	if err != nil {
		t.Fatal(err)
	}
	entry = entry[:CQEntrySize]
	start := time.Now()
	for i := 0; i < manyCQFiles; i++ {
		dir := filepath.Join(cfg.consumeQueueDir(), fmt.Sprintf("%s%d", manyCQTopicPrefix, i/manyCQQueuesPer), fmt.Sprint(i%manyCQQueuesPer))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(filepath.Join(dir, fileName(0)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(entry, 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(cfg.MappedFileSizeConsumeQueue); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	t.Logf("created %d consume-queue files in %v", manyCQFiles, time.Since(start).Round(time.Millisecond))
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRestartManyConsumeQueueFiles$", "-test.v")
	cmd.Env = append(os.Environ(), restartChildEnv+"="+cfgPath)
	out, err := cmd.CombinedOutput()
	var rep restartReport
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "REPORT "); ok {
			if jerr := json.Unmarshal([]byte(rest), &rep); jerr != nil {
				t.Fatalf("child report %q: %v", rest, jerr)
			}
		}
	}
	if err != nil || rep.Err != "" {
		t.Fatalf("child: %v %s; output:\n%s", err, rep.Err, tailOf(string(out)))
	}
	if rep.Queues != manyCQFiles+1 {
		t.Fatalf("child loaded %d queues with their entry, want %d", rep.Queues, manyCQFiles+1)
	}
	d := rep.Descriptors
	if d.NofileSoft != restartNofile || d.OpenFiles < 0 || d.OpenFiles >= restartNofile || d.CQOpenFiles > d.CQFileLimit {
		t.Fatalf("child descriptors: %+v", d)
	}
	t.Logf("restart with %d consume-queue files under RLIMIT_NOFILE=%d: Start took %d ms; descriptors open %d, consume-queue %d (limit %d), opens %d, evictions %d",
		manyCQFiles+1, restartNofile, rep.StartMillis, d.OpenFiles, d.CQOpenFiles, d.CQFileLimit, d.CQFileOpens, d.CQFileEvictions)
}

func tailOf(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}

// restartChild lowers its descriptor limit, restarts the store and
// checks every queue; it prints a REPORT line and exits.
func restartChild(cfgPath string) {
	rep := restartReport{}
	defer func() {
		b, _ := json.Marshal(rep)
		fmt.Printf("REPORT %s\n", b)
		if rep.Err != "" {
			os.Exit(1)
		}
		os.Exit(0)
	}()
	fail := func(format string, args ...any) { rep.Err = fmt.Sprintf(format, args...) }
	lim := syscall.Rlimit{Cur: restartNofile, Max: restartNofile}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fail("setrlimit: %v", err)
		return
	}
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		fail("%v", err)
		return
	}
	var cfg Config
	if err := json.Unmarshal(b, &cfg); err != nil {
		fail("%v", err)
		return
	}
	start := time.Now()
	st, err := Open(cfg, vfs.OS(), nil)
	if err != nil {
		fail("open: %v", err)
		return
	}
	if err := st.Start(); err != nil {
		fail("start: %v", err)
		return
	}
	rep.StartMillis = time.Since(start).Milliseconds()
	for _, cq := range st.allQueues() {
		if cq.minOffset.Load() == 0 && cq.maxOffset.Load() == 1 {
			rep.Queues++
		}
	}
	// Queues across the whole range stay readable and writable.
	for i := 0; i < manyCQFiles; i += manyCQFiles / 50 {
		topic, qid := fmt.Sprintf("%s%d", manyCQTopicPrefix, i/manyCQQueuesPer), int32(i%manyCQQueuesPer)
		r := st.GetMessage("g", topic, qid, 0, 1, 1<<20, nil)
		if r.Status != Found || len(r.Buffers) != 1 {
			fail("%s-%d: read status %v, %d messages", topic, qid, r.Status, len(r.Buffers))
		}
		r.Release()
		res := make(chan PutResult, 1)
		st.PutMessage(testMsg(topic, qid, "after restart", ""), func(r PutResult) { res <- r })
		if r := <-res; r.Status != PutOK || r.QueueOffset != 1 {
			fail("%s-%d: put after restart: status %d remark %q queue offset %d", topic, qid, r.Status, r.Remark, r.QueueOffset)
		}
	}
	last := fmt.Sprintf("%s%d", manyCQTopicPrefix, (manyCQFiles-manyCQFiles/50)/manyCQQueuesPer)
	lastQ := int32((manyCQFiles - manyCQFiles/50) % manyCQQueuesPer)
	for i := 0; i < 10000 && st.MaxOffsetInQueue(last, lastQ) < 2; i++ {
		time.Sleep(time.Millisecond)
	}
	if got := st.MaxOffsetInQueue(last, lastQ); got != 2 {
		fail("%s-%d: max offset %d after a put, want 2", last, lastQ, got)
	}
	rep.Descriptors = st.Descriptors()
	if err := st.Shutdown(); err != nil {
		fail("shutdown: %v", err)
	}
}
