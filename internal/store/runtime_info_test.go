package store

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/spoolmq/spool/internal/store/stats"
	"github.com/spoolmq/spool/internal/vfs"
)

func TestRuntimeInfoStoreFigures(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxMessageSize = 1000
	fs := vfs.NewFaultFS(vfs.OS())
	fs.SetUsage(0.4321)
	st := openStarted(t, cfg, fs)
	defer st.Shutdown()
	var last PutResult
	for i := 0; i < 3; i++ {
		last = mustPut(t, st, testMsg("RI", 0, "body", ""))
	}
	if r := putSync(t, st, testMsg("RI", 0, string(make([]byte, 1001)), "")); r.Status != MessageIllegal {
		t.Fatalf("oversize put: %v", r.Status)
	}
	waitDispatched(t, st, "RI", 0, last.QueueOffset+1)
	if r := st.GetMessage("g", "RI", 0, 0, 32, 1<<20, nil); r.Status != Found || len(r.Buffers) != 3 {
		t.Fatalf("get: %v %d", r.Status, len(r.Buffers))
	}
	info := st.RuntimeInfo()
	want := map[string]string{
		"putMessageTimesTotal":                     "3",
		"putMessageFailedTimes":                    "1",
		"commitLogDiskRatio":                       "0.44", // 43.21 % rounded up to a hundredth
		"commitLogDiskRatio_" + cfg.commitLogDir(): "0.44",
		"consumeQueueDiskRatio":                    "0.44",
		"commitLogMinOffset":                       "0",
		"commitLogMaxOffset":                       strconv.FormatInt(st.MaxPhyOffset(), 10),
		"remainHowManyDataToCommit":                "0 B",
		"putMessageDistributeTime":                 "null", // no minute has ended yet
	}
	for k, v := range want {
		if info[k] != v {
			t.Errorf("%s = %q, want %q", k, info[k], v)
		}
	}
	if n, err := strconv.ParseInt(info["dispatchMaxBuffer"], 10, 64); err != nil || n <= 0 {
		t.Errorf("dispatchMaxBuffer = %q, want the dispatcher's largest backlog (> 0)", info["dispatchMaxBuffer"])
	}
	if info["getTransferedTps"] != info["getTransferredTps"] {
		t.Errorf("getTransferedTps %q != getTransferredTps %q", info["getTransferedTps"], info["getTransferredTps"])
	}
	if !regexp.MustCompile(`^(\d+ B|\d+\.\d [KMGTPE]iB)$`).MatchString(info["remainHowManyDataToFlush"]) {
		t.Errorf("remainHowManyDataToFlush = %q", info["remainHowManyDataToFlush"])
	}
	fs.SetUsage(-1) // the real file system again
	if v := st.RuntimeInfo()["commitLogDiskRatio"]; !regexp.MustCompile(`^(0\.\d{1,2}|1\.0)$`).MatchString(v) {
		t.Errorf("real commitLogDiskRatio = %q", v)
	}
}

// With the transient store pool, bytes copied into the pool's buffer wait
// for the committer; with a commit interval of an hour they all remain.
func TestRuntimeInfoRemainToCommit(t *testing.T) {
	cfg := testConfig(t)
	cfg.TransientStorePoolEnable = true
	cfg.TransientStorePoolSize = 2
	cfg.CommitIntervalCommitLog = 3600 * 1000
	cfg.CommitCommitLogThoroughInterval = 3600 * 1000
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	var wrote int64
	for i := 0; i < 3; i++ {
		wrote += int64(mustPut(t, st, testMsg("RC", 0, "body", "")).WroteBytes)
	}
	if got, want := st.RuntimeInfo()["remainHowManyDataToCommit"], stats.HumanReadableByteCount(wrote); got != want {
		t.Fatalf("remainHowManyDataToCommit = %q, want %q", got, want)
	}
}
