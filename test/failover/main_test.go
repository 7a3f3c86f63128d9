// Package failover is the fault suite of controller mode: three `spool
// controller` processes, a broker set of three replicas with
// enableControllerMode=true (plus a second broker set, so producers have
// somewhere to go while the first fails over) and a name server, all on
// loopback; producers and consumers with the official RocketMQ Go client
// record every acknowledgement and every delivery, faults are injected
// (SIGKILL and SIGSTOP of the master, the master cut from the controllers
// by a fault proxy, the controller leader killed, a replica restarted,
// a replica restarted with its unsynced tail dropped, a former master
// killed during its truncation),
// and test/failover/check judges the history: nothing acknowledged lost,
// no order violation, no two masters acknowledging in one epoch.
//
// The short form (one SIGKILL of the master) runs with the other tests;
// the long form (at least 50 faults, each alone and in pairs) needs the
// build tag `failover`:
//
//	go test -tags failover -run TestFailoverLong -timeout 90m -v ./test/failover/
//
// The broker under test is built once per run (SPOOL_FAILOVER_RACE=1
// builds it with the race detector, SPOOL_FAILOVER_BIN uses a binary
// built elsewhere); SPOOL_FAILOVER_HISTORY names a directory that keeps
// each run's recorded history as a check.File.
package failover

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/rlog"
)

var spoolBin string

func TestMain(m *testing.M) {
	rlog.SetLogLevel("fatal")
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "spool-failover-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	spoolBin = os.Getenv("SPOOL_FAILOVER_BIN")
	if spoolBin == "" {
		spoolBin = filepath.Join(dir, "spool")
		args := []string{"build", "-o", spoolBin}
		if os.Getenv("SPOOL_FAILOVER_RACE") != "" {
			args = append(args, "-race")
		}
		args = append(args, "./cmd/spool")
		cmd := exec.Command("go", args...)
		cmd.Dir = "../.."
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building spool:", err)
			return 1
		}
	}
	// The brokers overwrite a request body lent to a handler once the
	// handler returns, so that a path keeping one would store garbage.
	os.Setenv("SPOOL_POISON_LOANED_BODIES", "1")
	return m.Run()
}
