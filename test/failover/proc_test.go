package failover

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is one spool child process (controller, name server or broker)
// that can be started again on the same command line and store.
type proc struct {
	name string
	args []string
	addr string // the address it serves (remoting)
	// env is added to the environment of the next start only (e.g.
	// SPOOL_CRASH_AT); start clears it.
	env []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	out    *lockedBuffer
	done   chan error
	paused bool
	logs   []string // output of earlier runs
}

// errExited: the process exited before printing ready.
var errExited = errors.New("exited at start")

// start runs the process and waits for its "ready" line.
func (p *proc) start() error {
	cmd := exec.Command(spoolBin, p.args...)
	p.mu.Lock()
	if len(p.env) > 0 {
		cmd.Env = append(os.Environ(), p.env...)
		p.env = nil
	}
	p.mu.Unlock()
	out := &lockedBuffer{}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.TrimSpace(sc.Text()) == "ready" {
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
		<-done
		return fmt.Errorf("%s did not print ready within 60s; output:\n%s", p.name, tail(out.String()))
	}
	select {
	case err := <-done:
		p.mu.Lock()
		p.logs = append(p.logs, out.String())
		p.mu.Unlock()
		return fmt.Errorf("%s %w (%v); output:\n%s", p.name, errExited, err, tail(out.String()))
	default:
	}
	p.mu.Lock()
	p.cmd, p.out, p.done, p.paused = cmd, out, done, false
	p.mu.Unlock()
	return nil
}

func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

func (p *proc) take() (*exec.Cmd, chan error, *lockedBuffer, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cmd, done, out, paused := p.cmd, p.done, p.out, p.paused
	p.cmd, p.paused = nil, false
	if out != nil {
		p.logs = append(p.logs, out.String())
	}
	return cmd, done, out, paused
}

// startIfStopped starts the process unless it runs (a heal that a fault
// of a pair already did).
func (p *proc) startIfStopped() error {
	if p.running() {
		return nil
	}
	return p.start()
}

// awaitExit waits up to limit for the process to end by itself and
// reports whether it did; it is then taken as stopped.
func (p *proc) awaitExit(limit time.Duration) bool {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return true
	}
	select {
	case err := <-done:
		done <- err
		p.kill()
		return true
	case <-time.After(limit):
		return false
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *proc) kill() {
	cmd, done, _, _ := p.take()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// pause stops the process with SIGSTOP; resume continues it.
func (p *proc) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !p.paused {
		_ = p.cmd.Process.Signal(syscall.SIGSTOP)
		p.paused = true
	}
}

func (p *proc) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.paused {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		p.paused = false
	}
}

func (p *proc) isPaused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// terminate stops the process with SIGTERM (SIGKILL after 15 s).
func (p *proc) terminate() error {
	cmd, done, out, paused := p.take()
	if cmd == nil {
		return nil
	}
	if paused {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s exited with %v after SIGTERM; output:\n%s", p.name, err, tail(out.String()))
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s did not exit within 15s of SIGTERM; output:\n%s", p.name, tail(out.String()))
	}
	if strings.Contains(out.String(), "WARNING: DATA RACE") {
		return fmt.Errorf("%s reported a data race:\n%s", p.name, tail(out.String()))
	}
	return nil
}

// output is everything the process wrote to stderr, over all its runs.
func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := strings.Join(p.logs, "\n--- restarted ---\n")
	if p.cmd != nil && p.out != nil {
		s += "\n--- running ---\n" + p.out.String()
	}
	return s
}

// keepLogs writes the output of every process of the cluster to
// prefix-<name>.log.
func (c *cluster) keepLogs(prefix string) {
	for _, p := range c.procs() {
		name := prefix + "-" + strings.ReplaceAll(p.name, " ", "_") + ".log"
		if err := os.WriteFile(name, []byte(p.output()), 0o644); err != nil {
			c.t.Logf("keeping the output of %s: %v", p.name, err)
		}
	}
}

func tail(s string) string {
	const n = 6000
	if len(s) > n {
		return "...\n" + s[len(s)-n:]
	}
	return s
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var portMu sync.Mutex
var usedPorts = map[int]bool{}

// freePort finds a loopback port that is free now and not handed out
// before in this run.
func freePort(t testing.TB) int {
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
		if usedPorts[p] {
			continue
		}
		usedPorts[p] = true
		return p
	}
	t.Fatal("no free port found")
	return 0
}

// brokerPort finds a free loopback port whose next port is free too:
// the broker's HA listener takes listenPort+1 (RocketMQ's haListenPort
// default, which controller mode's replicas assume of their master).
func brokerPort(t testing.TB) int {
	t.Helper()
	for i := 0; i < 200; i++ {
		p := freePort(t)
		if p >= 65535 {
			continue
		}
		portMu.Lock()
		taken := usedPorts[p+1]
		portMu.Unlock()
		if taken {
			continue
		}
		l, err := net.Listen("tcp", loopback(p+1))
		if err != nil {
			continue
		}
		l.Close()
		portMu.Lock()
		usedPorts[p+1] = true
		portMu.Unlock()
		return p
	}
	t.Fatal("no free port pair found")
	return 0
}

func loopback(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
