package broker

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/schedule"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
)

const (
	delayChildEnv   = "SPOOL_BROKER_DELAY_CHILD"
	delayKillTopic  = "DK"
	delayKillLevels = "1s 2s"
)

func delayKillConfig(_ *Config, s *store.Config) {
	s.MessageDelayLevel = delayKillLevels
	// Small files, so the recovery scan crosses file ends.
	s.MappedFileSizeCommitLog = 64 << 10
}

// putDelayed stores a delayed message through the send path's rewrite
// and calls done with the outcome.
func putDelayed(b *Broker, body string, level int, done func(store.PutResult)) {
	props := map[string]string{message.PropertyDelayTimeLevel: strconv.Itoa(level), message.PropertyTags: "d"}
	m := &message.Inner{Topic: delayKillTopic, QueueID: int32(level - 1), Body: []byte(body), Properties: props,
		BornTimestamp: time.Now().UnixMilli(), BornHost: b.storeHost, StoreHost: b.storeHost}
	b.data.ApplyDelay(m)
	m.PropertiesString = message.EncodeProperties(props)
	b.data.PutMessage(m, done)
}

// TestDelayKill9Child is the child side of TestDelayKill9: it stores
// delayed messages at a steady pace, prints each acknowledged one with its
// store time, prints the delivered count, and runs until killed.
func TestDelayKill9Child(t *testing.T) {
	dir := os.Getenv(delayChildEnv)
	if dir == "" {
		t.Skip("child process of TestDelayKill9")
	}
	e := startBrokerIn(t, dir, delayKillConfig)
	start, _ := strconv.Atoi(os.Getenv("SPOOL_DELAY_FIRST"))
	n, _ := strconv.Atoi(os.Getenv("SPOOL_DELAY_COUNT"))
	var out sync.Mutex
	for i := start; i < start+n; i++ {
		level := 1 + i%2
		body := "m" + strconv.Itoa(i)
		putDelayed(e.b, body, level, func(r store.PutResult) {
			if r.Status == store.PutOK {
				out.Lock()
				fmt.Printf("ACK %s %d %d\n", body, level, r.StoreTimestamp)
				out.Unlock()
			}
		})
		time.Sleep(2 * time.Millisecond)
		if i%20 == 0 {
			out.Lock()
			fmt.Printf("DELIVERED %d\n", e.b.store.MaxOffsetInQueue(delayKillTopic, 0)+e.b.store.MaxOffsetInQueue(delayKillTopic, 1))
			out.Unlock()
		}
	}
	for stop := time.Now().Add(90 * time.Second); time.Now().Before(stop); { // the parent kills it long before
		out.Lock()
		fmt.Printf("DELIVERED %d\n", e.b.store.MaxOffsetInQueue(delayKillTopic, 0)+e.b.store.MaxOffsetInQueue(delayKillTopic, 1))
		out.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	os.Exit(3)
}

type delayAck struct {
	level   int
	storeTs int64
}

// runDelayChild runs the child until it has delivered at least
// killAfter messages, then kills it with SIGKILL; it returns the
// acknowledged messages.
func runDelayChild(t *testing.T, dir string, first, count int, killAfter int64, acks map[string]delayAck) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDelayKill9Child$", "-test.count=1")
	cmd.Env = append(os.Environ(), delayChildEnv+"="+dir, "SPOOL_DELAY_FIRST="+strconv.Itoa(first),
		"SPOOL_DELAY_COUNT="+strconv.Itoa(count))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	killed := false
	deadline := time.AfterFunc(60*time.Second, func() { cmd.Process.Signal(syscall.SIGKILL) })
	defer deadline.Stop()
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 4 && f[0] == "ACK":
			level, _ := strconv.Atoi(f[2])
			ts, _ := strconv.ParseInt(f[3], 10, 64)
			acks[f[1]] = delayAck{level: level, storeTs: ts}
		case len(f) == 2 && f[0] == "DELIVERED" && !killed:
			if n, _ := strconv.ParseInt(f[1], 10, 64); n >= killAfter {
				cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
	}
	cmd.Wait()
	if !killed {
		t.Fatalf("child stopped before delivering %d messages", killAfter)
	}
}

// TestDelayKill9: a broker delivering delayed messages is killed with
// SIGKILL twice, in the middle of deliveries; after the restarts every
// acknowledged delayed message is delivered exactly once, and none before
// its store time plus its level's delay.
func TestDelayKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 loop")
	}
	dir := t.TempDir()
	acks := map[string]delayAck{}
	runDelayChild(t, dir, 0, 400, 150, acks)
	runDelayChild(t, dir, 400, 400, 450, acks)
	// The file the second child left behind is stale by up to a second.
	var doc schedule.DelayOffsetFile
	if b, err := os.ReadFile(filepath.Join(dir, "config", "delayOffset.json")); err == nil {
		json.Unmarshal(b, &doc)
	}

	e := startBrokerIn(t, dir, delayKillConfig)
	levels := e.b.delayLevels
	waitFor(t, "every delayed message to be delivered", func() bool {
		for q := int32(0); q < 2; q++ {
			if e.b.schedule.Offset(int(q)+1) < e.b.store.MaxOffsetInQueue(topicSchedule, q) {
				return false
			}
		}
		return true
	})
	e.waitDispatched(delayKillTopic, 0, 1)
	seen := map[string]int{}
	for q := int32(0); q < 2; q++ {
		waitFor(t, "dispatch of deliveries", func() bool {
			return e.b.store.DispatchBehindBytes() == 0
		})
		for off := int64(0); ; {
			res := e.b.store.GetMessage("test", delayKillTopic, q, off, 32, math.MaxInt32, nil)
			if res == nil || res.Status != store.Found {
				res.Release()
				break
			}
			for _, buf := range res.Buffers {
				x, err := message.DecodeRecord(buf)
				if err != nil {
					t.Fatal(err)
				}
				body := string(x.Body)
				seen[body]++
				if a, ok := acks[body]; ok {
					if due := a.storeTs + levels[a.level-1].Milliseconds(); x.StoreTimestamp < due {
						t.Errorf("%s delivered at %d, %d ms early", body, x.StoreTimestamp, due-x.StoreTimestamp)
					}
				}
				if x.Properties[schedule.PropertyDelaySource] == "" {
					t.Errorf("%s delivered without %s", body, schedule.PropertyDelaySource)
				}
			}
			off = res.NextBeginOffset
			res.Release()
		}
	}
	for body := range acks {
		if seen[body] != 1 {
			t.Errorf("acknowledged %s delivered %d times", body, seen[body])
		}
	}
	for body, n := range seen {
		if n > 1 {
			t.Errorf("%s delivered %d times", body, n)
		}
	}
	t.Logf("%d acknowledged, %d distinct delivered; last persisted table %v (mark %v); recovery advanced %d levels",
		len(acks), len(seen), doc.OffsetTable, ptrVal(doc.CommitLogOffset), e.b.schedule.Recovered.Load())
}

func ptrVal(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
