package broker

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/remoting"
)

const txChildEnv = "SPOOL_BROKER_TX_CHILD"

// TestTransactionKill9Child is the child side of TestTransactionKill9: it
// stores half messages, rolls some back, answers nothing to checks (the
// state stays unknown), prints what happened, and runs until killed.
func TestTransactionKill9Child(t *testing.T) {
	dir := os.Getenv(txChildEnv)
	if dir == "" {
		t.Skip("child process of TestTransactionKill9")
	}
	e := startBrokerIn(t, dir, func(c *Config, _ *store.Config) {
		c.TransactionCheckInterval = 100
		c.TransactionTimeOut = 0
	})
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		fmt.Printf(format+"\n", args...)
		out.Unlock()
	}
	p := newTxProducer(t, e, "kpg")
	p.onCheck = func(req *remoting.Command) { say("CHECKED %s", req.Ext("tranStateTableOffset")) }
	res := putHalves(t, e, "kpg", 40, time.Now().UnixMilli())
	for i, r := range res {
		say("HALF %d %d", r.QueueOffset, r.WroteOffset)
		if i%4 == 3 {
			end := goRequest(remoting.EndTransaction, map[string]string{
				"producerGroup": "kpg", "tranStateTableOffset": itoa64(r.QueueOffset),
				"commitLogOffset": itoa64(r.WroteOffset), "commitOrRollback": "12", "fromTransactionCheck": "false",
				"msgId": "kpg-" + strconv.Itoa(i),
			}, nil)
			if resp := e.invoke(end); resp.Code == remoting.Success {
				say("ROLLBACK %d", r.QueueOffset)
			}
		}
	}
	time.Sleep(90 * time.Second) // the parent kills it long before
	os.Exit(3)
}

// TestTransactionKill9: a broker checking unknown half messages is killed
// with SIGKILL; after the restart exactly the unresolved halves are
// pending, with the check counts their op records carried, and they are
// checked again.
func TestTransactionKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTransactionKill9Child$", "-test.count=1")
	cmd.Env = append(os.Environ(), txChildEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	guard := time.AfterFunc(60*time.Second, func() { cmd.Process.Signal(syscall.SIGKILL) })
	defer guard.Stop()
	halves := map[int64]int64{} // queue offset -> commit-log offset
	rolledBack := map[int64]bool{}
	checked := map[int64]int32{}
	killed := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		q, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "HALF":
			phy, _ := strconv.ParseInt(f[2], 10, 64)
			halves[q] = phy
		case "ROLLBACK":
			rolledBack[q] = true
		case "CHECKED":
			checked[q]++
		}
		if !killed && len(halves) == 40 && len(rolledBack) == 10 && len(checked) == 30 {
			least := int32(1 << 30)
			for _, n := range checked {
				least = min(least, n)
			}
			if least >= 3 {
				cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
	}
	cmd.Wait()
	if !killed {
		t.Fatalf("child ended early: %d halves, %d rollbacks, %d checked", len(halves), len(rolledBack), len(checked))
	}

	clk := testkit.ClockAhead(time.Hour)
	e := startBrokerOpts(t, dir, Options{Clock: clk}, func(c *Config, _ *store.Config) { c.TransactionCheckInterval = 1000 })
	settle(t, clk)
	s := e.b.TransactionStats()
	if s.Rebuilding || s.PendingHalves != 30 {
		t.Fatalf("after kill -9: %+v", s)
	}
	for q, phy := range halves {
		h, ok := e.b.txCheck.Index().Get(q)
		if rolledBack[q] {
			if ok {
				t.Errorf("rolled-back half %d pending again", q)
			}
			continue
		}
		if !ok || h.Phy != phy {
			t.Errorf("unresolved half %d: %+v %v", q, h, ok)
			continue
		}
		// The op record of the check in flight at the kill may be lost
		// or may precede the check's arrival.
		if d := h.Checks - checked[q]; d < -1 || d > 1 {
			t.Errorf("half %d: %d checks counted after restart, %d received", q, h.Checks, checked[q])
		}
	}
	p := newTxProducer(t, e, "kpg")
	clk.Advance(time.Second)
	settle(t, clk)
	waitFor(t, "checks after the restart", func() bool { return p.checks.Load() == 30 })
	t.Logf("killed after %d checks; rebuild read %d records (%d bytes)", sumChecks(checked), s.RebuildReads, s.RebuildReadBytes)
}

func sumChecks(m map[int64]int32) int32 {
	var n int32
	for _, v := range m {
		n += v
	}
	return n
}
