package broker

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/store/stats"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

// rocketmqRuntimeKey is one line of testdata/rocketmq-runtime-keys.txt.
type rocketmqRuntimeKey struct {
	key, kind, source, readBy string
	prefix                    bool
}

func loadRocketMQRuntimeKeys(t *testing.T) []rocketmqRuntimeKey {
	t.Helper()
	f, err := os.Open("testdata/rocketmq-runtime-keys.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var keys []rocketmqRuntimeKey
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 4 {
			t.Fatalf("fixture line %q: want key, kind, source, readers", line)
		}
		k := rocketmqRuntimeKey{key: fields[0], kind: fields[1], source: fields[2], readBy: strings.Join(fields[3:], " ")}
		if strings.HasSuffix(k.key, "*") {
			k.key, k.prefix = strings.TrimSuffix(k.key, "*"), true
		}
		keys = append(keys, k)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// javaSplit is Java's String.split with a literal one-character separator:
// no separator gives the whole string (even ""), otherwise the pieces
// without the trailing empty ones.
func javaSplit(s, sep string) []string {
	if !strings.Contains(s, sep) {
		return []string{s}
	}
	p := strings.Split(s, sep)
	for len(p) > 0 && p[len(p)-1] == "" {
		p = p[:len(p)-1]
	}
	return p
}

// javaDoubleRe is the decimal grammar of Double.parseDouble and
// Float.parseFloat (after trimming): sign, NaN, Infinity, digits with an
// optional point and exponent, an optional type suffix.
var javaDoubleRe = regexp.MustCompile(`^[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)$`)

func javaParseDouble(s string) error {
	if !javaDoubleRe.MatchString(strings.Trim(s, " \t\n\r")) {
		return fmt.Errorf("NumberFormatException: %q", s)
	}
	return nil
}

func javaParseLong(s string, bits int) error {
	if _, err := strconv.ParseInt(s, 10, bits); err != nil || strings.Contains(s, "_") {
		return fmt.Errorf("NumberFormatException: %q", s)
	}
	return nil
}

var (
	// Double.toString and Float.toString: at least one fractional digit,
	// never a trailing zero after another digit ("12.0", "0.25", "1.0E-4").
	javaDoubleStringRe = regexp.MustCompile(`^-?(NaN|Infinity|\d+\.(0|\d*[1-9])(E-?\d+)?)$`)
	fixed2Re           = regexp.MustCompile(`^-?\d+\.\d{2}$`)
	byteCountRe        = regexp.MustCompile(`^(-?\d+ B|\d+\.\d [KMGTPE]iB)$`)
	runtimeRe          = regexp.MustCompile(`^\[ \d+ days, \d+ hours, \d+ minutes, \d+ seconds \]$`)
)

// parseLikeTools parses v the way the kind's readers do (see the fixture).
func parseLikeTools(kind, v string) error {
	switch kind {
	case "long":
		return javaParseLong(v, 64)
	case "int":
		return javaParseLong(v, 32)
	case "double", "float":
		if !javaDoubleStringRe.MatchString(v) {
			return fmt.Errorf("%q is not Java's Double.toString/Float.toString form", v)
		}
		return javaParseDouble(v)
	case "fixed2":
		if !fixed2Re.MatchString(v) {
			return fmt.Errorf("%q is not String.format(\"%%.2f\")", v)
		}
		return javaParseDouble(v)
	case "bool":
		if v != "true" && v != "false" {
			return fmt.Errorf("%q is neither true nor false", v)
		}
	case "string":
		if v == "" {
			return fmt.Errorf("empty")
		}
	case "tps":
		w := strings.Split(v, " ")
		if len(w) != 3 {
			return fmt.Errorf("%q has %d windows, want 3", v, len(w))
		}
		for i, p := range w {
			if p == "" {
				if i < 2 && w[i+1] != "" {
					return fmt.Errorf("%q: window %d empty before a filled one", v, i)
				}
				continue
			}
			if !javaDoubleStringRe.MatchString(p) {
				return fmt.Errorf("%q: window %d is not a Java double", v, i)
			}
		}
		for _, p := range javaSplit(v, " ") { // exporter's loadTps parses every piece
			if err := javaParseDouble(p); err != nil {
				return err
			}
		}
	case "bytes":
		if !byteCountRe.MatchString(v) {
			return fmt.Errorf("%q is not humanReadableByteCount's form", v)
		}
		return javaParseDouble(javaSplit(v, " ")[0])
	case "capacity":
		a := javaSplit(v, " ")
		if len(a) != 8 || a[0] != "Total" || a[4] != "Free" || !strings.HasSuffix(a[3], ",") || !strings.HasSuffix(a[7], ".") {
			return fmt.Errorf("%q is not \"Total : <n> <unit>, Free : <n> <unit>.\"", v)
		}
		for _, n := range []string{a[2] + " " + a[3][:len(a[3])-1], a[6] + " " + a[7][:len(a[7])-1]} {
			if !byteCountRe.MatchString(n) {
				return fmt.Errorf("%q: %q is not a byte count", v, n)
			}
			if err := javaParseDouble(javaSplit(n, " ")[0]); err != nil {
				return err
			}
		}
	case "distribute":
		if v == "null" {
			return nil
		}
		pieces := javaSplit(v, " ")
		if len(pieces) != stats.PageCacheRTBucketCount || !strings.HasSuffix(v, " ") {
			return fmt.Errorf("%q: want %d \"[bucket]:count \" pairs", v, stats.PageCacheRTBucketCount)
		}
		for i, p := range pieces {
			kv := javaSplit(p, ":")
			if len(kv) != 2 || kv[0] != stats.PageCacheRTBuckets[i] {
				return fmt.Errorf("%q: piece %q, want bucket %s", v, p, stats.PageCacheRTBuckets[i])
			}
			if err := javaParseLong(kv[1], 32); err != nil {
				return err
			}
		}
	case "runtime":
		if !runtimeRe.MatchString(v) {
			return fmt.Errorf("%q is not the runtime form", v)
		}
	case "pair":
		p := javaSplit(v, ",")
		if len(p) != 2 {
			return fmt.Errorf("%q is not <long>,<long>", v)
		}
		for _, n := range p {
			if err := javaParseLong(n, 64); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("fixture kind %q unknown", kind)
	}
	return nil
}

// TestRuntimeInfoRocketMQKeys checks GET_BROKER_RUNTIME_INFO against every
// key of RocketMQ 5.3.3 (testdata/rocketmq-runtime-keys.txt): each is
// answered and parses the way mqadmin and rocketmq-exporter parse it. The
// broker has put (one message directly, one through a delay level), pulled
// and delivered, so the counters have moved.
func TestRuntimeInfoRocketMQKeys(t *testing.T) {
	e := startBroker(t, func(_ *Config, s *store.Config) { s.MessageDelayLevel = "1s" })
	e.createTopic("RK", 1)
	e.mustSend("RK", 0, "", "now")
	delayed := map[string]string{message.PropertyDelayTimeLevel: "1"}
	if r := e.invoke(sendV1("RK", 0, delayed, []byte("later"))); r.Code != remoting.Success {
		t.Fatalf("delayed send: code %d remark %q", r.Code, r.Remark)
	}
	e.waitDispatched("RK", 0, 2) // the delay service delivered the second
	// It counts the delivery, then moves the level's offset.
	waitFor(t, "the delay level's offset", func() bool { return e.b.schedule.Offset(1) == 1 })
	if r := e.invoke(pullReq("cg", "RK", 0, 0, pullFlagSubscription, 0, "*")); r.Code != remoting.Success {
		t.Fatalf("pull: code %d remark %q", r.Code, r.Remark)
	}
	info := e.runtimeInfo()

	for _, k := range loadRocketMQRuntimeKeys(t) {
		var names []string
		if k.prefix {
			for name := range info {
				if strings.HasPrefix(name, k.key) {
					names = append(names, name)
				}
			}
		} else if _, ok := info[k.key]; ok {
			names = []string{k.key}
		}
		if len(names) == 0 {
			t.Errorf("runtime info lacks %s (%s; read by %s)", k.key, k.source, k.readBy)
			continue
		}
		for _, name := range names {
			if err := parseLikeTools(k.kind, info[name]); err != nil {
				t.Errorf("%s (%s, read by %s): %v", name, k.kind, k.readBy, err)
			}
		}
	}

	// Values with a known answer.
	want := map[string]string{
		// The delayed message counts once, when delivered: its put to
		// SCHEDULE_TOPIC_XXXX is a system topic's, as in RocketMQ.
		"msgPutTotalTodayNow":     "2",
		"msgGetTotalTodayNow":     "2",
		"brokerActive":            "true",
		"brokerVersionDesc":       "V5_3_3",
		"scheduleMessageOffset_1": "1,1",
		"ackThreadPoolQueueSize":  "0",
		"timerOffsetBehind":       "0",
		"timerCongestNum":         "0",
	}
	for k, v := range want {
		if info[k] != v {
			t.Errorf("%s = %q, want %q", k, info[k], v)
		}
	}
	if info["getTransferedTps"] != info["getTransferredTps"] {
		t.Errorf("getTransferedTps %q differs from getTransferredTps %q", info["getTransferedTps"], info["getTransferredTps"])
	}
	// Three puts reached the store: RK twice and SCHEDULE_TOPIC_XXXX.
	if n, _ := strconv.ParseInt(info["putMessageTimesTotal"], 10, 64); n != 3 {
		t.Errorf("putMessageTimesTotal = %q, want 3", info["putMessageTimesTotal"])
	}
	// Spool's own keys stay.
	for _, k := range []string{"putLatencyP99Micros", "busyOverload", "coldReadBytes", "transactionPendingHalves", "timerPending", "storeReadOnly"} {
		if _, ok := info[k]; !ok {
			t.Errorf("runtime info lost Spool's key %s", k)
		}
	}
}

// The tools' parsers reject what RocketMQ would never send; the checks
// above must be able to fail.
func TestParseLikeToolsRejects(t *testing.T) {
	bad := map[string][]string{
		"long":       {"", "1.0", "12 ", "1_000", "9223372036854775808"},
		"int":        {"2147483648"},
		"double":     {"", "0.4523 ", "1,5", "45%", "1e5", "0.4500", "12"},
		"float":      {"", "fast"},
		"fixed2":     {"1.5", "1.500", "NaN1"},
		"bool":       {"", "yes"},
		"tps":        {"", "1.0 2.0", "0.00 0.00 0.00", "1.0 2.0 3.0 4.0", " 1.0 2.0", "1.0  2.0", "x y z"},
		"bytes":      {"12", "1.5 KB", "1.25 KiB"},
		"capacity":   {"Total: 1 B, Free: 1 B.", "Total : 1 B, Free : 1 B"},
		"distribute": {"", "[<=0ms]:0", "[<=0ms]:x [0~10ms]:0 [10~50ms]:0 [50~100ms]:0 [100~200ms]:0 [200~500ms]:0 [500ms~1s]:0 [1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 "},
		"runtime":    {"12s"},
		"pair":       {"1", "1,x", "1,2,3"},
	}
	for kind, vs := range bad {
		for _, v := range vs {
			if parseLikeTools(kind, v) == nil {
				t.Errorf("%s %q accepted", kind, v)
			}
		}
	}
	good := map[string][]string{
		"tps":        {"  ", "12.0  ", "12.0 11.5 ", "0.0 0.0 0.0", "1.0E-4 1.2E7 NaN"},
		"distribute": {"null", "[<=0ms]:5 [0~10ms]:0 [10~50ms]:0 [50~100ms]:0 [100~200ms]:0 [200~500ms]:0 [500ms~1s]:0 [1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 "},
		"capacity":   {"Total : 10.0 GiB, Free : 512 B."},
	}
	for kind, vs := range good {
		for _, v := range vs {
			if err := parseLikeTools(kind, v); err != nil {
				t.Errorf("%s %q refused: %v", kind, v, err)
			}
		}
	}
}

// System topics stay out of the day totals; the timing wheel's rates are
// those of the last ten one-second samples.
func TestBrokerStatsCounts(t *testing.T) {
	s := newBrokerStats(time.Now())
	ok := store.PutResult{Status: store.PutOK, MsgNum: 3}
	s.countPut("T", ok)
	s.countPut(topicSchedule, ok)
	s.countPut("rmq_sys_wheel_timer", ok)
	s.countPut(topicTransHalf, ok)
	s.countPut("T", store.PutResult{Status: store.ServiceNotAvailable})
	s.countGet("T", 4, 100)
	s.countGet(topicTransOpHalf, 9, 100)
	if _, put, _, get, _, _ := s.today(); put != 3 || get != 4 {
		t.Fatalf("put %d get %d, want 3 and 4", put, get)
	}
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.Local)
	for i := 0; i <= timerTPSWindow; i++ {
		if enq, deq := s.timerTPS(); i < timerTPSWindow && (enq != 0 || deq != 0) {
			t.Fatalf("after %d samples: %v %v, want 0 until the window is full", i, enq, deq)
		}
		s.sample(t0.Add(time.Duration(i)*time.Second), int64(5*i), int64(2*i))
	}
	enq, deq := s.timerTPS()
	if got := stats.JavaFloat(enq) + " " + stats.JavaFloat(deq); got != "5.0 2.0" {
		t.Fatalf("timer TPS %s, want 5.0 2.0", got)
	}
}
