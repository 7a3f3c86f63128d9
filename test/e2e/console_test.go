package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// chromium is Debian's browser binary the console test drives headless.
const chromium = "/usr/bin/chromium"

// chromiumArgs are the flags of a headless run with no network of its own.
func chromiumArgs(profile string) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile}
}

func runChromium(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, tail(stderr.String()))
	}
	return string(out)
}

// The console, loaded in a real headless browser, shows a group's lag:
// the official Go client produces 10 messages and consumes them, then
// produces 7 more with no consumer running; the group page's lag table
// shows produced 17, committed 10, lag 7. A screenshot of the page is kept
// as a test artifact (go test -artifacts keeps it under -outputdir).
func TestConsoleShowsConsumerLagInBrowser(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("console browser test skipped: %s not found (apt-get install chromium)", chromium)
	}
	httpPort := freePort(t, false)
	s := startSpool(t, "metricsExporterType=PROM", "metricsPromExporterHost=127.0.0.1",
		fmt.Sprintf("metricsPromExporterPort=%d", httpPort))
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	const topic, group = "E2EConsoleLag", "cg-console-lag"
	const consumed, unconsumed = 10, 7
	s.createTopic(t, s.newAdmin(t), topic, 1)
	p := s.newProducer(t, "pg-console-lag")
	ctx := context.Background()
	send := func(prefix string, n int) {
		for _, b := range bodies(prefix, n) {
			if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(b))); err != nil {
				t.Fatalf("send: %v", err)
			}
		}
	}
	send("first", consumed)

	col := newCollector()
	c := s.newPushConsumer(t, group)
	if err := c.Subscribe(topic, consumer.MessageSelector{}, col.handler); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the first messages consumed", func() bool { return col.distinct() == consumed })
	// The client commits offsets periodically and on shutdown.
	if err := c.Shutdown(); err != nil {
		t.Fatalf("consumer shutdown: %v", err)
	}
	committed, _ := s.offsets(t, group, topic, 1)
	waitFor(t, 20*time.Second, "the committed offset", func() bool {
		committed, _ = s.offsets(t, group, topic, 1)
		return committed[0] == consumed
	})
	send("second", unconsumed)
	_, maxOff := s.offsets(t, group, topic, 1)
	waitFor(t, 20*time.Second, "the max offset", func() bool {
		_, maxOff = s.offsets(t, group, topic, 1)
		return maxOff[0] == consumed+unconsumed
	})

	// The server answers the page (a clear failure before the browser's).
	resp, err := http.Get(base + "/group?name=" + group)
	if err != nil {
		t.Fatalf("console: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("console group page: HTTP %d", resp.StatusCode)
	}

	profile := t.TempDir()
	url := base + "/group?name=" + group
	dom := runChromium(t, append(chromiumArgs(profile), "--dump-dom", url)...)
	row := regexp.MustCompile(`<td>` + topic + `</td>\s*<td>0</td>\s*<td>(\d+)</td>\s*<td>(-?\d+)</td>\s*<td class="lag">(\d+)</td>`)
	m := row.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the browser's DOM of %s has no lag row for %s:\n%s", url, topic, dom)
	}
	if m[1] != fmt.Sprint(consumed+unconsumed) || m[2] != fmt.Sprint(consumed) || m[3] != fmt.Sprint(unconsumed) {
		t.Errorf("lag row: produced %s committed %s lag %s, want %d %d %d", m[1], m[2], m[3], consumed+unconsumed, consumed, unconsumed)
	}
	if !strings.Contains(dom, fmt.Sprintf(`id="lag-total">%d<`, unconsumed)) {
		t.Errorf("the browser's DOM shows no total lag of %d", unconsumed)
	}

	// The front page's chart script polls the console's JSON endpoint and
	// writes the current rates (virtual time lets it run a few polls).
	front := runChromium(t, append(chromiumArgs(t.TempDir()), "--virtual-time-budget=5000", "--dump-dom", base+"/")...)
	if !regexp.MustCompile(`<span id="now">now: [0-9.]+ in/s, [0-9.]+ out/s</span>`).MatchString(front) {
		t.Errorf("the front page's throughput chart did not update:\n%s", front)
	}

	// Kept under -outputdir with go test -artifacts, else removed with the
	// test's temporary files.
	dir := t.ArtifactDir()
	shot := filepath.Join(dir, "console-group-lag.png")
	runChromium(t, append(chromiumArgs(t.TempDir()), "--window-size=1200,700", "--screenshot="+shot, url)...)
	if st, err := os.Stat(shot); err != nil || st.Size() == 0 {
		t.Fatalf("no screenshot at %s: %v", shot, err)
	}
	t.Logf("screenshot of the group page: %s", shot)
}
