//go:build failover

package failover

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/test/failover/check"
)

// The long form: rounds of every fault alone and every pair of faults
// (SPOOL_FAILOVER_ROUNDS, default 1: 64 faults), under load, then the
// final read, the verdict and the table of failover times.
func TestFailoverLong(t *testing.T) {
	requireControllerMode(t)
	rounds := 1
	if s := os.Getenv("SPOOL_FAILOVER_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SPOOL_FAILOVER_ROUNDS=%q", s)
		}
		rounds = n
	}
	// SPOOL_FAILOVER_BROKER_SETS: comma-separated key=value broker keys
	// for setA's replicas (e.g. controllerHeartBeatTimeoutMills=6000).
	var sets []string
	if s := os.Getenv("SPOOL_FAILOVER_BROKER_SETS"); s != "" {
		sets = strings.Split(s, ",")
	}
	minInSyncReplicas = 2
	sets = append([]string{"minInSyncReplicas=2"}, sets...)
	for _, kv := range sets {
		if k, v, _ := strings.Cut(kv, "="); k == "controllerHeartBeatTimeoutMills" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				t.Fatalf("SPOOL_FAILOVER_BROKER_SETS: %q", kv)
			}
			lease = time.Duration(n) * time.Millisecond / 2
		}
	}
	c := startCluster(t, sets...)
	w := startWorkload(t, c, "FailoverLong", 4)
	w.awaitAcks(setA, 100, 60*time.Second)
	w.awaitDelivered("live", 1, 60*time.Second)

	plan := fullPlan()
	// SPOOL_FAILOVER_PLAN replaces the plan with its own steps, to replay
	// a sequence a run failed on: steps separated by ";", the faults of a
	// step by "+", each named by its kind.
	if s := os.Getenv("SPOOL_FAILOVER_PLAN"); s != "" {
		p, err := parsePlan(s)
		if err != nil {
			t.Fatalf("SPOOL_FAILOVER_PLAN: %v", err)
		}
		plan = p
	}
	// SPOOL_FAILOVER_BUDGET (a duration) stops injecting once spent, so a
	// run on a busy machine still ends with its verdict and table.
	var budget time.Duration
	if s := os.Getenv("SPOOL_FAILOVER_BUDGET"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("SPOOL_FAILOVER_BUDGET=%q", s)
		}
		budget = d
	}
	began := time.Now()
	injected, notInjected := 0, 0
plan:
	for round := 1; round <= rounds; round++ {
		for _, fs := range plan {
			if budget > 0 && time.Since(began) > budget {
				t.Errorf("SPOOL_FAILOVER_BUDGET=%v spent after %d faults: the plan was cut short", budget, injected)
				break plan
			}
			if err := c.awaitHealthy(90 * time.Second); err != nil {
				// Counted, and the run goes on with what is left: the
				// faults that can still fail over are measured.
				t.Errorf("round %d, before %v: %v", round, kinds(fs), err)
			}
			errs, skipped := c.step(w, fs...)
			for _, err := range errs {
				t.Errorf("round %d, %v: %v", round, kinds(fs), err)
			}
			for _, s := range skipped {
				t.Logf("round %d, %v: not injected (%s)", round, kinds(fs), s)
			}
			injected += len(fs) - len(skipped)
			notInjected += len(skipped)
			t.Logf("round %d: %v done (%d faults, %d acknowledged)", round, kinds(fs), injected, w.acked.Load())
		}
	}
	if err := c.awaitHealthy(2 * time.Minute); err != nil {
		t.Errorf("after the faults: %v", err)
	}
	rep := w.finalRead(60 * time.Second)
	table := check.Table(w.rec.Faults(), w.rec.History().Sends)
	fmt.Printf("failover suite: %d faults (%d of the plan not injected: a pair's first fault left nothing for the second)\n%s%s\n", injected, notInjected, table, rep)
	t.Logf("%s\n%s", rep, table)
	if t.Failed() {
		t.Logf("processes:\n%s", c.outputs())
	}
	if rep.Failed() {
		c.fail(fmt.Errorf("the history breaks a guarantee: %s", rep))
	}
}

// fullPlan is every fault alone, then every pair of faults.
func fullPlan() [][]fault {
	var plan [][]fault
	for _, f := range faults {
		plan = append(plan, []fault{f})
	}
	for i := range faults {
		for j := i + 1; j < len(faults); j++ {
			plan = append(plan, []fault{faults[i], faults[j]})
		}
	}
	return plan
}

// parsePlan reads steps separated by ";" of fault kinds joined by "+".
func parsePlan(s string) ([][]fault, error) {
	var plan [][]fault
	for _, step := range strings.Split(s, ";") {
		var fs []fault
		for _, k := range strings.Split(step, "+") {
			k = strings.TrimSpace(k)
			i := slices.IndexFunc(faults, func(f fault) bool { return f.kind == k })
			if i < 0 {
				return nil, fmt.Errorf("no fault %q (the faults: %v)", k, kinds(faults))
			}
			fs = append(fs, faults[i])
		}
		plan = append(plan, fs)
	}
	return plan, nil
}

func kinds(fs []fault) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.kind)
	}
	return out
}
