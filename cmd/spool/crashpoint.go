package main

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// envCrashAt names a point of the broker's store (the names of
// store.DefaultMessageStore.Failpoint, e.g. "truncate-commitlog": the
// CommitLog of a role change's truncation is cut, its consume queues and
// epoch file not yet) at which `spool broker` kills itself with SIGKILL,
// as a crash exactly there would leave the store. The fault suite
// (test/failover) kills a broker in the middle of a truncation with it.
// Unset, as in any real deployment, nothing is hooked.
const envCrashAt = "SPOOL_CRASH_AT"

// crashAt is the store failpoint that kills the process at the point
// named (nil: none named).
func crashAt(name string) func(string) {
	if name == "" {
		return nil
	}
	return func(at string) {
		if at != name {
			return
		}
		fmt.Fprintf(os.Stderr, "spool: %s=%s reached: killing the process\n", envCrashAt, name)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		for {
			time.Sleep(time.Hour) // the signal ends the process
		}
	}
}
