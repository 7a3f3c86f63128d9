package transport

import (
	"runtime"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
)

// TestUnitSeenHeld checks the watchdog's measure of how long a loop's
// unit of work (a frame's dispatch or a pass's end) has been under way:
// from the first look that saw it, so that a long pass of many short
// frames never counts as one held frame, and a new run or unit starts
// again from zero.
func TestUnitSeenHeld(t *testing.T) {
	// look is one look of the watchdog: the run and unit it saw, when,
	// and the hold it should measure.
	type look struct {
		run  *loopRun
		unit uint64
		ms   int
		want time.Duration
	}
	r1, r2 := &loopRun{}, &loopRun{}
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, c := range []struct {
		name  string
		looks []look
	}{
		{"one frame held", []look{{r1, 1, 0, 0}, {r1, 1, 5, 5 * time.Millisecond}, {r1, 1, 25, 25 * time.Millisecond}}},
		{"a long pass of short frames", []look{{r1, 1, 0, 0}, {r1, 3, 5, 0}, {r1, 5, 10, 0}, {r1, 7, 15, 0}, {r1, 9, 20, 0}, {r1, 11, 25, 0}}},
		{"between units", []look{{r1, 1, 0, 0}, {r1, 2, 5, 0}, {r1, 2, 30, 0}, {r1, 3, 35, 0}, {r1, 3, 40, 5 * time.Millisecond}}},
		{"the same unit number of another run", []look{{r1, 5, 0, 0}, {r1, 5, 10, 10 * time.Millisecond}, {r2, 5, 15, 0}, {r2, 5, 40, 25 * time.Millisecond}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s unitSeen
			for i, l := range c.looks {
				if got := s.held(l.run, l.unit, at(l.ms)); got != l.want {
					t.Fatalf("look %d (unit %d at %d ms): held %v, want %v", i, l.unit, l.ms, got, l.want)
				}
			}
		})
	}
}

// TestGoroutineState reads a goroutine's state out of dumps as
// runtime.Stack writes them, and says which states wait for a core.
func TestGoroutineState(t *testing.T) {
	const dump = `goroutine 1 [running]:
main.main()
	/src/main.go:10 +0x1d

goroutine 70 [chan receive, 3 minutes]:
main.worker()
created by main.main in goroutine 7
	/src/main.go:12 +0x25

goroutine 7 [runnable]:
main.loop()

goroutine 8 gp=0xc000102a80 m=nil [sync.Mutex.Lock, locked to thread]:
main.held()

goroutine 9 [preempted]:

goroutine 10 [syscall]:

goroutine 11 [broken
`
	for _, c := range []struct {
		id       uint64
		state    string
		found    bool
		waitCore bool
	}{
		{1, "running", true, false},
		{70, "chan receive", true, false},
		{7, "runnable", true, true}, // not goroutine 70, not "in goroutine 7"
		{8, "sync.Mutex.Lock", true, false},
		{9, "preempted", true, true},
		{10, "syscall", true, false},
		{11, "", false, false}, // a header cut off
		{12, "", false, false}, // not in the dump
		{0, "", false, false},  // a run that could not read its number
	} {
		state, found := goroutineState([]byte(dump), c.id)
		if state != c.state || found != c.found {
			t.Errorf("goroutine %d: state %q found %v, want %q %v", c.id, state, found, c.state, c.found)
		}
		if got := found && waitsForCore(state); got != c.waitCore {
			t.Errorf("goroutine %d (%q): waits for a core %v, want %v", c.id, state, got, c.waitCore)
		}
	}
}

// TestCurGoroutineID finds a goroutine by the number it read for itself
// in a dump of the real runtime, in the state it waits in.
func TestCurGoroutineID(t *testing.T) {
	ids := make(chan uint64)
	release := make(chan struct{})
	defer close(release)
	go func() {
		ids <- curGoroutineID()
		<-release
	}()
	id := <-ids
	if id == 0 || id == curGoroutineID() {
		t.Fatalf("goroutine number %d (the test's own is %d)", id, curGoroutineID())
	}
	buf := make([]byte, watchDumpBuf)
	var state string
	var found bool
	for range 100 { // until it is parked on release
		state, found = goroutineState(buf[:runtime.Stack(buf, true)], id)
		if state == "chan receive" {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("goroutine %d: state %q found %v, want chan receive", id, state, found)
}

// A handler on the loop whose goroutine is kept from running, not held by
// anything, is not displaced however long its unit lasts: with one
// processor, the watchdog only ever looks while the handler's goroutine
// waits for it (runnable).
func TestLoopWaitingForACoreIsNotDisplaced(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	srv, addr := startServer(t, ServerConfig{EventLoops: 1}, func(s *Server) {
		ex := s.NewExecutor(ExecutorConfig{Workers: 1, QueueCapacity: 10})
		s.Register(codeEcho, func(c *Conn, req *remoting.Command) *remoting.Command {
			for end := time.Now().Add(6 * loopStallLimit); time.Now().Before(end); {
				runtime.Gosched()
			}
			return echo(c, req)
		}, ex)
		s.RunsOnLoop(codeEcho)
	})
	run := srv.loops[0].active.Load()
	a := dialRaw(t, addr)
	a.send(request(codeEcho, 1, remoting.SerializeJSON))
	if r := a.read(); r.Opaque != 1 || r.Code != remoting.Success {
		t.Fatalf("answer %+v", r)
	}
	if now := srv.loops[0].active.Load(); now != run {
		t.Fatalf("the run whose handler only waited for a core was displaced")
	}
}
