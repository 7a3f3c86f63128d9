package store

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
)

const replicaKillChildEnv = "SPOOL_STORE_REPLICA_KILL_CHILD"

// replicaKillConfig is allocKillConfig with a spill that holds a whole
// file, so the slave's bytes in the last file are all in the spill.
func replicaKillConfig(dir string) Config {
	cfg := allocKillConfig(dir)
	cfg.WriteSpillSize = int(cfg.MappedFileSizeCommitLog)
	return cfg
}

// TestReplicaSpillKillChild is the child side of
// TestKill9WithASpilledSlaveTail: it fills a master, makes the slave's
// CommitLog file creation hang once a file is ready ahead, appends the
// master's bytes to the slave up to half into the file after the ready
// one (which goes into the spill), printing the slave's AckOffset after
// every append, prints DONE and waits to be killed.
func TestReplicaSpillKillChild(t *testing.T) {
	if os.Getenv(replicaKillChildEnv) == "" {
		t.Skip("child process of TestKill9WithASpilledSlaveTail")
	}
	dir := os.Getenv("SPOOL_STORE_DIR")
	mcfg, scfg := replicaKillConfig(filepath.Join(dir, "m")), replicaKillConfig(filepath.Join(dir, "s"))
	ms := openStarted(t, mcfg, vfs.OS())
	fillMaster(t, ms, 400)
	sfs := vfs.NewFaultFS(vfs.OS())
	ss := openStarted(t, scfg, sfs)
	sc := ss.commitLog
	for sc.alloc.readyCount() < 1 || sc.spareSpill.Load() == nil {
		time.Sleep(time.Millisecond)
	}
	sfs.SetLatency(vfs.OpCreate, time.Hour)
	m, s := NewReplicaLog(ms), NewReplicaLog(ss)
	size := scfg.MappedFileSizeCommitLog
	upto := 2*size + size/2
	if m.MaxOffset() < upto {
		fmt.Println("ERR the master holds only", m.MaxOffset())
		os.Exit(2)
	}
	rng := rand.New(rand.NewSource(11))
	buf := make([]byte, 2048)
	for off := s.MaxOffset(); off < upto; {
		k := int(min(int64(1+rng.Intn(len(buf))), upto-off))
		n, err := m.ReadAt(buf[:k], off)
		if err == nil && n > 0 {
			err = s.AppendReplicated(off, buf[:n])
		}
		if err != nil || n == 0 {
			fmt.Println("ERR append at", off, n, err)
			os.Exit(2)
		}
		off += int64(n)
		fmt.Println("ACK", s.AckOffset())
	}
	fmt.Println("DONE", s.MaxOffset(), ss.Stats().Spills, ss.Stats().PutWaitedOnCreate)
	select {} // hold until killed
}

// TestKill9WithASpilledSlaveTail kills (SIGKILL) a slave whose last bytes
// are only in the write spill (the file's creation hangs) and checks that
// everything it acknowledged is in its log after the restart, equal to
// the master's bytes: the spilled tail was not acknowledged. The master's
// puts have the same check in TestKill9AtEachAllocatorState.
func TestKill9WithASpilledSlaveTail(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	if os.Getenv(replicaKillChildEnv) != "" {
		t.Skip("in the child")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestReplicaSpillKillChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), replicaKillChildEnv+"=1", "SPOOL_STORE_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lastAck, acks := int64(-1), 0
	var end, spills, waited int64
	done := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "ERR") {
			t.Fatalf("child: %s", line)
		}
		if _, err := fmt.Sscanf(line, "DONE %d %d %d", &end, &spills, &waited); err == nil {
			done = true
			break
		}
		var a int64
		if _, err := fmt.Sscanf(line, "ACK %d", &a); err == nil {
			if a < lastAck {
				t.Fatalf("the acknowledgement moved back from %d to %d", lastAck, a)
			}
			lastAck = a
			acks++
		}
	}
	cmd.Process.Kill() // SIGKILL
	cmd.Wait()
	if !done {
		t.Fatal("the child stopped before it was done")
	}
	size := replicaKillConfig(dir).MappedFileSizeCommitLog
	t.Logf("%d appends; acknowledged %d of %d bytes before the kill; spills %d, waits on creation %d", acks, lastAck, end, spills, waited)
	if spills == 0 || waited != 0 || end <= 2*size {
		t.Fatalf("want the bytes past %d in the spill: appended %d, spills %d, waits on creation %d", 2*size, end, spills, waited)
	}

	ms, err := Open(replicaKillConfig(filepath.Join(dir, "m")), vfs.OS(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ms.Start(); err != nil {
		t.Fatalf("master restart: %v", err)
	}
	defer ms.Shutdown()
	ss, err := Open(replicaKillConfig(filepath.Join(dir, "s")), vfs.OS(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ss.Start(); err != nil {
		t.Fatalf("slave restart: %v", err)
	}
	defer ss.Shutdown()
	if got := ss.MaxPhyOffset(); got < lastAck || got > end {
		t.Fatalf("the restarted slave ends at %d: acknowledged %d, appended %d (CommitLog files: %v)", got, lastAck, end, commitLogFiles(filepath.Join(dir, "s")))
	}
	sameBytes(t, NewReplicaLog(ms), NewReplicaLog(ss), 0, lastAck)
}
