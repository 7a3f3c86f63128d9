package incidents

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	childPlanEnv  = "SPOOL_INCIDENT_CHILD_PLAN"
	childReportID = "INCIDENT-REPORT "
)

// overloadPlan is what the generator child runs: a ladder of
// producers×in-flight steps to find the saturating level (the smallest
// within 10 % of the best throughput, climbing until two steps in a row
// gain less than 10 %), then twice that
// level for Overload (group A and group B, each the saturating level), then
// group A alone for Recovery.
type overloadPlan struct {
	Addr     string        `json:"addr"`
	Topic    string        `json:"topic"`
	Queues   int           `json:"queues"`
	Size     int           `json:"size"`
	Ladder   [][2]int      `json:"ladder"` // {producers, inflight}
	Step     time.Duration `json:"step"`
	Overload time.Duration `json:"overload"`
	Recovery time.Duration `json:"recovery"`
}

type ladderStep struct {
	Producers  int        `json:"producers"`
	Inflight   int        `json:"inflight"`
	Throughput float64    `json:"throughput"`
	Result     loadResult `json:"result"`
}

type overloadReport struct {
	Ladder     []ladderStep `json:"ladder"`
	Saturating int          `json:"saturating"` // index into Ladder
	Capacity   float64      `json:"capacity"`   // best ladder throughput
	A          loadResult   `json:"overload_a"` // overload + recovery
	B          loadResult   `json:"overload_b"` // overload only
}

// TestOverloadGeneratorChild is the load generator of TestOverload, run in
// a child process at GOMAXPROCS=1; it does nothing in a normal run.
func TestOverloadGeneratorChild(t *testing.T) {
	planJSON := os.Getenv(childPlanEnv)
	if planJSON == "" {
		t.Skip("runs only as TestOverload's generator child")
	}
	runtime.GOMAXPROCS(1)
	var plan overloadPlan
	if err := json.Unmarshal([]byte(planJSON), &plan); err != nil {
		t.Fatal(err)
	}
	rep := runOverloadPlan(plan)
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("\n%s%s\n", childReportID, b)
}

func runOverloadPlan(p overloadPlan) overloadReport {
	var rep overloadReport
	load := func(producers, inflight int) sendLoad {
		return sendLoad{Addr: p.Addr, Topic: p.Topic, Queues: p.Queues, Conns: producers, Inflight: inflight, Size: p.Size,
			Timeout: 3 * time.Second}
	}
	// Climb until two steps in a row gain less than 10 % over the best so
	// far; the saturating level is the smallest one within 10 % of the best.
	flat := 0
	for _, s := range p.Ladder {
		ctx, cancel := context.WithTimeout(context.Background(), p.Step)
		res := runSends(ctx, load(s[0], s[1]), p.Step+5*time.Second)
		cancel()
		st := ladderStep{Producers: s[0], Inflight: s[1], Throughput: res.Throughput(), Result: res}
		rep.Ladder = append(rep.Ladder, st)
		if st.Throughput < 1.1*rep.Capacity {
			flat++
		} else {
			flat = 0
		}
		rep.Capacity = max(rep.Capacity, st.Throughput)
		if flat == 2 {
			break
		}
	}
	for i, st := range rep.Ladder {
		if st.Throughput >= 0.9*rep.Capacity {
			rep.Saturating = i
			break
		}
	}
	sat := rep.Ladder[rep.Saturating]
	a, b := newRecorder(p.Overload+p.Recovery+5*time.Second), newRecorder(p.Overload+5*time.Second)
	b.start = a.start
	ctxA, cancelA := context.WithTimeout(context.Background(), p.Overload+p.Recovery)
	defer cancelA()
	ctxB, cancelB := context.WithTimeout(context.Background(), p.Overload)
	defer cancelB()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); runSendsInto(ctxA, load(sat.Producers, sat.Inflight), a) }()
	go func() { defer wg.Done(); runSendsInto(ctxB, load(sat.Producers, sat.Inflight), b) }()
	wg.Wait()
	now := time.Now()
	rep.A, rep.B = a.result(now), b.result(now)
	return rep
}

// runOverloadChild runs the generator child and returns its report.
func runOverloadChild(t *testing.T, plan overloadPlan) overloadReport {
	t.Helper()
	pj, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOverloadGeneratorChild$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), childPlanEnv+"="+string(pj), "GOMAXPROCS=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("generator child: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), childReportID); ok {
			var rep overloadReport
			if err := json.Unmarshal([]byte(line), &rep); err != nil {
				t.Fatalf("generator child report: %v", err)
			}
			return rep
		}
	}
	t.Fatalf("generator child printed no report\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	return overloadReport{}
}

// TestOverload replays seed 003: twice the producers×in-flight that
// saturate the broker, from a generator at GOMAXPROCS=1 with a 3 s client
// timeout. Every send must be answered, OK or busy with a remark that
// states the measured value and its limit, within the send queue's wait
// limit; goodput must stay near capacity and recover at once.
func TestOverload(t *testing.T) {
	var goodput, maxLat, recoverMs []float64
	runReps(t, func(t *testing.T) {
		g, m, rc := overloadOnce(t)
		goodput, maxLat, recoverMs = append(goodput, g), append(maxLat, m), append(recoverMs, rc)
	})
	t.Logf("medians over %d run(s): goodput %.0f%% of capacity, longest answer %.0f ms, back to full speed after %.0f ms",
		prof.reps, 100*median(goodput), median(maxLat), median(recoverMs))
	if prof.timed {
		limit := float64(overloadWaitMs + 100)
		if m := median(maxLat); m > limit {
			t.Errorf("longest send answer under overload %.0f ms (median), target <= waitTimeMillsInSendQueue+100 = %.0f ms", m, limit)
		}
		if m := median(goodput); m < 0.7 {
			t.Errorf("goodput under overload %.0f%% of capacity (median), target >= 70%%", 100*m)
		}
		if m := median(recoverMs); m < 0 || m > 1000 {
			t.Errorf("full speed %.0f ms after the overload stopped (median; -1 = never), target <= 1000 ms", m)
		}
	}
}

// overloadWaitMs is the broker's waitTimeMillsInSendQueue (RocketMQ's
// default).
const overloadWaitMs = 200

func overloadOnce(t *testing.T) (goodput, maxLatMs, recoverMs float64) {
	const topic, queues = "OverloadTopic", 8
	r := startRig(t, rigOptions{})
	if w := r.b.Config().WaitTimeMillsInSendQueue; w != overloadWaitMs {
		t.Fatalf("waitTimeMillsInSendQueue is %d, the scenario assumes %d", w, overloadWaitMs)
	}
	r.createTopic(topic, queues)
	plan := overloadPlan{Addr: r.addr(), Topic: topic, Queues: queues, Size: 128, Step: prof.ladderStep,
		Overload: prof.overload, Recovery: prof.recovery,
		Ladder: [][2]int{{1, 1}, {2, 1}, {4, 1}, {8, 1}, {16, 1}, {32, 1}, {64, 1}, {64, 2}, {64, 4}, {64, 8}}}
	rep := runOverloadChild(t, plan)
	s := r.st.Stats()

	for i, st := range rep.Ladder {
		mark := ""
		if i == rep.Saturating {
			mark = "  <- saturating"
		}
		t.Logf("ladder %2dx%-2d %8.0f msg/s  p99 %6dus%s", st.Producers, st.Inflight, st.Throughput, st.Result.OKLat.P99, mark)
	}
	sat := rep.Ladder[rep.Saturating]
	buckets := int(prof.overload / bucketWidth)
	var overOK int64
	for i := 0; i < buckets && i < len(rep.A.Timeline); i++ {
		overOK += rep.A.Timeline[i]
	}
	for i := 0; i < buckets && i < len(rep.B.Timeline); i++ {
		overOK += rep.B.Timeline[i]
	}
	goodputRate := float64(overOK) / prof.overload.Seconds()
	goodput = goodputRate / rep.Capacity
	// Back to full speed: the first 200 ms window after B stopped in which
	// group A alone runs at >= 90 % of the saturating level's throughput.
	recoverMs = -1
	full := 0.9 * sat.Throughput * bucketWidth.Seconds()
	for i := buckets; i+1 < len(rep.A.Timeline); i++ {
		if float64(rep.A.Timeline[i]+rep.A.Timeline[i+1])/2 >= full {
			recoverMs = float64((i - buckets) * int(bucketWidth/time.Millisecond))
			break
		}
	}
	maxLatMs = float64(max(rep.A.Lat.Max, rep.B.Lat.Max)) / 1000
	t.Logf("overload %dx%d (twice %dx%d): group A %s", 2*sat.Producers, sat.Inflight, sat.Producers, sat.Inflight, rep.A.describe())
	t.Logf("overload group B %s", rep.B.describe())
	t.Logf("capacity %.0f msg/s; goodput under overload %.0f msg/s (%.0f%%); longest answer %.1f ms (limit %d+100); full speed again after %.0f ms",
		rep.Capacity, goodputRate, 100*goodput, maxLatMs, overloadWaitMs, recoverMs)

	storeInvariants(t, s)
	for _, st := range rep.Ladder {
		answerInvariants(t, fmt.Sprintf("ladder %dx%d", st.Producers, st.Inflight), st.Result)
	}
	answerInvariants(t, "overload A", rep.A)
	answerInvariants(t, "overload B", rep.B)
	if rep.A.FlushTO+rep.B.FlushTO != 0 {
		t.Errorf("FLUSH_DISK_TIMEOUT answers under ASYNC_FLUSH overload: %d", rep.A.FlushTO+rep.B.FlushTO)
	}
	var ok int64
	for _, st := range rep.Ladder {
		ok += st.Result.OK
	}
	ok += rep.A.OK + rep.B.OK
	if got := r.stored(topic, queues); got != ok {
		t.Errorf("nothing lost: consume queues hold %d messages, %d sends were answered OK", got, ok)
	}
	return goodput, maxLatMs, recoverMs
}
