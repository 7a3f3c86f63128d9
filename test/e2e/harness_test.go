// Package e2e drives a real `spool standalone` process with the official
// RocketMQ Go client, exactly as an application would.
//
// The broker under test is built once per run with the race detector (set
// SPOOL_E2E_NORACE=1 to build without it, or SPOOL_E2E_BIN to use a binary
// built elsewhere). The client package itself is not run under -race: the
// official client has data races of its own, so Spool's code is checked by
// building the broker it talks to with -race instead, and any race report
// the broker prints fails the test that owns it.
package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"
)

var spoolBin string

func TestMain(m *testing.M) {
	rlog.SetLogLevel("fatal")
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "spool-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if os.Getenv("rocketmq.client.localOffsetStoreDir") == "" {
		// Read by the client at package init; CI sets it in .ci/run. Here it
		// only documents what broadcasting consumers would write under $HOME.
		fmt.Fprintln(os.Stderr, "note: rocketmq.client.localOffsetStoreDir is not set; broadcasting offsets go under $HOME/.rocketmq_offsets")
	}
	spoolBin = os.Getenv("SPOOL_E2E_BIN")
	if spoolBin == "" {
		spoolBin = filepath.Join(dir, "spool")
		args := []string{"build", "-o", spoolBin}
		if os.Getenv("SPOOL_E2E_NORACE") == "" {
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
	// Every broker started here overwrites a request body lent to a
	// handler once the handler returns, so that a path keeping one would
	// store or serve garbage the tests see.
	os.Setenv("SPOOL_POISON_LOANED_BODIES", "1")
	code := m.Run()
	if sharedSp != nil {
		if err := sharedSp.terminate(); err != nil {
			fmt.Fprintln(os.Stderr, "shared broker:", err)
			code = 1
		}
		os.RemoveAll(sharedSp.store)
	}
	return code
}

// spool is one `spool standalone` child process.
type spool struct {
	t           testing.TB
	store       string
	namesrvAddr string
	brokerAddr  string
	vipAddr     string
	sets        []string
	// wrap, when set, is a command that runs the broker (e.g. prlimit).
	wrap []string
	// args, when set, replaces the standalone command line (a separate
	// name server or broker process).
	args []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	output *bytes.Buffer
	done   chan error
}

// startSpool starts a standalone broker on fresh loopback ports with its own
// store directory; sets are extra `--set key=value` arguments.
func startSpool(t testing.TB, sets ...string) *spool {
	t.Helper()
	ns, br := freePort(t, false), freePort(t, true)
	s := &spool{
		t:           t,
		store:       t.TempDir(),
		namesrvAddr: fmt.Sprintf("127.0.0.1:%d", ns),
		brokerAddr:  fmt.Sprintf("127.0.0.1:%d", br),
		vipAddr:     fmt.Sprintf("127.0.0.1:%d", br-2),
		sets:        sets,
	}
	s.start()
	t.Cleanup(func() {
		if s.running() {
			s.stop()
		}
	})
	return s
}

func (s *spool) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

func (s *spool) start() {
	s.t.Helper()
	args := []string{"standalone", "--store", s.store, "--namesrv-listen", s.namesrvAddr, "--listen", s.brokerAddr}
	if s.args != nil {
		args = append([]string(nil), s.args...)
	}
	for _, kv := range s.sets {
		args = append(args, "--set", kv)
	}
	cmd := exec.Command(spoolBin, args...)
	if len(s.wrap) > 0 {
		cmd = exec.Command(s.wrap[0], append(append(s.wrap[1:len(s.wrap):len(s.wrap)], spoolBin), args...)...)
	}
	out := &bytes.Buffer{}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = &lockedWriter{w: out}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start spool: %v", err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			if !signalled && strings.TrimSpace(line) == "ready" {
				signalled = true
				close(ready)
			}
		}
		if !signalled {
			close(ready)
		}
	}()
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		pw.Close()
		done <- err
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		s.t.Fatalf("spool did not print ready within 60s; output:\n%s", tail(out.String()))
	}
	select {
	case err := <-done:
		s.t.Fatalf("spool exited at start: %v; output:\n%s", err, tail(out.String()))
	default:
	}
	s.mu.Lock()
	s.cmd, s.output, s.done = cmd, out, done
	s.mu.Unlock()
}

// stop sends SIGTERM and requires a clean exit (status 0) within 15 s, and
// no race report in the broker's output.
func (s *spool) stop() {
	s.t.Helper()
	if err := s.terminate(); err != nil {
		s.t.Error(err)
	}
}

// restart stops the broker cleanly and starts it again on the same ports
// and store.
func (s *spool) restart() {
	s.t.Helper()
	s.stop()
	s.start()
}

func (s *spool) terminate() error {
	s.mu.Lock()
	cmd, done, out := s.cmd, s.done, s.output
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("spool exited with %v after SIGTERM; output:\n%s", err, tail(out.String()))
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		return fmt.Errorf("spool did not exit within 15s of SIGTERM; output:\n%s", tail(out.String()))
	}
	if strings.Contains(out.String(), "WARNING: DATA RACE") {
		return fmt.Errorf("the broker reported a data race:\n%s", tail(out.String()))
	}
	return nil
}

// kill sends SIGKILL.
func (s *spool) kill() {
	s.t.Helper()
	s.mu.Lock()
	cmd, done, out := s.cmd, s.done, s.output
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
	checkRaces(s.t, out.String())
}

func checkRaces(t testing.TB, out string) {
	if strings.Contains(out, "WARNING: DATA RACE") {
		t.Errorf("the broker reported a data race:\n%s", tail(out))
	}
}

func tail(s string) string {
	const n = 8000
	if len(s) > n {
		return "...\n" + s[len(s)-n:]
	}
	return s
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

var portMu sync.Mutex
var usedPorts = map[int]bool{}

// freePort finds a loopback port that is free now (and, with vip, whose
// port-2 and port+1 are free too, for the broker's VIP channel and its
// HA listener).
func freePort(t testing.TB, vip bool) int {
	t.Helper()
	portMu.Lock()
	defer portMu.Unlock()
	for i := 0; i < 200; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if usedPorts[p] || (vip && (p < 1026 || p > 65534 || usedPorts[p-2] || usedPorts[p+1])) {
			continue
		}
		if vip {
			free := true
			for _, q := range []int{p - 2, p + 1} {
				l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(q))
				if err != nil {
					free = false
					break
				}
				l2.Close()
			}
			if !free {
				continue
			}
			usedPorts[p-2], usedPorts[p+1] = true, true
		}
		usedPorts[p] = true
		return p
	}
	t.Fatal("no free port pair found")
	return 0
}
